package devbroker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Point 5: a single ack is 204 with no body; a second is 410 with the seed's exact answer
// (Content-Length 67, as in the consuming guide).
func TestAckSingle(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	r := h.ack("orders", m.ReceiptHandle, "")
	wantEmpty(t, r, 204)
	if r.header.Get("Content-Type") != "" {
		t.Fatal("204 ack carries a Content-Type")
	}
	r = h.ack("orders", m.ReceiptHandle, "")
	wantBody(t, r, 410, `{"error":"receipt handle no longer matches an active reservation"}`+"\n")
	if r.header.Get("Content-Length") != "67" {
		t.Fatalf("Content-Length %s", r.header.Get("Content-Length"))
	}
	st := h.stats("orders")
	if st.Acked() != 1 || st.InFlight() != 0 || st.Available() != 0 {
		t.Fatalf("after ack: %+v", st.Partitions)
	}
	// Settled for good: never delivered again.
	wantEmpty(t, h.consume("orders", ""), 204)
	// An ack without a body type is still an ack (the curl examples send it; it is not required).
	h.mustProduce("orders", "", "m2")
	m = one(t, h.consume("orders", ""))
	wantEmpty(t, h.do("POST", "/v1/topics/orders/ack?receipt_handle="+m.ReceiptHandle, nil), 204)
}

// Point 5: every accepted spelling of extend, and the refused ones.
func TestAckExtendValues(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, c := range []struct {
		extend string
		want   string // what happened to the message
	}{
		{"", "acked"}, {"false", "acked"}, {"extend=", "acked"},
		{"true", "held"}, {"1", "held"},
		{"0", "given back"},
	} {
		h.mustProduce("orders", "partition=0", "m")
		m := one(t, h.consume("orders", "partition=0"))
		var r resp
		if c.extend == "extend=" {
			r = h.do("POST", "/v1/topics/orders/ack?extend=&receipt_handle="+m.ReceiptHandle, nil)
		} else {
			r = h.ack("orders", m.ReceiptHandle, c.extend)
		}
		wantEmpty(t, r, 204)
		st := h.stats("orders").Partitions[0]
		switch c.want {
		case "acked":
			if st.InFlight != 0 || st.Available != 0 {
				t.Fatalf("extend=%q: %+v", c.extend, st)
			}
		case "held":
			if st.InFlight != 1 {
				t.Fatalf("extend=%q: %+v", c.extend, st)
			}
			wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204) // same handle still good
		case "given back":
			if st.InFlight != 0 || st.Available != 1 {
				t.Fatalf("extend=%q: %+v", c.extend, st)
			}
			wantError(t, h.ack("orders", m.ReceiptHandle, ""), 410, textGone)
			again := one(t, h.consume("orders", "partition=0"))
			if again.Offset != m.Offset || again.ReceiptHandle == m.ReceiptHandle {
				t.Fatalf("nacked message came back as %+v", again)
			}
			wantEmpty(t, h.ack("orders", again.ReceiptHandle, ""), 204)
		}
	}
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	for _, v := range []string{"yes", "2", "TRUE", "True", "t", "-1", "00"} {
		wantError(t, h.ack("orders", m.ReceiptHandle, v), 400, fmt.Sprintf("extend %q must be true, 1, 0 or false", v))
	}
	if h.stats("orders").InFlight() != 1 {
		t.Fatal("a refused extend settled the message")
	}
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)
}

// Point 5: malformed handles are 400; well-formed ones that match nothing are 410.
func TestAckMalformed(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for _, hd := range []string{"", "abc", "1:2", "1:2:3:4", "-1:0:1", "a:b:c", "1::3", " 1:2:3", "1:2:18446744073709551616", "+1:2:3"} {
		wantError(t, h.ack("orders", hd, ""), 400, "receipt handle is malformed")
	}
	for _, hd := range []string{"99:0:1", "0:0:1", "0:123456:42"} {
		wantError(t, h.ack("orders", hd, ""), 410, textGone)
		wantError(t, h.ack("orders", hd, "0"), 410, textGone)
	}
	wantError(t, h.ack("nope", "0:0:1", ""), 404, `topic "nope" not found`)
}

// Point 5: a batch ack answers one result per handle, in request order.
func TestAckBatch(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for i := 0; i < 4; i++ {
		h.mustProduce("orders", "", fmt.Sprint(i))
	}
	ms := many(t, h.batch("orders", "max=4"))
	wantEmpty(t, h.ack("orders", ms[1].ReceiptHandle, ""), 204)
	r := h.batchAck("orders", "", ms[0].ReceiptHandle, ms[1].ReceiptHandle, "garbage", ms[2].ReceiptHandle, ms[2].ReceiptHandle)
	wantBody(t, r, 200, `{"results":[{"status":204},`+
		`{"status":410,"error":"receipt handle no longer matches an active reservation"},`+
		`{"status":400,"error":"receipt handle is malformed"},`+
		`{"status":204},`+
		`{"status":410,"error":"receipt handle no longer matches an active reservation"}]}`+"\n")
	// The seed's example answer is 124 bytes.
	r = h.batchAck("orders", "", ms[3].ReceiptHandle, ms[3].ReceiptHandle)
	wantBody(t, r, 200, `{"results":[{"status":204},{"status":410,"error":"receipt handle no longer matches an active reservation"}]}`+"\n")
	if st := h.stats("orders"); st.Acked() != 4 || st.InFlight() != 0 {
		t.Fatalf("after batch ack: %+v", st.Partitions)
	}
	if h.b.Requests(OpAck) != 3 {
		t.Fatalf("Requests(ack) = %d, want 3", h.b.Requests(OpAck))
	}
}

// Point 5: extend applies to every handle of a batch.
func TestAckBatchExtendAndNack(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for i := 0; i < 3; i++ {
		h.mustProduce("orders", "", fmt.Sprint(i))
	}
	ms := many(t, h.batch("orders", "max=3"))
	wantBody(t, h.batchAck("orders", "true", handles(ms)...), 200, `{"results":[{"status":204},{"status":204},{"status":204}]}`+"\n")
	if h.stats("orders").InFlight() != 3 {
		t.Fatal("batch extend released messages")
	}
	wantBody(t, h.batchAck("orders", "0", handles(ms)...), 200, `{"results":[{"status":204},{"status":204},{"status":204}]}`+"\n")
	if st := h.stats("orders"); st.InFlight() != 0 || st.Available() != 3 {
		t.Fatalf("after batch nack: %+v", st.Partitions)
	}
	if h.b.Requests(OpExtend) != 1 || h.b.Requests(OpNack) != 1 {
		t.Fatalf("requests extend=%d nack=%d", h.b.Requests(OpExtend), h.b.Requests(OpNack))
	}
	wantError(t, h.batchAck("orders", "maybe", "0:0:1"), 400, `extend "maybe" must be true, 1, 0 or false`)
}

// Point 5: 150 handles go as 100 + 50: two requests, and the counter says so.
func TestAckBatchHundred(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for i := 0; i < 150; i++ {
		if _, _, err := h.b.Produce("orders", "", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	ms := many(t, h.batch("orders", "max=100"))
	ms = append(ms, many(t, h.batch("orders", "max=100"))...)
	if len(ms) != 150 {
		t.Fatalf("consumed %d", len(ms))
	}
	for _, chunk := range [][]msg{ms[:100], ms[100:]} {
		var out struct{ Results []ackResult }
		r := h.batchAck("orders", "", handles(chunk)...)
		if r.status != 200 || json.Unmarshal(r.body, &out) != nil || len(out.Results) != len(chunk) {
			t.Fatalf("batch ack: %v", r)
		}
	}
	if h.b.Requests(OpAck) != 2 || h.stats("orders").Acked() != 150 {
		t.Fatalf("Requests(ack) = %d, acked %d", h.b.Requests(OpAck), h.stats("orders").Acked())
	}
}

// Point 5: a batch malformed as a whole is 400; over 64 KiB is 413. Nothing is settled.
func TestAckBatchErrors(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	post := func(body string, hdr ...string) resp {
		return h.do("POST", "/v1/topics/orders/ack", []byte(body), hdr...)
	}
	js := []string{"Content-Type", "application/json"}
	wantErrorPrefix(t, post(`{"receipt_handles":`, js...), 400, "invalid JSON body: ")
	wantErrorPrefix(t, post(`not json`, js...), 400, "invalid JSON body: ")
	wantErrorPrefix(t, post(`{"receipt_handles":[1,2]}`, js...), 400, "invalid JSON body: ")
	wantErrorPrefix(t, post(`{"receipt_handles":["`+m.ReceiptHandle+`"]} trailing`, js...), 400, "invalid JSON body: ")
	wantErrorPrefix(t, post(``, js...), 400, "invalid JSON body: ")
	for _, body := range []string{`{}`, `{"receipt_handles":[]}`, `{"receipt_handles":null}`,
		`{"receipt_handles":[` + strings.Repeat(`"0:0:1",`, 100) + `"0:0:1"]}`} {
		wantError(t, post(body, js...), 400, "receipt_handles must hold 1 to 100 handles")
	}
	big := `{"receipt_handles":["` + m.ReceiptHandle + `"],"pad":"` + strings.Repeat("x", MaxAckBodyBytes) + `"}`
	wantError(t, post(big, js...), 413, "body over 65536 bytes")
	good := `{"receipt_handles":["` + m.ReceiptHandle + `"]}`
	wantError(t, post(good), 400, "a batch ack needs Content-Type: application/json")
	wantError(t, post(good, "Content-Type", "text/plain"), 400, "a batch ack needs Content-Type: application/json")
	if h.stats("orders").InFlight() != 1 {
		t.Fatal("a refused batch settled a handle")
	}
	// A body just under the limit is fine, and a charset parameter is accepted.
	pad := MaxAckBodyBytes - len(good) - len(`,"pad":""`)
	fits := strings.TrimSuffix(good, "}") + `,"pad":"` + strings.Repeat("x", pad) + `"}`
	if len(fits) != MaxAckBodyBytes {
		t.Fatalf("test body is %d bytes", len(fits))
	}
	r := post(fits, "Content-Type", "application/json; charset=utf-8")
	wantBody(t, r, 200, `{"results":[{"status":204}]}`+"\n")
	if !bytes.Contains(r.body, []byte("204")) {
		t.Fatal(r)
	}
}
