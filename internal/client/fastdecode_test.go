package client

import (
	"bytes"
	"reflect"
	"testing"
)

// fastBodies are answers in the layout a node writes, and near misses of it that the
// fast decoder must leave to the general one.
var fastBodies = []string{
	`{"messages":[{"topic":"t","partition":0,"offset":1,"payload":"hi","timestamp":1,"receipt_handle":"0:1:9"},{"topic":"t","partition":1,"offset":2,"key":"/w==","key_encoding":"base64","payload":"AAEC","payload_encoding":"base64","timestamp":2,"receipt_handle":"1:2:9"}]}` + "\n",
	`{"messages":[{"topic":"a","partition":0,"offset":1,"payload":{"x": [1, 2.5e3, -0, true, null, "\u00e9\n"]},"timestamp":1,"receipt_handle":"h1"},{"topic":"b","key":"k é","payload":-12.75,"receipt_handle":"h2"},{"topic":"a","payload":[],"receipt_handle":"h3"}]}`,
	`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":{"order_id":"ord_1"},"timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}`,
	`{"topic":"t","partition":4,"offset":0,"payload":"a\"b\\c","timestamp":1}` + "\r\n",
	`{"messages":[{"payload":1}]}`,
	`{"messages":[{}]}`,
	// Near misses: each must go the general way and come out the same.
	`{"messages":[]}`, `{"messages":null}`, `{}`, `null`, `[]`, `"x"`, ``, ` `,
	`{"messages":[{"topic":"t","payload":1,"receipt_handle":"h"}],"x":1}`,
	`{"messages":[{"topic":"t","payload":1}] }`,
	` {"messages":[{"topic":"t","payload":1}]}`,
	`{"messages":[{"topic":"t", "payload":1}]}`,
	`{"messages":[{"topic":"t","payload": 1}]}`,
	`{"messages":[{"topic":"t","payload":1 }]}`,
	`{"messages":[{"topic":"t","payload":null}]}`,
	`{"messages":[{"Topic":"t","payload":1}]}`,
	`{"messages":[{"topic":"t","topic":"u","payload":1}]}`,
	`{"messages":[{"topic":"t\u00e9","payload":1}]}`,
	`{"messages":[{"topic":"t","key":"\u0026","payload":1}]}`,
	"{\"messages\":[{\"topic\":\"t\\xff\",\"payload\":1}]}",
	"{\"messages\":[{\"topic\":\"t\xff\",\"payload\":1}]}",
	"{\"messages\":[{\"topic\":\"t\",\"payload\":\"\xff\"}]}",
	`{"messages":[{"topic":"t","partition":1.0,"payload":1}]}`,
	`{"messages":[{"topic":"t","partition":1e2,"payload":1}]}`,
	`{"messages":[{"topic":"t","partition":01,"payload":1}]}`,
	`{"messages":[{"topic":"t","offset":99999999999999999999,"payload":1}]}`,
	`{"messages":[{"topic":"t","offset":-,"payload":1}]}`,
	`{"messages":[{"topic":"t","payload":01}]}`,
	`{"messages":[{"topic":"t","payload":{"a":1,}}]}`,
	`{"messages":[{"topic":"t","payload":[1,]}]}`,
	`{"messages":[{"topic":"t","payload":"a` + "\x01" + `"}]}`,
	`{"messages":[{"topic":"t","payload":"\x41"}]}`,
	`{"messages":[{"topic":"t","payload":"\u12"}]}`,
	`{"messages":[{"topic":"t","payload":tru}]}`,
	`{"messages":[{"topic":"t","payload":1}`,
	`{"messages":[{"topic":"t","payload":1}]}x`,
	`{"messages":[{"topic":"t","payload":1},]}`,
	`{"messages":[{"topic":"t","payload":1,"headers":{}}]}`,
	`{"messages":[{"topic":5,"payload":1}]}`,
	`{"topic":"t"}`, `{"offset":3}`, `{"messages":[1]}`,
	`{"topic":"t","payload":1,"messages":[]}`,
}

func TestFastDecodeAgreesWithDecodeConsume(t *testing.T) {
	fast := 0
	for _, body := range fastBodies {
		if _, _, ok := fastDecodeConsume([]byte(body), 100); ok {
			fast++
		}
		checkFastDecode(t, []byte(body))
	}
	if fast < 6 {
		t.Errorf("only %d bodies took the fast way, want the first 6 at least", fast)
	}
}

// checkFastDecode fails when the fast decoder accepts body and answers anything but
// what decodeConsume does.
func checkFastDecode(t *testing.T, body []byte) {
	t.Helper()
	for _, expect := range []int{0, 1, 100} {
		msgs, batch, ok := fastDecodeConsume(body, expect)
		if !ok {
			continue
		}
		want, wantBatch, err := decodeConsume(body)
		if err != nil {
			t.Fatalf("fast decode accepted what decodeConsume refuses (%v):\n%q", err, body)
		}
		if batch != wantBatch || !reflect.DeepEqual(msgs, want) {
			t.Fatalf("fast decode of %q:\n got %v %#v\nwant %v %#v", body, batch, msgs, wantBatch, want)
		}
	}
}

// FuzzFastDecode: whatever the fast decoder accepts, decodeConsume reads the same.
func FuzzFastDecode(f *testing.F) {
	for _, b := range fastBodies {
		f.Add([]byte(b))
	}
	f.Add(batchBody(3))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastDecode(t, body)
	})
}

// The fast decoder takes what a node writes: every answer of the realistic batch.
func TestFastDecodeTakesANodesBatch(t *testing.T) {
	body := batchBody(100)
	msgs, batch, ok := fastDecodeConsume(body, 100)
	if !ok || !batch || len(msgs) != 100 {
		t.Fatalf("ok %v batch %v, %d messages", ok, batch, len(msgs))
	}
	checkFastDecode(t, body)
	if !bytes.Contains(body, msgs[99].Payload) {
		t.Error("payload not from the body")
	}
}

func BenchmarkFastDecodeBatch100(b *testing.B) {
	body := batchBody(100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		msgs, _, ok := fastDecodeConsume(body, 100)
		if !ok || len(msgs) != 100 {
			b.Fatal(ok, len(msgs))
		}
	}
}
