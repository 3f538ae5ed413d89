package devbroker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// harness is a broker listening on 127.0.0.1:0 and a client for it. Tests speak HTTP to
// it, as the CLI does, and assert status, headers and the exact bytes of the body.
type harness struct {
	t          *testing.T
	b          *Broker
	c          *http.Client
	user, pass string
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	b, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		b.Close()
		tr.CloseIdleConnections()
	})
	return &harness{t: t, b: b, c: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// startTopic starts a broker with one topic "orders" built from spec (Name is set).
func startTopic(t *testing.T, spec TopicSpec) *harness {
	spec.Name = "orders"
	return start(t, Config{Topics: []TopicSpec{spec}})
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %q", r.status, r.body) }

// do sends a request; hdr is pairs of header name and value.
func (h *harness) do(method, path string, body []byte, hdr ...string) resp {
	h.t.Helper()
	r, err := h.try(method, path, body, hdr...)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (h *harness) try(method, path string, body []byte, hdr ...string) (resp, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.b.URL()+path, rd)
	if err != nil {
		return resp{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if h.user != "" {
		req.SetBasicAuth(h.user, h.pass)
	}
	res, err := h.c.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{status: res.StatusCode, header: res.Header, body: data}, nil
}

func (h *harness) produce(topic, query, payload string) resp {
	h.t.Helper()
	path := "/v1/topics/" + topic + "/produce"
	if query != "" {
		path += "?" + query
	}
	return h.do("POST", path, []byte(payload))
}

// mustProduce produces and fails the test unless the answer is 202.
func (h *harness) mustProduce(topic, query, payload string) {
	h.t.Helper()
	if r := h.produce(topic, query, payload); r.status != 202 {
		h.t.Fatalf("produce %q: %v", payload, r)
	}
}

func (h *harness) consume(topic, query string) resp {
	h.t.Helper()
	return h.do("GET", "/v1/topics/"+topic+"/consume?"+query, nil)
}

func (h *harness) batch(topic, query string) resp {
	h.t.Helper()
	return h.do("GET", "/v1/topics/"+topic+"/consume?"+query, nil, "X-Narad-Client", "test")
}

func (h *harness) ack(topic, handle, extend string) resp {
	h.t.Helper()
	q := "receipt_handle=" + url.QueryEscape(handle)
	if extend != "" {
		q += "&extend=" + extend
	}
	return h.do("POST", "/v1/topics/"+topic+"/ack?"+q, nil, "Content-Type", "application/json")
}

func (h *harness) batchAck(topic, extend string, handles ...string) resp {
	h.t.Helper()
	body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
	path := "/v1/topics/" + topic + "/ack"
	if extend != "" {
		path += "?extend=" + extend
	}
	return h.do("POST", path, body, "Content-Type", "application/json")
}

func (h *harness) stats(topic string) TopicStats {
	h.t.Helper()
	st, err := h.b.Stats(topic)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// msg is a message as a client decodes it.
type msg struct {
	Topic           string          `json:"topic"`
	Partition       int             `json:"partition"`
	Offset          int64           `json:"offset"`
	Key             *string         `json:"key"`
	KeyEncoding     string          `json:"key_encoding"`
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Timestamp       int64           `json:"timestamp"`
	ReceiptHandle   string          `json:"receipt_handle"`
}

// one decodes a 200 single-message answer.
func one(t *testing.T, r resp) msg {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("want 200 with a message, got %v", r)
	}
	var m msg
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decoding %q: %v", r.body, err)
	}
	return m
}

// many decodes a 200 batch answer.
func many(t *testing.T, r resp) []msg {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("want 200 with messages, got %v", r)
	}
	var out struct {
		Messages []msg `json:"messages"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("decoding %q: %v", r.body, err)
	}
	return out.Messages
}

func handles(ms []msg) []string {
	var hs []string
	for _, m := range ms {
		hs = append(hs, m.ReceiptHandle)
	}
	return hs
}

// wantError asserts a JSON error answer, byte for byte.
func wantError(t *testing.T, r resp, status int, text string) {
	t.Helper()
	want, _ := json.Marshal(map[string]string{"error": text})
	want = append(want, '\n')
	if r.status != status || !bytes.Equal(r.body, want) {
		t.Fatalf("want %d %s, got %v", status, want, r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q, want application/json", ct)
	}
	if cl := r.header.Get("Content-Length"); cl != fmt.Sprint(len(want)) {
		t.Fatalf("Content-Length %q, want %d", cl, len(want))
	}
}

// wantErrorPrefix asserts a JSON error whose text starts with prefix.
func wantErrorPrefix(t *testing.T, r resp, status int, prefix string) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if r.status != status || json.Unmarshal(r.body, &e) != nil || !strings.HasPrefix(e.Error, prefix) {
		t.Fatalf("want %d with error %q..., got %v", status, prefix, r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q, want application/json", ct)
	}
}

// wantEmpty asserts a bodiless answer such as 202 or 204.
func wantEmpty(t *testing.T, r resp, status int) {
	t.Helper()
	if r.status != status || len(r.body) != 0 {
		t.Fatalf("want %d with no body, got %v", status, r)
	}
}

func wantBody(t *testing.T, r resp, status int, body string) {
	t.Helper()
	if r.status != status || string(r.body) != body {
		t.Fatalf("want %d %q\n got %v", status, body, r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if cl := r.header.Get("Content-Length"); cl != fmt.Sprint(len(body)) {
		t.Fatalf("Content-Length %q, want %d", cl, len(body))
	}
}

// eventually polls cond for up to d; timing assertions are generous on the late side so
// that a loaded two-core machine does not flake.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// async runs f in the background and returns a channel with its result.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// waitForWaiters blocks until n long polls sleep, so that what the test does next
// happens while they wait.
func (h *harness) waitForWaiters(n int) {
	h.t.Helper()
	eventually(h.t, 10*time.Second, fmt.Sprintf("%d long polls to wait", n), func() bool { return h.b.waiters.Load() >= int64(n) })
}

var (
	topicIDRE        = regexp.MustCompile(`"id":"[0-9a-f]{16}"`)
	topicCreatedAtRE = regexp.MustCompile(`"created_at":[0-9]+`)
)

// wantTopicBody is wantBody for a body holding topic objects, whose random id and
// creation time are written ID and T in body.
func wantTopicBody(t *testing.T, r resp, status int, body string) {
	t.Helper()
	got := topicIDRE.ReplaceAll(r.body, []byte(`"id":"ID"`))
	got = topicCreatedAtRE.ReplaceAll(got, []byte(`"created_at":T`))
	if r.status != status || string(got) != body {
		t.Fatalf("want %d %q\n got %d %q", status, body, r.status, got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
}

// fakeClock is a broker clock that moves only when told, for delays and times.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_790_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
