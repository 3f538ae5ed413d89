package devbroker

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func (h *harness) produceBatch(topic, query, body string) resp {
	h.t.Helper()
	path := "/v1/topics/" + topic + "/produce/batch"
	if query != "" {
		path += "?" + query
	}
	return h.do("POST", path, []byte(body), "Content-Type", "application/json")
}

// stored is what a partition holds, in offset order: key (or "-" for none) and payload
// bytes exactly as stored.
func (h *harness) stored(topic string, part int) []string {
	h.t.Helper()
	t := h.b.topic(topic)
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, m := range t.parts[part].msgs {
		k := "-"
		if m.hasKey {
			k = m.key
		}
		out = append(out, k+" "+string(m.payload))
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// 202 {"accepted":N}; every payload stored as API.md says: a JSON value exactly as
// written (a JSON string with its quotes, inner whitespace kept), base64 decoded; keys
// plain or base64; partition pins a message and wins over its key.
func TestProduceBatchAccepted(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	body := `{"messages":[
		{"payload":"aGk=","payload_encoding":"base64","partition":0},
		{"payload":{"a":  [1, 2]},"key":"k1","partition":0},
		{"payload":"hi","partition":0},
		{"payload":"` + b64("  {\"a\":1}\n") + `","payload_encoding":"base64","key":"//4=","key_encoding":"base64","partition":0},
		{"payload":42,"key":"","partition":0},
		{"payload":null,"partition":0},
		{"payload":"aGk\u003d","payload_encoding":"base64","partition":0}
	]}`
	wantBody(t, h.produceBatch("orders", "", body), 202, `{"accepted":7}`+"\n")
	want := []string{"- hi", `k1 {"a":  [1, 2]}`, `- "hi"`, "\xff\xfe   {\"a\":1}\n", "- 42", "- null", "- hi"}
	if got := h.stored("orders", 0); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("stored %q\nwant   %q", got, want)
	}
	if n := h.b.Requests(OpProduce); n != 1 {
		t.Fatalf("Requests(produce) = %d, want 1 for a batch", n)
	}
	// Replayed, the whitespace-wrapped document comes back whole, and the key as base64.
	r := h.consume("orders", "partition=0&offset=3")
	if m := one(t, r); *m.Key != "//4=" || m.KeyEncoding != "base64" || !bytes.Contains(r.body, []byte(`"payload":  {"a":1}`+"\n,")) {
		t.Fatalf("replayed %s", r.body)
	}
}

// Without partition a keyed message goes where its key hashes, a keyless one round robin.
func TestProduceBatchRouting(t *testing.T) {
	h := startTopic(t, TopicSpec{Partitions: 5})
	var msgs []string
	for range 10 {
		msgs = append(msgs, `{"payload":1,"key":"customer-7"}`)
	}
	for range 5 {
		msgs = append(msgs, `{"payload":2}`)
	}
	wantBody(t, h.produceBatch("orders", "", `{"messages":[`+strings.Join(msgs, ",")+`]}`), 202, `{"accepted":15}`+"\n")
	kp := int(fnv1a("customer-7") % 5)
	for p := range 5 {
		want := 1
		if p == kp {
			want += 10
		}
		if got := len(h.stored("orders", p)); got != want {
			t.Errorf("partition %d holds %d, want %d", p, got, want)
		}
	}
}

// The first bad message refuses the whole request with the status a single produce of it
// would get and "message <i>: "; nothing is stored.
func TestProduceBatchAllOrNothing(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	ok := `{"payload":"b2s=","payload_encoding":"base64"}`
	big := `{"payload":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 600<<10)) + `","payload_encoding":"base64"}`
	tests := []struct {
		name, msg string
		status    int
		text      string
	}{
		{"empty payload", `{"payload":"","payload_encoding":"base64"}`, 400, "message 2: message required"},
		{"no payload", `{"key":"k"}`, 400, "message 2: message required"},
		{"bad base64", `{"payload":"!!","payload_encoding":"base64"}`, 400, "message 2: payload: not valid base64"},
		{"base64 not a string", `{"payload":12,"payload_encoding":"base64"}`, 400, "message 2: payload: a base64 payload must be a JSON string"},
		{"unknown payload encoding", `{"payload":"x","payload_encoding":"hex"}`, 400, `message 2: payload_encoding "hex": want base64 or none`},
		{"bad key base64", `{"payload":1,"key":"%%","key_encoding":"base64"}`, 400, "message 2: key is not valid base64"},
		{"key encoding without key", `{"payload":1,"key_encoding":"base64"}`, 400, "message 2: key_encoding without a key"},
		{"partition out of range", `{"payload":1,"partition":3}`, 400, "message 2: partition must be an integer from 0 to 2"},
		{"negative partition", `{"payload":1,"partition":-1}`, 400, "message 2: partition must be an integer from 0 to 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.produceBatch("orders", "", `{"messages":[`+ok+","+ok+","+tt.msg+","+ok+`]}`)
			wantError(t, r, tt.status, tt.text)
		})
	}
	// Two messages of 600 KiB each are over 1 MiB together: 413 for the body.
	wantError(t, h.produceBatch("orders", "", `{"messages":[`+big+","+big+`]}`), 413, "body over 1048576 bytes")
	if n := h.stats("orders").Messages(); n != 0 {
		t.Fatalf("%d messages stored by refused batches", n)
	}
	wantBody(t, h.produceBatch("orders", "", `{"messages":[`+big+`]}`), 202, `{"accepted":1}`+"\n")
}

// The shape of the request: 1..100 messages, no unknown fields, no key or partition in
// the query, a JSON body.
func TestProduceBatchRequestShape(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	msgs := func(n int) string {
		return `{"messages":[` + strings.TrimSuffix(strings.Repeat(`{"payload":1},`, n), ",") + `]}`
	}
	wantBody(t, h.produceBatch("orders", "", msgs(100)), 202, `{"accepted":100}`+"\n")
	wantError(t, h.produceBatch("orders", "", msgs(101)), 400, "too many messages: more than 100 (max 100)")
	wantError(t, h.produceBatch("orders", "", `{"messages":[]}`), 400, "messages required")
	wantError(t, h.produceBatch("orders", "", `{}`), 400, "messages required")
	wantErrorPrefix(t, h.produceBatch("orders", "", `{"messages":[{"payload":1}],"extra":1}`), 400, "invalid JSON body: ")
	wantErrorPrefix(t, h.produceBatch("orders", "", `{"messages":[{"payload":1,"headers":{}}]}`), 400, "invalid JSON body: ")
	wantErrorPrefix(t, h.produceBatch("orders", "", `{"messages":[{"payload":1}]} {}`), 400, "invalid JSON body: ")
	wantErrorPrefix(t, h.produceBatch("orders", "", `{"messages":`), 400, "invalid JSON body: ")
	for _, q := range []string{"key=k", "partition=0", "key="} {
		wantError(t, h.produceBatch("orders", q, msgs(1)), 400, "key and partition go in each message of a batch, not in the query")
	}
	wantError(t, h.do("POST", "/v1/topics/orders/produce/batch", []byte(msgs(1)), "Content-Type", "application/octet-stream"),
		400, "a batch produce needs Content-Type: application/json")
	over := bytes.Repeat([]byte(" "), MaxProduceBatchBody+1)
	wantError(t, h.do("POST", "/v1/topics/orders/produce/batch", over, "Content-Type", "application/json"), 413, "body over 1048576 bytes")
	wantError(t, h.produceBatch("nope", "", msgs(1)), 404, `topic "nope" not found`)
	if n := h.stats("orders").Messages(); n != 100 {
		t.Fatalf("%d messages stored, want only the first batch's 100", n)
	}
}

// Grants are those of a single produce.
func TestProduceBatchAuth(t *testing.T) {
	h := startAuth(t)
	body := `{"messages":[{"payload":1}]}`
	wantError(t, h.produceBatch("orders", "", body), 401, "authentication required")
	h.user, h.pass = "app", "s3cret"
	wantBody(t, h.produceBatch("orders", "", body), 202, `{"accepted":1}`+"\n")
	wantErrorPrefix(t, h.produceBatch("orders-eu", "", body), 403, "")
}

// A fault answers for the whole batch and stores nothing.
func TestProduceBatchFault(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.b.FailNext(OpProduce, 1, 503)
	r := h.produceBatch("orders", "", `{"messages":[{"payload":1},{"payload":2}]}`)
	if r.status != 503 {
		t.Fatalf("want 503, got %v", r)
	}
	if n := h.stats("orders").Messages(); n != 0 {
		t.Fatalf("%d messages stored by a faulted batch", n)
	}
	wantBody(t, h.produceBatch("orders", "", `{"messages":[{"payload":1},{"payload":2}]}`), 202, `{"accepted":2}`+"\n")
}

// An older node has no such route: its router's plain-text 404, not the JSON
// "topic not found", and nothing stored.
func TestProduceBatchLegacy(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.b.SetLegacy(true)
	r := h.produceBatch("orders", "", `{"messages":[{"payload":1}]}`)
	if r.status != 404 || string(r.body) != "404 page not found\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("legacy batch produce: %v %v", r, r.header)
	}
	if n := h.stats("orders").Messages(); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	h.mustProduce("orders", "", "single still works")
}
