package client

import (
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewNormalisesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7942":          "http://127.0.0.1:7942",
		"http://127.0.0.1:7942/":         "http://127.0.0.1:7942",
		"127.0.0.1:7942":                 "http://127.0.0.1:7942",
		"https://narad.example/prefix//": "https://narad.example/prefix",
		"http://app:s3cret@host:7942/":   "http://host:7942",
	} {
		c, err := New(Config{BaseURL: in})
		if err != nil {
			t.Errorf("New(%q): %v", in, err)
			continue
		}
		if c.BaseURL() != want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", in, c.BaseURL(), want)
		}
	}
}

func TestNewRejects(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for name, cfg := range map[string]Config{
		"empty":        {BaseURL: ""},
		"scheme":       {BaseURL: "ftp://host"},
		"no host":      {BaseURL: "http://"},
		"query":        {BaseURL: "http://host?x=1"},
		"missing CA":   {BaseURL: "https://host", CACertFile: filepath.Join(dir, "nope.pem")},
		"CA never PEM": {BaseURL: "https://host", CACertFile: notPEM},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New(%+v) succeeded", name, cfg)
		}
	}
	// A password in a URL that does not parse must not end up in the error.
	_, err := New(Config{BaseURL: "http://app:s3cret@ho st"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v: want one without the password", err)
	}
}

func TestErrorText(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":"receipt handle no longer matches an active reservation"}`: "receipt handle no longer matches an active reservation",
		"no healthy upstream\n":                    "no healthy upstream",
		"404 page not found\n":                     "404 page not found",
		"  <html>\n<body>Bad gateway</body>  ":     "<html> <body>Bad gateway</body>",
		`{"status":"starting"}`:                    `{"status":"starting"}`,
		`{"error": 42}`:                            `{"error": 42}`,
		"":                                         "",
		"tab\tand\x1b[31mescape":                   "tab and[31mescape",
		`{"error":"two\nlines"}`:                   "two lines",
		"bidi \u202eevil\u200b\u2066!":             `bidi \u202eevil\u200b\u2066!`,
		"not json {\"error\":\"x\"":                "not json {\"error\":\"x\"",
		string([]byte{0xff, 0xfe, 'o', 'k', '\n'}): "\ufffd\ufffdok",
	} {
		if got := errorText([]byte(body)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", body, got, want)
		}
	}
	long := strings.Repeat("x", 5000)
	if got, want := errorText([]byte(long)), strings.Repeat("x", maxErrorText)+"… (5,000 bytes, 4,488 not shown)"; got != want {
		t.Errorf("long body: %q; want %q", got, want)
	}
}

func TestErrorFormatAndHelpers(t *testing.T) {
	e := &Error{Op: OpAck, Status: 410, Message: "receipt handle no longer matches an active reservation"}
	if got, want := e.Error(), "ack: 410 receipt handle no longer matches an active reservation"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&Error{Op: OpConsume, Status: 503}).Error(), "consume: 503 service unavailable"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("settling: %w", e)
	if StatusOf(wrapped) != 410 || !IsGone(wrapped) {
		t.Errorf("StatusOf/IsGone do not see through wrapping")
	}
	if StatusOf(errors.New("x")) != 0 || StatusOf(nil) != 0 || IsGone(nil) {
		t.Errorf("StatusOf of a non-*Error is not 0")
	}
}

// The node's text comes back whatever the body's shape, and a plain-text 404 from a
// router is not a decoding failure.
func TestErrorBodiesJSONAndText(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch r.URL.Path {
		case "/v1/topics/json":
			writeJSON(w, 404, `{"error":"topic not found"}`)
		case "/v1/topics/text":
			writeText(w, 404, "404 page not found\n")
		default:
			writeText(w, 403, "")
		}
	})
	c, _ := newClient(t, n.URL)
	for topic, want := range map[string]string{
		"json":  "topic: 404 topic not found",
		"text":  "topic: 404 page not found", // the status is said once
		"other": "topic: 403 forbidden",
	} {
		_, err := c.Topic(ctxT(t), topic)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err %v is not *Error", topic, err)
			continue
		}
		if err.Error() != want {
			t.Errorf("%s: %q, want %q", topic, err.Error(), want)
		}
	}
}

// Hooks see every request and answer, and never the credentials: no Authorization
// header, no password in a URL, whether the credentials came as fields or in the URL.
func TestHooksNeverSeeCredentials(t *testing.T) {
	const user, pass = "app", "s3cret-Pa55"
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			writeJSON(w, 401, `{"error":"bad credentials"}`)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/consume"):
			w.WriteHeader(204)
		case strings.HasSuffix(r.URL.Path, "/ack"):
			writeJSON(w, 410, `{"error":"receipt handle no longer matches an active reservation"}`)
		default:
			w.WriteHeader(202)
		}
	})
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	for name, cfg := range map[string]Config{
		"fields": {BaseURL: n.URL, User: user, Password: pass},
		"in URL": {BaseURL: strings.Replace(n.URL, "http://", "http://"+user+":"+pass+"@", 1)},
	} {
		var log EventLog
		cfg.Hooks = []Hook{&log}
		cfg.ClientName = "narad/v9.9.9"
		cfg.Retry.Sleep = (&sleeper{}).Sleep
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if _, err := c.Consume(ctx, "orders", ConsumeOptions{Wait: 10 * time.Second, Max: 10}); err != nil {
			t.Errorf("%s: consume: %v", name, err)
		}
		if err := c.Ack(ctx, "orders", "4:0:1"); !IsGone(err) {
			t.Errorf("%s: ack: %v, want 410", name, err)
		}
		if err := c.Produce(ctx, "orders", []byte("x"), ProduceOptions{}); err != nil {
			t.Errorf("%s: produce: %v", name, err)
		}
		got := log.Snapshot()
		want := []Exchange{
			{OpConsume, "GET", n.URL + "/v1/topics/orders/consume?max=10&wait=10s", 1},
			{OpAck, "POST", n.URL + "/v1/topics/orders/ack?receipt_handle=4%3A0%3A1", 1},
			{OpProduce, "POST", n.URL + "/v1/topics/orders/produce", 1},
		}
		if len(got.Requests) != 3 || len(got.Answers) != 3 || len(got.Errors) != 0 || len(got.Retries) != 0 {
			t.Fatalf("%s: events:\n%s", name, log.String())
		}
		for i, w := range want {
			rq, an := got.Requests[i], got.Answers[i]
			if rq.Exchange != w || an.Exchange != w || !rq.Auth {
				t.Errorf("%s: request %+v, answer %+v; want %+v with auth", name, rq, an, w)
			}
			if rq.Header.Get("X-Narad-Client") != "narad/v9.9.9" {
				t.Errorf("%s: %s without X-Narad-Client: %v", name, w.Op, rq.Header)
			}
		}
		if got.Answers[0].Status != 204 || got.Answers[1].Status != 410 || got.Answers[2].Status != 202 {
			t.Errorf("%s: answers %+v", name, got.Answers)
		}
		if string(got.Requests[2].Body) != "x" || got.Requests[2].Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("%s: produce request %+v", name, got.Requests[2])
		}
		text := log.String()
		for _, secret := range []string{pass, auth, "Authorization", "Basic "} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: an event shows %q:\n%s", name, secret, text)
			}
		}
	}
}

// A password in a request's body (user add, user passwd) is sent to the node and given
// to no hook: --curl and -v would print it.
func TestHooksNeverSeeAPasswordInTheBody(t *testing.T) {
	var mu sync.Mutex
	var got []string
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		mu.Lock()
		got = append(got, string(body))
		mu.Unlock()
		if r.Method == http.MethodPost {
			writeJSON(w, 201, `{"username":"ci","grants":[]}`)
			return
		}
		w.WriteHeader(204)
	})
	var log EventLog
	c, _ := newClient(t, n.URL, func(cfg *Config) { cfg.Hooks = []Hook{&log} })
	if _, err := c.CreateUser(ctxT(t), "ci", "new-Pa55", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword(ctxT(t), "ci", "newer-Pa55", "new-Pa55"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !strings.Contains(got[0], `"password":"new-Pa55"`) || !strings.Contains(got[1], `"new_password":"newer-Pa55"`) {
		t.Fatalf("the node got %q", got)
	}
	reqs := log.Snapshot().Requests
	if len(reqs) != 2 {
		t.Fatalf("events:\n%s", log.String())
	}
	for _, e := range reqs {
		if !e.Secret || e.Body != nil {
			t.Errorf("%s: Secret %v, body %q; want the body withheld", e.Op, e.Secret, e.Body)
		}
	}
}

// Every request carries X-Narad-Client: a v3.1 node refuses a batch consume without it
// and a POST with neither it nor a JSON or octet-stream Content-Type (415).
func TestEveryRequestNamesTheClient(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/topics":
			writeJSON(w, 200, `{"topics":[]}`)
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/consume"):
			w.WriteHeader(204)
		case r.Method == "DELETE":
			w.WriteHeader(204)
		case r.URL.Path == "/readyz":
			writeJSON(w, 200, `{"status":"ready"}`)
		default:
			writeJSON(w, 201, `{}`)
		}
	})
	c, _ := newClient(t, n.URL, func(c *Config) { c.ClientName = "narad/v1.2.3" })
	ctx := ctxT(t)
	c.Consume(ctx, "orders", ConsumeOptions{})
	c.Replay(ctx, "orders", 0, 0)
	c.Produce(ctx, "orders", []byte("x"), ProduceOptions{})
	c.Ack(ctx, "orders", "h")
	c.ListTopics(ctx)
	c.CreateTopic(ctx, TopicSpec{Name: "t"})
	c.DeleteTopic(ctx, "t")
	c.Ready(ctx)
	reqs := n.requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("X-Narad-Client"); got != "narad/v1.2.3" {
			t.Errorf("%s %s: X-Narad-Client %q", r.Method, r.Path, got)
		}
	}
}

// A refused connection: every attempt is a transport error event without Sent, the
// retries are announced with their attempt numbers, and no event shows the password.
func TestHooksConnectionError(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {})
	u := n.URL
	n.Close()
	var log EventLog
	c, _ := newClient(t, strings.Replace(u, "http://", "http://app:hunter22@", 1), func(c *Config) { c.Hooks = []Hook{&log} })
	err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{})
	if err == nil {
		t.Fatal("produce to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter22") || strings.Contains(log.String(), "hunter22") {
		t.Errorf("password shown: err %q, events:\n%s", err, log.String())
	}
	got := log.Snapshot()
	if len(got.Errors) != DefaultBoundedAttempts || len(got.Retries) != DefaultBoundedAttempts-1 || len(got.Answers) != 0 {
		t.Fatalf("events:\n%s", log.String())
	}
	for i, e := range got.Errors {
		if e.Attempt != i+1 || e.Sent || e.Op != OpProduce {
			t.Errorf("transport error %d: %+v", i, e)
		}
	}
	var elapsed time.Duration
	for i, e := range got.Retries {
		if e.Attempt != i+2 || e.MaxAttempts != DefaultBoundedAttempts || e.Budget != 0 || e.Status != 0 || e.Err == nil ||
			e.Elapsed <= elapsed {
			t.Errorf("retry %d: %+v", i, e)
		}
		elapsed = e.Elapsed
	}
}

// A hook that observes nothing is a mistake, said at once.
func TestHookThatObservesNothing(t *testing.T) {
	if _, err := New(Config{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{struct{}{}}}); err == nil {
		t.Error("New took a hook that implements no Hook interface")
	}
}

func TestEveryOpHasANameAndAGrant(t *testing.T) {
	names := map[string]Op{}
	for o := opNone + 1; o < opCount; o++ {
		if ops[o].name == "" || o.Grant() == grantUnset || strings.HasPrefix(o.Grant().String(), "Grant(") {
			t.Errorf("Op %d (after %v) has name %q and grant %v", o, o-1, ops[o].name, o.Grant())
		}
		if prev, dup := names[ops[o].name]; dup && !(prev == OpProduce && o == OpProduceBatch) {
			t.Errorf("%v and %d share the name %q", prev, o, ops[o].name)
		}
		names[ops[o].name] = o
	}
	if opNone.Grant() != grantUnset || opCount.Grant() != grantUnset {
		t.Error("an Op that is none has a grant")
	}
	for _, a := range []Action{Ack, Extend, Nack} {
		if a.Op().String() != a.String() {
			t.Errorf("action %v has op %v", a, a.Op())
		}
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"status":"ready"}`)
	}))
	defer srv.Close()
	ctx := ctxT(t)

	// Unknown CA: refused, and not retried (it would fail the same way every time).
	var log EventLog
	c, _ := newClient(t, srv.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	if err := c.Ready(ctx); err == nil {
		t.Error("an untrusted certificate was accepted")
	}
	if _, err := c.Topic(ctx, "orders"); err == nil || len(log.Snapshot().Errors) != 2 {
		t.Errorf("certificate failure: err %v, events:\n%s", err, log.String())
	}

	c, _ = newClient(t, srv.URL, func(c *Config) { c.Insecure = true })
	if err := c.Ready(ctx); err != nil {
		t.Errorf("insecure: %v", err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ = newClient(t, srv.URL, func(c *Config) { c.CACertFile = ca })
	if err := c.Ready(ctx); err != nil {
		t.Errorf("with the CA file: %v", err)
	}
}

func TestReady(t *testing.T) {
	ready := false
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		if r.URL.Path != "/readyz" {
			t.Errorf("path %s", r.URL.Path)
		}
		if ready {
			writeJSON(w, 200, `{"status":"ready"}`)
		} else {
			writeJSON(w, 503, `{"status":"starting"}`)
		}
	})
	c, _ := newClient(t, n.URL)
	if err := c.Ready(ctxT(t)); StatusOf(err) != 503 {
		t.Errorf("starting: %v, want 503", err)
	}
	if len(n.requests()) != 1 {
		t.Errorf("readyz was retried: %d requests", len(n.requests()))
	}
	ready = true
	if err := c.Ready(ctxT(t)); err != nil {
		t.Errorf("ready: %v", err)
	}
}

func TestHeadersAndKeepAlive(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(202)
	})
	c, _ := newClient(t, n.URL, func(c *Config) { c.UserAgent = "narad/1.2.3" })
	for i := 0; i < 20; i++ {
		if err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(conns) != 1 {
		t.Errorf("20 sequential requests used %d connections, want 1", len(conns))
	}
	r := n.requests()[0]
	if r.Header.Get("User-Agent") != "narad/1.2.3" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers %v", r.Header)
	}
}
