package client

import (
	"reflect"
	"testing"
)

// decodeConsumeSized must answer exactly what decodeConsume does for any body: only
// its allocation differs.
func TestDecodeConsumeSizedAgreesWithDecodeConsume(t *testing.T) {
	msg := `{"topic":"t","partition":1,"offset":2,"payload":{"a": 1},"timestamp":3,"receipt_handle":"1:2:x"}`
	for _, body := range []string{
		`{"messages":[` + msg + `,` + msg + `]}`,
		`{"messages":[` + msg + `]}`,
		msg,
		`{"messages":[]}`,
		`{"messages":null}`,
		`{}`,
		`{"messages":[],"payload":1,"topic":"t"}`,
		`{"messages":[` + msg + `],"messages":null}`,
		`{"messages":null,"messages":[` + msg + `]}`,
		`{"messages":[{"topic":"t","key":"\x01","payload":"a\x02","receipt_handle":"h"}]}`,
		`{"messages":[` + msg + `]`,
		`[1,2]`,
		``,
	} {
		wantMsgs, wantBatch, wantErr := decodeConsume([]byte(body))
		for _, expect := range []int{0, 1, 2, 100} {
			msgs, batch, err := decodeConsumeSized([]byte(body), expect)
			if (err == nil) != (wantErr == nil) || batch != wantBatch || !reflect.DeepEqual(msgs, wantMsgs) {
				t.Errorf("%s (expect %d):\n got %v %v %v\nwant %v %v %v", body, expect, msgs, batch, err, wantMsgs, wantBatch, wantErr)
			}
		}
	}
}
