package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of what a node (or whatever answers in its place) sends: consume
// answers single and batch (with the older node's Go-escape repair), batch ack
// results, topic info and topic lists, and error bodies. Each answer goes through the
// real Client with a transport that answers from memory, so nothing is dialled.
// scripts/fuzz.sh runs every target; `go test` runs their seeds.

// canned answers every request with one status and body, from memory.
type canned struct {
	status int
	body   []byte
	header http.Header
	calls  int
}

func (c *canned) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls++
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := c.header
	if h == nil {
		h = http.Header{"Content-Type": {"application/json"}}
	}
	return &http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		Request: r, ContentLength: int64(len(c.body))}, nil
}

// fuzzClient is a Client whose every request gets status and body, with instant
// backoff and a small retry budget so a retried answer ends a run quickly.
func fuzzClient(t *testing.T, status int, body []byte) (*Client, *canned) {
	t.Helper()
	rt := &canned{status: status, body: body}
	sl := &sleeper{}
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt},
		Retry: RetryPolicy{Sleep: sl.Sleep, Budget: 1, BoundedAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return c, rt
}

// terminalControl reports the first byte or character of s that would act on a
// terminal or break a line: C0 (tab included), DEL, C1, or invalid UTF-8.
func terminalControl(s string) (string, bool) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("invalid UTF-8 at byte %d", i), true
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Sprintf("%U at byte %d", r, i), true
		}
	}
	return "", false
}

func addConsumeSeeds(f *testing.F) {
	for _, s := range []string{
		`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":{"order_id":"ord_1"},"timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}`,
		`{"messages":[{"topic":"t","partition":0,"offset":1,"payload":"hi","timestamp":1,"receipt_handle":"0:1:9"},{"topic":"t","partition":1,"offset":2,"key":"/w==","key_encoding":"base64","payload":"AAEC","payload_encoding":"base64","timestamp":2,"receipt_handle":"1:2:9"}]}`,
		`{"messages":[]}`,
		`{"messages":null}`,
		`{"topic":"t","partition":0,"offset":0,"key":"\x01\xff","payload":"a\x00b\a\v\'\101\U0001F600","timestamp":0,"receipt_handle":"h"}`,
		`{"topic":"t","payload":"x","extra":"\x7f","receipt_handle":"h"}`,
		`{"topic":"t","payload":"\uD83D\uDE00 \uD800 \u00e9","receipt_handle":"h"}`,
		`{"topic":"t","payload":"\x4`,
		`{"topic":"t","payload":"\777","receipt_handle":"h"}`,
		`{"payload":[1,2,{"a":"\u0000"}],"receipt_handle":"h"}`,
		`{}`, `null`, `[]`, `"x"`, `{"messages":{}}`, `{"messages":[1]}`,
		`<html><body>502 Bad Gateway</body></html>`,
		"{\"topic\":\"t\",\"payload\":\"\xff\xfe\",\"receipt_handle\":\"h\"}",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
}

// FuzzDecodeConsume feeds any 200 answer to Consume, single and batch. Whatever it
// accepts must be messages a client can work with: they survive being encoded and
// decoded again unchanged, and a valid JSON answer is read as plain JSON (the repair
// is only for answers that are not).
func FuzzDecodeConsume(f *testing.F) {
	addConsumeSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, batch bool) {
		c, _ := fuzzClient(t, http.StatusOK, body)
		o := ConsumeOptions{}
		if batch {
			o.Max = 10
		}
		res, err := c.Consume(context.Background(), "t", o)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "consume: ") {
				t.Fatalf("error without its op: %v", err)
			}
			return
		}
		if json.Valid(body) {
			var plain consumeBody
			if json.Unmarshal(body, &plain) != nil {
				t.Fatalf("accepted a valid JSON answer that plain decoding refuses")
			}
		}
		for i := range res.Messages {
			m := res.Messages[i]
			if !json.Valid(m.Payload) && len(m.Payload) > 0 {
				t.Fatalf("message %d: payload is not JSON: %q", i, m.Payload)
			}
			enc, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("message %d does not encode: %v", i, err)
			}
			back, _, err := decodeConsume(enc)
			if err != nil || len(back) != 1 {
				t.Fatalf("message %d does not decode again: %v (%s)", i, err, enc)
			}
			if !sameMessage(m, back[0]) {
				t.Fatalf("message %d changed on a round trip:\n%#v\n%#v", i, m, back[0])
			}
			// The accessors never panic, whatever the node sent.
			m.PayloadBytes()
			m.KeyBytes()
		}
	})
}

// sameMessage compares two messages, their payloads as JSON values: Marshal compacts
// a payload, escapes HTML characters in it, and writes a missing one as null.
func sameMessage(a, b Message) bool {
	va, vb := jsonValue(a.Payload), jsonValue(b.Payload)
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(va, vb) && reflect.DeepEqual(a, b)
}

func jsonValue(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err.Error()
	}
	return v
}

// FuzzGoEscapeRepair builds the answer an older node wrote with Go's %q for the key
// and payload of a text message, and checks that the client reads back exactly the
// bytes that were produced, whichever escapes %q chose.
func FuzzGoEscapeRepair(f *testing.F) {
	f.Add([]byte("\x01"), []byte("hello"), "orders", false)
	f.Add([]byte("caf\xc3\xa9"), []byte("\xff\xfe\x00"), "t", true)
	f.Add([]byte("\a\b\f\v'\"\\"), []byte("\u2028\U0001F600\u009b"), "t\x1b", false)
	f.Add([]byte{}, []byte("\xed\xa0\x80"), "", true)
	f.Add([]byte("\U000E0001"), []byte("\x7f"), "t", false)
	f.Fuzz(func(t *testing.T, key, payload []byte, topic string, batch bool) {
		msg := fmt.Sprintf(`{"topic":%q,"partition":3,"offset":7,"key":%q,"payload":%q,"timestamp":1,"receipt_handle":"3:7:1"}`,
			topic, key, payload)
		body := msg
		if batch {
			body = `{"messages":[` + msg + `,` + msg + `]}`
		}
		msgs, _, err := decodeConsume([]byte(body))
		if err != nil {
			t.Fatalf("older node's answer not read: %v\n%s", err, body)
		}
		want := 1
		if batch {
			want = 2
		}
		if len(msgs) != want {
			t.Fatalf("%d messages, want %d", len(msgs), want)
		}
		for _, m := range msgs {
			kb, ok, err := m.KeyBytes()
			if err != nil || !ok || !bytes.Equal(kb, key) {
				t.Fatalf("key %q read as %q (ok %v, err %v)\n%s", key, kb, ok, err, body)
			}
			pb, err := m.PayloadBytes()
			if err != nil || !bytes.Equal(pb, payload) {
				t.Fatalf("payload %q read as %q (err %v)\n%s", payload, pb, err, body)
			}
			if utf8.ValidString(topic) && m.Topic != topic {
				t.Fatalf("topic %q read as %q", topic, m.Topic)
			}
			if m.Partition != 3 || m.Offset != 7 || m.ReceiptHandle != "3:7:1" {
				t.Fatalf("fields around the repaired strings changed: %#v", m)
			}
		}
	})
}

// FuzzRepairGoEscapes checks the repair on its own: it leaves valid JSON alone, and
// what it repairs has only JSON escapes left.
func FuzzRepairGoEscapes(f *testing.F) {
	addConsumeSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, _ bool) {
		out, changed := repairGoEscapes(body)
		if json.Valid(body) && changed {
			t.Fatalf("valid JSON was rewritten:\n%s\n%s", body, out)
		}
		if !changed {
			return
		}
		// Every string literal left must now scan without a Go-only escape.
		for i := 0; i < len(out); {
			if out[i] != '"' {
				i++
				continue
			}
			end, _, goEsc, ok := scanString(out, i)
			if !ok || goEsc {
				t.Fatalf("repair left a string that is not JSON at %d:\n%s", i, out)
			}
			i = end
		}
		// A second repair finds nothing more to do.
		if _, again := repairGoEscapes(out); again {
			t.Fatalf("repair is not idempotent:\n%s", out)
		}
	})
}

// FuzzSettleBatchAnswer feeds any 200 answer to a batch ack. Whatever it says, there is
// one result per handle in input order, and every error text is one inert line.
func FuzzSettleBatchAnswer(f *testing.F) {
	for _, s := range []string{
		`{"results":[{"status":204},{"status":410,"error":"receipt handle no longer matches"}]}`,
		`{"results":[{"status":204},{"status":503,"error":"partition owner unreachable"},{"status":204}]}`,
		`{"results":[{"status":200},{"status":-1,"error":"\u001b[31mred\u009b\n2nd line"}]}`,
		`{"results":[]}`, `{"results":null}`, `{}`, `[]`, `{"results":[{"status":"204"}]}`,
		`{"results":[{"status":1e400}]}`, `<html>ok</html>`, ``,
		`{"results":[{"status":401,"error":"x"},{"status":404},{"status":999999999999}]}`,
	} {
		f.Add([]byte(s), uint8(2))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		handles := make([]string, 2+int(n)%99)
		for i := range handles {
			handles[i] = "0:" + strconv.Itoa(i) + ":1"
		}
		c, _ := fuzzClient(t, http.StatusOK, body)
		res, err := c.Settle(context.Background(), "t", Ack, handles)
		if len(res) != len(handles) {
			t.Fatalf("%d results for %d handles (err %v)", len(res), len(handles), err)
		}
		for i, r := range res {
			if r.Handle != handles[i] {
				t.Fatalf("result %d is for %q, want %q", i, r.Handle, handles[i])
			}
			if r.Status == http.StatusNoContent && r.Err != "" {
				t.Fatalf("result %d: success with an error %q", i, r.Err)
			}
			if what, bad := terminalControl(r.Err); bad {
				t.Fatalf("result %d error %q holds %s", i, r.Err, what)
			}
		}
		if err != nil {
			if what, bad := terminalControl(err.Error()); bad {
				t.Fatalf("error %q holds %s", err, what)
			}
		}
	})
}

// FuzzTopicInfo feeds any 200 answer to topic info and topic ls: no panic, a bounded
// number of requests, and what is accepted survives a round trip.
func FuzzTopicInfo(f *testing.F) {
	for _, s := range []string{
		`{"name":"orders","partitions":2,"retention_ms":604800000,"visibility_timeout_ms":30000,"max_in_flight_per_partition":1000,"max_acked_ahead_per_partition":10000,"partition_stats":[{"index":0,"oldest_offset":0,"next_offset":5,"high_watermark":5,"size_bytes":512}]}`,
		`{"topics":[{"name":"a","partitions":1},{"name":"b\u001b[2J","partitions":-1}],"next_page_token":""}`,
		`{"topics":[{"name":"a"}],"next_page_token":"p2"}`,
		`{"name":"x","partitions":1e3}`, `{"name":"x","partitions":99999999999999999999}`,
		`{"partition_stats":[null,{}]}`, `null`, `{}`, `[]`, `<html>`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, rt := fuzzClient(t, http.StatusOK, body)
		if tp, err := c.Topic(context.Background(), "t"); err == nil {
			enc, err := json.Marshal(tp)
			if err != nil {
				t.Fatalf("topic does not encode: %v", err)
			}
			var back Topic
			// An empty partition_stats is left out when encoded (omitempty), so an
			// empty list and none are the same topic.
			if len(tp.PartitionStats) == 0 {
				tp.PartitionStats = nil
			}
			if err := json.Unmarshal(enc, &back); err != nil || !reflect.DeepEqual(*tp, back) {
				t.Fatalf("topic changed on a round trip: %v\n%#v\n%#v", err, *tp, back)
			}
		}
		rt.calls = 0
		c.ListTopics(context.Background())
		// The same answer every time: a repeated page token ends the listing at once.
		if rt.calls > 2 {
			t.Fatalf("topic ls made %d requests for an answer that repeats itself", rt.calls)
		}
	})
}

// FuzzErrorBody feeds any error answer (JSON or not) to a request: it becomes an
// *Error with the status, whose text is one inert line of bounded length, and the
// API's own {"error":"..."} shape yields its text.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"error":"topic \"nope\" not found"}`,
		`{"error":"line one\nline two\r\n\tthree"}`,
		`{"error":"\u001b]0;owned\u0007 \u009b31m red \u202e evil"}`,
		`{"error":null}`, `{"error":5}`, `{"error":""}`, `{"message":"x"}`,
		"<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>",
		"plain text \x1b[31mred\x1b[0m \xff\xfe",
		strings.Repeat("é", 600), strings.Repeat(" \n", 300), ``,
	} {
		f.Add([]byte(s), uint16(400))
		f.Add([]byte(s), uint16(502))
	}
	f.Fuzz(func(t *testing.T, body []byte, code uint16) {
		status := 400 + int(code)%200 // every 4xx and 5xx
		c, _ := fuzzClient(t, status, body)
		err := c.DeleteTopic(context.Background(), "t")
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("status %d: not an *Error: %v", status, err)
		}
		if e.Status != status || e.Op != OpDeleteTopic {
			t.Fatalf("got %d %v, want %d %v", e.Status, e.Op, status, OpDeleteTopic)
		}
		line := e.Error()
		if what, bad := terminalControl(line); bad {
			t.Fatalf("error %q holds %s", line, what)
		}
		if len(e.Message) > maxErrorText+utf8.UTFMax+len("… (999,999,999 bytes, 999,999,999 not shown)") {
			t.Fatalf("error text of %d bytes, want at most about %d", len(e.Message), maxErrorText)
		}
		if e.Message != strings.TrimSpace(e.Message) || strings.Contains(e.Message, "  ") {
			t.Fatalf("error text %q is not trimmed and folded", e.Message)
		}
		var j struct {
			Error *string `json:"error"`
		}
		if json.Unmarshal(body, &j) == nil && j.Error != nil && isPlainText(*j.Error) && len(*j.Error) < maxErrorText {
			if want := strings.Join(strings.Fields(*j.Error), " "); e.Message != want {
				t.Fatalf("error text %q, want the node's %q", e.Message, want)
			}
		}
	})
}

// isPlainText is printable ASCII and spaces: text errorText must keep as it is.
func isPlainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != ' ') || c >= 0x7f {
			return false
		}
	}
	return true
}
