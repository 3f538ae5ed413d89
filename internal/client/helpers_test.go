package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is one request as the fake node received it.
type seen struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// node is a scripted fake Narad node: it records every request and answers with
// the test's handler, which gets the request's 0-based number.
type node struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

type handler func(w http.ResponseWriter, r *http.Request, n int, body []byte)

func newNode(t *testing.T, h handler) *node {
	t.Helper()
	n := &node{}
	n.Server = httptest.NewServer(n.wrap(h))
	t.Cleanup(n.Close)
	return n
}

func (n *node) wrap(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n.mu.Lock()
		i := len(n.reqs)
		n.reqs = append(n.reqs, seen{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone(), body})
		n.mu.Unlock()
		h(w, r, i, body)
	}
}

// newPipeNode is newNode for a synctest bubble: the node serves in-memory
// connections (net.Pipe) rather than loopback ones, whose I/O would keep the bubble's
// clock from moving, and the returned http.Client (for Config.HTTPClient) dials them.
func newPipeNode(t *testing.T, h handler) (*node, *http.Client) {
	t.Helper()
	n := &node{}
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: n.wrap(h)}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return n, &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
}

// pipeListener hands the server one end of each connection a client dials.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func (n *node) requests() []seen {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]seen(nil), n.reqs...)
}

// sleeper is an instant RetryPolicy.Sleep that records what it was asked to wait.
type sleeper struct {
	mu     sync.Mutex
	slept  []time.Duration
	onCall func(n int) // optional: runs on each sleep (e.g. to cancel a context)
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.slept = append(s.slept, d)
	n := len(s.slept)
	s.mu.Unlock()
	if s.onCall != nil {
		s.onCall(n)
	}
	return ctx.Err()
}

func (s *sleeper) calls() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.slept...)
}

func (s *sleeper) total() time.Duration {
	var t time.Duration
	for _, d := range s.calls() {
		t += d
	}
	return t
}

// newClient is a Client for url whose backoff sleeps are instant and recorded.
func newClient(t *testing.T, u string, mod ...func(*Config)) (*Client, *sleeper) {
	t.Helper()
	sl := &sleeper{}
	cfg := Config{BaseURL: u, Retry: RetryPolicy{Sleep: sl.Sleep}}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sl
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// hangUp drops the connection without an answer: a connection error for the client.
func hangUp(t *testing.T, w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Error("response writer cannot hijack")
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func intp(i int) *int { return &i }

func strp(s string) *string { return &s }

// EventLog is a Hook that keeps every event, for tests in this package and in
// client_test (exported from a test file for that reason).
type EventLog struct {
	mu        sync.Mutex
	Requests  []RequestEvent
	Answers   []AnswerEvent
	Errors    []TransportErrorEvent
	Retries   []RetryEvent
	Fallbacks []FallbackEvent
}

func (l *EventLog) OnRequest(e RequestEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Body = append([]byte(nil), e.Body...)
	l.Requests = append(l.Requests, e)
}

func (l *EventLog) OnAnswer(e AnswerEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Answers = append(l.Answers, e)
}

func (l *EventLog) OnTransportError(e TransportErrorEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Errors = append(l.Errors, e)
}

func (l *EventLog) OnRetry(e RetryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Retries = append(l.Retries, e)
}

func (l *EventLog) OnFallback(e FallbackEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Fallbacks = append(l.Fallbacks, e)
}

// Snapshot is a copy of the log, safe to read while requests go on.
func (l *EventLog) Snapshot() EventLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return EventLog{Requests: append([]RequestEvent(nil), l.Requests...), Answers: append([]AnswerEvent(nil), l.Answers...),
		Errors: append([]TransportErrorEvent(nil), l.Errors...), Retries: append([]RetryEvent(nil), l.Retries...),
		Fallbacks: append([]FallbackEvent(nil), l.Fallbacks...)}
}

// String shows every event, for failure messages.
func (l *EventLog) String() string {
	s := l.Snapshot()
	var b strings.Builder
	for _, e := range s.Requests {
		fmt.Fprintf(&b, "request %+v\n", e)
	}
	for _, e := range s.Answers {
		fmt.Fprintf(&b, "answer %+v\n", e)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "error %+v\n", e)
	}
	for _, e := range s.Retries {
		fmt.Fprintf(&b, "retry %+v\n", e)
	}
	for _, e := range s.Fallbacks {
		fmt.Fprintf(&b, "fallback %+v\n", e)
	}
	return b.String()
}
