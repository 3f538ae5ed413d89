package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The single-consume example of the v3.1 guide, as a node sends it.
const guideSingle = `{
  "topic": "orders",
  "partition": 4,
  "offset": 0,
  "key": "customer-42",
  "payload": {
    "order_id": "ord_123",
    "amount": 4999
  },
  "timestamp": 1790623277,
  "receipt_handle": "4:0:3327358780392153864"
}`

func TestConsumeSingle(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 200, guideSingle)
	})
	c, _ := newClient(t, n.URL)
	res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Wait: 500 * time.Millisecond, Partition: intp(4)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	m := res.Messages[0]
	if m.Topic != "orders" || m.Partition != 4 || m.Offset != 0 || m.Timestamp != 1790623277 ||
		m.ReceiptHandle != "4:0:3327358780392153864" || !m.HasKey() || *m.Key != "customer-42" {
		t.Errorf("message %+v", m)
	}
	// A JSON payload stays exactly as sent, whitespace included.
	p, err := m.PayloadBytes()
	if want := "{\n    \"order_id\": \"ord_123\",\n    \"amount\": 4999\n  }"; err != nil || string(p) != want {
		t.Errorf("payload %q, %v; want %q", p, err, want)
	}
	r := n.requests()[0]
	if r.Method != "GET" || r.Path != "/v1/topics/orders/consume" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	if q := r.Query; q.Get("wait") != "500ms" || q.Get("partition") != "4" || q.Has("max") {
		t.Errorf("query %v", q)
	}
}

func TestConsumeBatch(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		if r.Header.Get("X-Narad-Client") == "" {
			writeJSON(w, 400, `{"error":"X-Narad-Client header required"}`)
			return
		}
		writeJSON(w, 200, `{"messages":[
			{"topic":"orders","partition":3,"offset":0,"key":"customer-7","payload":{"a":1},"timestamp":1,"receipt_handle":"3:0:1"},
			{"topic":"orders","partition":4,"offset":2,"payload":"hello world","timestamp":2,"receipt_handle":"4:2:2"},
			{"topic":"orders","partition":4,"offset":3,"payload":"iVBORw0KGgo=","payload_encoding":"base64","timestamp":3,"receipt_handle":"4:3:3"}]}`)
	})
	c, _ := newClient(t, n.URL, func(c *Config) { c.ClientName = "narad-test" })
	res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Wait: 10 * time.Second, Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	want := []string{`{"a":1}`, "hello world", "\x89PNG\r\n\x1a\n"}
	for i, m := range res.Messages {
		p, err := m.PayloadBytes()
		if err != nil || string(p) != want[i] {
			t.Errorf("message %d: payload %q, %v; want %q", i, p, err, want[i])
		}
	}
	if res.Messages[1].HasKey() {
		t.Errorf("a message without key has one")
	}
	r := n.requests()[0]
	if r.Query.Get("max") != "100" || r.Query.Get("wait") != "10s" || r.Header.Get("X-Narad-Client") != "narad-test" {
		t.Errorf("query %v, X-Narad-Client %q", r.Query, r.Header.Get("X-Narad-Client"))
	}
}

// A node that shortened the wait says so in a header; the answer is still just "nothing
// yet" (narad polls in waits of at most 1s anyway).
func TestConsumeNothingAndClamped(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		w.Header().Set("X-Narad-Wait-Clamped", "10s")
		w.WriteHeader(204)
	})
	c, _ := newClient(t, n.URL)
	res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Wait: time.Minute, Max: 500})
	if err != nil || len(res.Messages) != 0 {
		t.Errorf("204: %+v, %v", res, err)
	}
	if q := n.requests()[0].Query; q.Get("wait") != "1m0s" || q.Get("max") != "100" {
		t.Errorf("query %v", q)
	}
}

// An older node ignores max and answers one message in the single shape: that is a
// batch of one, every time, not an error.
func TestConsumeSingleShapeAnswerToBatch(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 200, fmt.Sprintf(`{"topic":"orders","partition":1,"offset":%d,"key":"key-%d","payload":"x","timestamp":1,"receipt_handle":"1:%d:9"}`, i, i, i))
	})
	var log EventLog
	c, _ := newClient(t, n.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	for i := 0; i < 3; i++ {
		res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Max: 50})
		if err != nil {
			t.Fatalf("consume %d: %v", i, err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Offset != int64(i) {
			t.Fatalf("consume %d: %+v", i, res.Messages)
		}
	}
	if !c.legacyConsume.Load() {
		t.Errorf("the single-shape answer was not remembered")
	}
	if got := log.Snapshot().Fallbacks; len(got) != 1 || got[0] != (FallbackEvent{OpConsume, FallbackConsumeSingle}) {
		t.Errorf("fallbacks %+v, want one", got)
	}
	for _, r := range n.requests() {
		if r.Query.Get("max") != "50" {
			t.Errorf("later batch request without max: %v", r.Query)
		}
	}
}

func TestConsumeRetriesBusyNode(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch i {
		case 0:
			writeJSON(w, 429, `{"error":"too many concurrent consumes"}`)
		case 1:
			writeText(w, 503, "no partition owner reachable\n")
		case 2:
			writeText(w, 502, "bad gateway")
		case 3:
			hangUp(t, w)
		default:
			writeJSON(w, 200, guideSingle)
		}
	})
	c, sl := newClient(t, n.URL)
	res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Wait: time.Second})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := len(n.requests()); got != 5 {
		t.Errorf("%d requests, want 5", got)
	}
	// Go's transport itself re-sends a GET whose reused connection was dropped, so
	// the dropped connection may not have cost a backoff.
	if got := len(sl.calls()); got != 3 && got != 4 {
		t.Errorf("%d backoffs, want 3 or 4", got)
	}
}

// 429 and 503 are retried for as long as ctx allows, and no longer.
func TestConsumeBackoffStopsWithContext(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 503, `{"error":"starting"}`)
	})
	c, sl := newClient(t, n.URL)
	ctx, cancel := context.WithCancel(ctxT(t))
	sl.onCall = func(n int) {
		if n == 20 {
			cancel()
		}
	}
	_, err := c.Consume(ctx, "orders", ConsumeOptions{})
	if err == nil || ctx.Err() == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("err %v", err)
	}
	if got := len(n.requests()); got != 20 {
		t.Errorf("%d requests, want 20", got)
	}
	if calls := sl.calls(); calls[len(calls)-1] > DefaultRetryMax {
		t.Errorf("backoff %v over the cap", calls[len(calls)-1])
	}
}

func TestConsumeFailsFast(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404} {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
			writeJSON(w, status, `{"error":"nope"}`)
		})
		c, sl := newClient(t, n.URL, func(c *Config) { c.User, c.Password = "app", "wrong" })
		_, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Max: 10})
		if StatusOf(err) != status || err.Error() != fmt.Sprintf("consume: %d nope", status) {
			t.Errorf("%d: err %v", status, err)
		}
		if len(n.requests()) != 1 || len(sl.calls()) != 0 {
			t.Errorf("%d was retried: %d requests", status, len(n.requests()))
		}
	}
}

func TestConsumeConnectionErrorsBounded(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { hangUp(t, w) })
	c, _ := newClient(t, n.URL)
	if _, err := c.Consume(ctxT(t), "orders", ConsumeOptions{}); err == nil || StatusOf(err) != 0 {
		t.Errorf("err %v", err)
	}
	if got := len(n.requests()); got != DefaultBoundedAttempts {
		t.Errorf("%d attempts, want %d", got, DefaultBoundedAttempts)
	}
}

// An older node writes Go escapes into a key: the body is not JSON, yet the batch
// goes through, and the key comes back as its bytes.
func TestConsumeGoEscapedKey(t *testing.T) {
	body := `{"messages":[` +
		`{"topic":"orders","partition":0,"offset":7,"key":"\x01","payload":{"k":"v \u00e9 \"q\""},"timestamp":5,"receipt_handle":"0:7:1"},` +
		`{"topic":"orders","partition":0,"offset":8,"key":"caf\xc3\xa9\xff\a","payload":"text\ttab","timestamp":6,"receipt_handle":"0:8:2"},` +
		`{"topic":"orders","partition":0,"offset":9,"key":"plain","payload":[1, 2],"timestamp":7,"receipt_handle":"0:9:3"}]}`
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeJSON(w, 200, body) })
	c, _ := newClient(t, n.URL)
	res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 3 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	wantKeys := [][]byte{{1}, []byte("caf\xc3\xa9\xff\a"), []byte("plain")}
	wantEnc := []string{"base64", "base64", ""}
	wantPayload := []string{`{"k":"v \u00e9 \"q\""}`, "text\ttab", "[1, 2]"}
	for i, m := range res.Messages {
		k, ok, err := m.KeyBytes()
		if !ok || err != nil || !bytes.Equal(k, wantKeys[i]) || m.KeyEncoding != wantEnc[i] {
			t.Errorf("message %d: key %q (%s), %v, %v; want %q", i, k, m.KeyEncoding, ok, err, wantKeys[i])
		}
		p, err := m.PayloadBytes()
		if err != nil || string(p) != wantPayload[i] {
			t.Errorf("message %d: payload %q, %v; want %q", i, p, err, wantPayload[i])
		}
		if m.ReceiptHandle == "" || m.Offset != int64(7+i) {
			t.Errorf("message %d: %+v", i, m)
		}
	}
	// The repaired message marshals to valid JSON (what `sub -o json` prints).
	if b, err := json.Marshal(res.Messages[0]); err != nil || !json.Valid(b) || !strings.Contains(string(b), `"key":"AQ==","key_encoding":"base64"`) {
		t.Errorf("marshal: %s, %v", b, err)
	}
}

func TestConsumeUndecodable(t *testing.T) {
	for _, body := range []string{`{"messages":[{"topic":"o"`, `{}`, `"just a string"`, `{"key":"\q"}`} {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeJSON(w, 200, body) })
		c, _ := newClient(t, n.URL)
		if _, err := c.Consume(ctxT(t), "orders", ConsumeOptions{}); err == nil {
			t.Errorf("%s: decoded", body)
		}
	}
}

func TestRepairGoEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{"key":"\x01"}`:                                      `{"key":"AQ==","key_encoding":"base64"}`,
		`{"key" : "\x00\x7f", "payload":"\xff"}`:              `{"key" : "AH8=","key_encoding":"base64", "payload":"/w==","payload_encoding":"base64"}`,
		`{"topic":"a\x41\v","key":"ok"}`:                      `{"topic":"aA\u000b","key":"ok"}`,
		`{"payload":{"key":"\u0001"},"key":"\101\U0001F600"}`: `{"payload":{"key":"\u0001"},"key":"QfCfmIA=","key_encoding":"base64"}`,
		`["\x41", "key", "\x42"]`:                             `["A", "key", "B"]`,
	} {
		got, ok := repairGoEscapes([]byte(in))
		if !ok || string(got) != want {
			t.Errorf("repair(%s) = %s, %v; want %s", in, got, ok, want)
		}
		if !json.Valid(got) {
			t.Errorf("repair(%s) is not valid JSON: %s", in, got)
		}
	}
	for _, in := range []string{`{"key":"\x0"}`, `{"key":"\z"}`, `{"key":"abc`, `{"key":"\u12"}`} {
		if got, ok := repairGoEscapes([]byte(in)); ok {
			t.Errorf("repair(%s) = %s, want failure", in, got)
		}
	}
	if _, changed := repairGoEscapes([]byte(guideSingle)); changed {
		t.Errorf("valid JSON was changed")
	}
}

func TestReplay(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch r.URL.Query().Get("offset") {
		case "0":
			writeJSON(w, 410, `{"error":"offset is older than retention"}`)
		case "5":
			writeJSON(w, 200, `{"topic":"orders","partition":2,"offset":5,"payload":42,"timestamp":9}`)
		default:
			w.WriteHeader(204)
		}
	})
	c, _ := newClient(t, n.URL)
	ctx := ctxT(t)
	m, err := c.Replay(ctx, "orders", 2, 5)
	if err != nil || m == nil || m.Offset != 5 || string(m.Payload) != "42" || m.ReceiptHandle != "" {
		t.Errorf("replay: %+v, %v", m, err)
	}
	if m, err := c.Replay(ctx, "orders", 2, 6); m != nil || err != nil {
		t.Errorf("at the tail: %+v, %v", m, err)
	}
	if _, err := c.Replay(ctx, "orders", 2, 0); !IsGone(err) {
		t.Errorf("past retention: %v", err)
	}
	r := n.requests()[0]
	if r.Query.Get("partition") != "2" || r.Query.Get("offset") != "5" || r.Query.Has("max") || r.Query.Has("wait") {
		t.Errorf("query %v", r.Query)
	}
}

// batchBody is a realistic batch answer of n messages: JSON, text and binary payloads.
func batchBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"messages":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `{"topic":"orders","partition":%d,"offset":%d,"key":"customer-%d","payload":{"order_id":"ord_%d","amount":4999,"items":[{"sku":"a-1","qty":2},{"sku":"b-2","qty":1}]},"timestamp":1790623277,"receipt_handle":"%d:%d:3327358780392153864"}`, i%8, i, i, i, i%8, i)
		case 1:
			fmt.Fprintf(&b, `{"topic":"orders","partition":%d,"offset":%d,"payload":"hello world, this is message %d","timestamp":1790623277,"receipt_handle":"%d:%d:3327358780392153864"}`, i%8, i, i, i%8, i)
		default:
			fmt.Fprintf(&b, `{"topic":"orders","partition":%d,"offset":%d,"key":"customer-%d","payload":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","payload_encoding":"base64","timestamp":1790623277,"receipt_handle":"%d:%d:3327358780392153864"}`, i%8, i, i, i%8, i)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func BenchmarkDecodeBatch100(b *testing.B) {
	body := batchBody(100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		msgs, _, err := decodeConsume(body)
		if err != nil || len(msgs) != 100 {
			b.Fatal(err, len(msgs))
		}
	}
}

// The repair path only runs on a body an older node broke; this measures its cost.
func BenchmarkDecodeBatch100GoEscaped(b *testing.B) {
	body := bytes.Replace(batchBody(100), []byte(`"key":"customer-0"`), []byte(`"key":"\x01"`), 1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		msgs, _, err := decodeConsume(body)
		if err != nil || len(msgs) != 100 {
			b.Fatal(err, len(msgs))
		}
	}
}

// A node that stays busy past the retry budget is reported, not waited on forever:
// sub --drain in CI must end.
func TestConsumeBusyPastTheBudgetIsAnError(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeText(w, 503, "no partition owner reachable\n")
	})
	c, _ := newClient(t, n.URL, func(c *Config) { c.Retry.Budget = 10 * time.Second })
	_, err := c.Consume(ctxT(t), "orders", ConsumeOptions{})
	if StatusOf(err) != 503 || !strings.Contains(err.Error(), "no partition owner reachable") {
		t.Fatalf("err %v, want the 503", err)
	}
	if got := len(n.requests()); got < 3 || got > 20 {
		t.Errorf("%d requests, want a few within a 10s budget", got)
	}
}

// A redirect is an answer, not an invitation to send the credentials elsewhere.
func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 200, `{"topics":[],"next_page_token":""}`)
	})
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	c, err := New(Config{BaseURL: n.URL, User: "app", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListTopics(ctxT(t))
	if StatusOf(err) != http.StatusTemporaryRedirect {
		t.Errorf("err %v, want the 307 as an error", err)
	}
	if got := len(elsewhere.requests()); got != 0 {
		t.Errorf("the redirect was followed: %d requests elsewhere", got)
	}
}

// A consume gives up on connection errors as unreachable, which a caller can tell from
// an answer (an *Error) and from a decoding failure.
func TestConsumeUnreachableIsRecognisable(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { hangUp(t, w) })
	c, _ := newClient(t, n.URL)
	_, err := c.Consume(ctxT(t), "orders", ConsumeOptions{})
	if !IsUnreachable(err) || errors.Is(err, ErrAnswerLost) {
		t.Errorf("err %v: want unreachable", err)
	}
	n2 := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 404, `{"error":"no such topic"}`)
	})
	c2, _ := newClient(t, n2.URL)
	if _, err := c2.Consume(ctxT(t), "orders", ConsumeOptions{}); IsUnreachable(err) {
		t.Errorf("a 404 reported as unreachable: %v", err)
	}
}

// Closing Stop ends a consume that is backing off, at once and without another
// request: nothing can have been leased for it.
func TestConsumeStopEndsTheBackoff(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 503, `{"error":"starting"}`)
	})
	stop := make(chan struct{})
	c, sl := newClient(t, n.URL)
	sl.onCall = func(n int) {
		if n == 3 {
			close(stop)
		}
	}
	_, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Stop: stop})
	if !errors.Is(err, ErrStopped) || errors.Is(err, ErrAnswerLost) {
		t.Errorf("err %v, want ErrStopped", err)
	}
	if got := len(n.requests()); got != 3 {
		t.Errorf("%d requests, want 3: none after the stop", got)
	}
	// Already closed: not even a first request.
	if _, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Stop: stop}); !errors.Is(err, ErrStopped) {
		t.Errorf("err %v, want ErrStopped", err)
	}
	if got := len(n.requests()); got != 3 {
		t.Errorf("%d requests, want still 3", got)
	}
}

// Stop leaves a request in flight alone: its answer may hold leased messages. Only
// ctx cuts it, and the error then says an answer may be lost.
func TestConsumeStopLetsTheRequestInFlightFinish(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		close(arrived)
		<-release
		writeJSON(w, 200, `{"messages":[{"topic":"orders","partition":0,"offset":7,"payload":"x","timestamp":1,"receipt_handle":"h7"}]}`)
	})
	stop := make(chan struct{})
	c, _ := newClient(t, n.URL)
	type result struct {
		res *ConsumeResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Max: 10, Stop: stop})
		done <- result{res, err}
	}()
	<-arrived
	close(stop)
	close(release)
	r := <-done
	if r.err != nil || len(r.res.Messages) != 1 || r.res.Messages[0].ReceiptHandle != "h7" {
		t.Fatalf("got %+v, %v: want the answer of the request in flight", r.res, r.err)
	}

	arrived2 := make(chan struct{})
	n2 := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		close(arrived2)
		<-r.Context().Done()
	})
	c2, _ := newClient(t, n2.URL)
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() {
		<-arrived2
		cancel()
	}()
	_, err := c2.Consume(ctx, "orders", ConsumeOptions{Max: 10})
	if !errors.Is(err, ErrAnswerLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want ErrAnswerLost and context.Canceled", err)
	}
}

// The hand-built consume query says what url.Values would, in the same order.
func TestConsumeQuery(t *testing.T) {
	p0, p3 := 0, 3
	for _, o := range []ConsumeOptions{
		{},
		{Max: 1},
		{Max: 250},
		{Partition: &p0},
		{Wait: 1500 * time.Millisecond},
		{Max: 100, Partition: &p3, Wait: time.Minute + 30*time.Second},
		{Partition: &p3, Wait: 10 * time.Second},
	} {
		want := url.Values{}
		if o.Max > 0 {
			want.Set("max", strconv.Itoa(min(o.Max, 100)))
		}
		if o.Partition != nil {
			want.Set("partition", strconv.Itoa(*o.Partition))
		}
		if o.Wait > 0 {
			want.Set("wait", o.Wait.String())
		}
		if got := consumeQuery(o); got != want.Encode() {
			t.Errorf("consumeQuery(%+v) = %q, want %q", o, got, want.Encode())
		}
	}
}
