package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// Each payload goes in the form the node stores as the bytes given: a JSON document
// verbatim, anything else (text, binary, JSON with whitespace around it, bad UTF-8
// inside a JSON string) as base64; keys plain, base64 when not UTF-8, left out when
// empty; partition per message.
func TestAppendProduceBatch(t *testing.T) {
	tests := []struct {
		name string
		m    ProduceMessage
		want string
	}{
		{"json object verbatim", ProduceMessage{Payload: []byte(`{"a":  [1, 2]}`)}, `{"payload":{"a":  [1, 2]}}`},
		{"json number", ProduceMessage{Payload: []byte(`42`)}, `{"payload":42}`},
		{"json string keeps its quotes", ProduceMessage{Payload: []byte(`"hi"`)}, `{"payload":"hi"}`},
		{"json null", ProduceMessage{Payload: []byte(`null`)}, `{"payload":null}`},
		{"json literal", ProduceMessage{Payload: []byte(`true`)}, `{"payload":true}`},
		{"text like a literal", ProduceMessage{Payload: []byte(`trueish`)}, `{"payload":"dHJ1ZWlzaA==","payload_encoding":"base64"}`},
		{"negative number", ProduceMessage{Payload: []byte(`-5`)}, `{"payload":-5}`},
		{"text starting with a digit", ProduceMessage{Payload: []byte(`2024-01-01 up`)}, `{"payload":"MjAyNC0wMS0wMSB1cA==","payload_encoding":"base64"}`},
		{"text", ProduceMessage{Payload: []byte("hello")}, `{"payload":"aGVsbG8=","payload_encoding":"base64"}`},
		{"whitespace-wrapped json", ProduceMessage{Payload: []byte(" {\"a\":1}\n")}, `{"payload":"IHsiYSI6MX0K","payload_encoding":"base64"}`},
		{"json with bad utf-8 in a string", ProduceMessage{Payload: []byte("\"\xff\"")}, `{"payload":"Iv8i","payload_encoding":"base64"}`},
		{"binary", ProduceMessage{Payload: []byte{0x89, 'P', 0}}, `{"payload":"iVAA","payload_encoding":"base64"}`},
		{"empty", ProduceMessage{Payload: nil}, `{"payload":"","payload_encoding":"base64"}`},
		{"key", ProduceMessage{Payload: []byte(`1`), Key: strp("c\"42\n\x01")}, `{"payload":1,"key":"c\"42\n\u0001"}`},
		{"non-utf8 key", ProduceMessage{Payload: []byte(`1`), Key: strp("\xff\xfe")}, `{"payload":1,"key":"//4=","key_encoding":"base64"}`},
		{"empty key is none", ProduceMessage{Payload: []byte(`1`), Key: strp("")}, `{"payload":1}`},
		{"partition", ProduceMessage{Payload: []byte(`1`), Partition: intp(7)}, `{"payload":1,"partition":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendProduceBatch(nil, []ProduceMessage{tt.m}))
			if want := `{"messages":[` + tt.want + `]}`; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
			if n := len(got) - ProduceBatchFraming + 1; n > ProduceBatchBound(tt.m) {
				t.Errorf("encoded %d bytes, over its bound %d", n, ProduceBatchBound(tt.m))
			}
		})
	}
	two := AppendProduceBatch(nil, []ProduceMessage{{Payload: []byte("1")}, {Payload: []byte("2")}})
	if string(two) != `{"messages":[{"payload":1},{"payload":2}]}` {
		t.Errorf("two messages: %s", two)
	}
}

// What a node does with the body: decoding each element back (base64 decoded, JSON
// taken as written) gives the bytes that were given, for any bytes.
func TestAppendProduceBatchRoundTrip(t *testing.T) {
	payloads := [][]byte{[]byte(`{"x": 1}`), []byte("text\twith\ttabs"), []byte(" [1]"), {0, 1, 2, 0xff},
		[]byte(`"quoted"`), []byte("\u2028"), []byte(`1e999`), bytes.Repeat([]byte("é"), 1000)}
	var msgs []ProduceMessage
	for _, p := range payloads {
		msgs = append(msgs, ProduceMessage{Payload: p})
	}
	var body struct {
		Messages []struct {
			Payload         json.RawMessage `json:"payload"`
			PayloadEncoding string          `json:"payload_encoding"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(AppendProduceBatch(nil, msgs), &body); err != nil {
		t.Fatal(err)
	}
	for i, m := range body.Messages {
		got := []byte(m.Payload)
		if m.PayloadEncoding == "base64" {
			var s string
			json.Unmarshal(m.Payload, &s)
			got, _ = base64.StdEncoding.DecodeString(s)
		}
		if !bytes.Equal(got, payloads[i]) {
			t.Errorf("message %d: stored %q, want %q", i, got, payloads[i])
		}
	}
}

func TestProduceBatchRequest(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 202, `{"accepted":2}`)
	})
	c, _ := newClient(t, n.URL)
	msgs := []ProduceMessage{{Payload: []byte("a"), Key: strp("k")}, {Payload: []byte(`{}`), Partition: intp(1)}}
	if err := c.ProduceBatch(ctxT(t), "my topic", msgs); err != nil {
		t.Fatal(err)
	}
	r := n.requests()[0]
	if r.Method != "POST" || r.Path != "/v1/topics/my topic/produce/batch" || len(r.Query) != 0 {
		t.Errorf("request %s %s ?%v", r.Method, r.Path, r.Query)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Narad-Client") == "" {
		t.Errorf("headers %v", r.Header)
	}
	if want := `{"messages":[{"payload":"YQ==","payload_encoding":"base64","key":"k"},{"payload":{},"partition":1}]}`; string(r.Body) != want {
		t.Errorf("body %s\nwant %s", r.Body, want)
	}
}

// A refusal names a message: it comes back as a BatchRefusal with its index and the
// text after the prefix, so the caller can report that message and send the rest.
func TestProduceBatchRefusal(t *testing.T) {
	for _, tt := range []struct {
		status int
		body   string
		index  int // -1: not a BatchRefusal
		text   string
	}{
		{400, `{"error":"message 2: message required"}`, 2, "produce: 400 message required"},
		{413, `{"error":"message 0: message over 1048576 bytes"}`, 0, "produce: 413 message over 1048576 bytes"},
		{409, `{"error":"message 1: topic is a delay child"}`, 1, "produce: 409 topic is a delay child"},
		{400, `{"error":"message 9: out of range"}`, -1, "produce: 400 message 9: out of range"},
		{400, `{"error":"messages required"}`, -1, "produce: 400 messages required"},
		{413, `{"error":"body over 1048576 bytes"}`, -1, "produce: 413 body over 1048576 bytes"},
		{403, `{"error":"message 1: forbidden"}`, -1, "produce: 403 message 1: forbidden"},
		{404, `{"error":"topic \"t\" not found"}`, -1, `produce: 404 topic "t" not found`},
	} {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeJSON(w, tt.status, tt.body) })
		c, _ := newClient(t, n.URL)
		err := c.ProduceBatch(ctxT(t), "t", make([]ProduceMessage, 3))
		var br *BatchRefusal
		switch {
		case err == nil || err.Error() != tt.text || StatusOf(err) != tt.status:
			t.Errorf("%d %s: err %v", tt.status, tt.body, err)
		case tt.index >= 0 && (!errors.As(err, &br) || br.Index != tt.index):
			t.Errorf("%d %s: want a refusal of message %d, got %#v", tt.status, tt.body, tt.index, err)
		case tt.index < 0 && errors.As(err, &br):
			t.Errorf("%d %s: a refusal of message %d, want none", tt.status, tt.body, br.Index)
		}
		if len(n.requests()) != 1 {
			t.Errorf("%d %s: %d requests, want 1 (4xx is never retried)", tt.status, tt.body, len(n.requests()))
		}
	}
}

// A router's plain-text 404 means no batch produce: remembered, so the next call
// makes no request; a JSON 404 is the topic's.
func TestProduceBatchRouterNotFound(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeText(w, 404, "404 page not found\n")
	})
	var log EventLog
	c, _ := newClient(t, n.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	for range 2 {
		if err := c.ProduceBatch(ctxT(t), "t", []ProduceMessage{{Payload: []byte("x")}}); !errors.Is(err, ErrNoBatchProduce) {
			t.Fatalf("err %v, want ErrNoBatchProduce", err)
		}
	}
	if len(n.requests()) != 1 || c.BatchProduce() {
		t.Errorf("%d requests, BatchProduce %v: want one request, then remembered", len(n.requests()), c.BatchProduce())
	}
	if fb := log.Snapshot().Fallbacks; len(fb) != 1 || fb[0].Fallback != FallbackProduceSingles {
		t.Errorf("fallbacks %+v: want the batch produce fallback told once", fb)
	}
}

// 502/503 and a dropped connection are retried with the same body; giving up is the
// last answer.
func TestProduceBatchRetries(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch i {
		case 0:
			writeText(w, 502, "bad gateway")
		case 1:
			hangUp(t, w)
		default:
			writeJSON(w, 202, `{"accepted":1}`)
		}
	})
	c, sl := newClient(t, n.URL)
	if err := c.ProduceBatch(ctxT(t), "t", []ProduceMessage{{Payload: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	reqs := n.requests()
	if len(reqs) != 3 || len(sl.calls()) != 2 || !bytes.Equal(reqs[0].Body, reqs[2].Body) {
		t.Errorf("%d requests, %d backoffs", len(reqs), len(sl.calls()))
	}

	n = newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 503, `{"error":"owner unavailable"}`)
	})
	c, _ = newClient(t, n.URL, func(c *Config) { c.Retry.BoundedAttempts = 2 })
	if err := c.ProduceBatch(ctxT(t), "t", []ProduceMessage{{Payload: []byte("x")}}); StatusOf(err) != 503 || len(n.requests()) != 2 {
		t.Errorf("err %v after %d requests", err, len(n.requests()))
	}
}

// A 202 whose count disagrees is not taken as success; a batch over the limits is
// never sent.
func TestProduceBatchChecks(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeJSON(w, 202, `{"accepted":1}`) })
	c, _ := newClient(t, n.URL)
	if err := c.ProduceBatch(ctxT(t), "t", make([]ProduceMessage, 2)); err == nil || !strings.Contains(err.Error(), "accepted 1 of a batch of 2") {
		t.Errorf("err %v", err)
	}
	for _, msgs := range [][]ProduceMessage{nil, make([]ProduceMessage, 101), {{Payload: make([]byte, 800<<10)}}} {
		if err := c.ProduceBatch(ctxT(t), "t", msgs); err == nil {
			t.Errorf("a batch of %d messages was accepted", len(msgs))
		}
	}
	if len(n.requests()) != 1 {
		t.Errorf("%d requests, want only the first", len(n.requests()))
	}
}
