package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Config is how to reach a node.
type Config struct {
	// BaseURL is the node, e.g. "http://127.0.0.1:7942"; a trailing slash is fine, a
	// missing scheme means http://, and credentials in it (http://u:p@host) are used
	// when User is empty but are never printed.
	BaseURL        string
	User, Password string // Basic auth when User != ""
	CACertFile     string // PEM file of CAs trusted on top of the system pool
	Insecure       bool   // skip TLS verification
	UserAgent      string // default "narad-cli"
	// ClientName is the X-Narad-Client header every request carries, "name/version"
	// (default "narad-cli"): a v3.1 node refuses a batch consume without it, and a
	// POST with neither it nor a JSON or octet-stream Content-Type.
	ClientName string
	// Timeout bounds each request that does not long-poll (default DefaultTimeout);
	// a consume gets its wait on top of it.
	Timeout time.Duration
	Retry   RetryPolicy
	// Hooks observe every request, answer, retry and fallback (see Hook).
	Hooks []Hook
	// HTTPClient replaces the client's own (tests); CACertFile and Insecure are then
	// the caller's business.
	HTTPClient *http.Client
}

// Client makes typed calls to one node. It is safe for concurrent use, and meant to
// be shared: its connections are kept alive and reused.
type Client struct {
	// reached is set once any request got an HTTP answer: until then a connection
	// error more likely means a wrong address than a node restarting.
	reached atomic.Bool

	base       string // scheme://host[/prefix], no trailing slash, no credentials
	user, pass string
	hasAuth    bool
	ua, name   string
	retry      RetryPolicy
	timeout    time.Duration // of a request that does not long-poll
	http       *http.Client
	hooks      hooks
	// The values of the headers every request carries, shared by all of them (the
	// transport only reads them): a slice a header per request was a tenth of what a
	// request allocated.
	nameHeader, uaHeader []string

	// What this node turned out not to speak, learned once per Client: an older node
	// answers a batch ack with 400 "receipt_handle required" and ignores max on consume.
	legacySettle  atomic.Bool
	legacyConsume atomic.Bool
	legacyProduce atomic.Bool // the router answered produce/batch 404

	// reading bounds the bytes of the answers being read at once (see readBody).
	reading readBudget
}

const (
	// DefaultTimeout bounds every request that does not long-poll; a consume gets its
	// wait on top of it, since the node answers at the wait (or its cap) and the
	// request must not time out before the node had its chance to.
	DefaultTimeout = 30 * time.Second
	// maxConns sizes the idle pool for about this many requests in flight (-j, produce
	// concurrency) so that connections are reused instead of re-dialled.
	maxConns = 64
	// maxBody bounds what is read of an answer: a batch is at most 8 MiB by contract,
	// and its first message always goes whatever its size.
	maxBody = 64 << 20
)

// New checks cfg and builds a Client. It fails on a URL that is not http(s) or on a
// CA file that cannot be read or holds no certificate.
func New(cfg Config) (*Client, error) {
	u, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		user:    cfg.User,
		pass:    cfg.Password,
		hasAuth: cfg.User != "",
		ua:      orDefault(cfg.UserAgent, "narad-cli"),
		name:    orDefault(cfg.ClientName, "narad-cli"),
		timeout: cfg.Timeout,
		retry:   cfg.Retry.withDefaults(),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	c.nameHeader, c.uaHeader = []string{c.name}, []string{c.ua}
	if c.hooks, err = newHooks(cfg.Hooks); err != nil {
		return nil, err
	}
	if u.User != nil && !c.hasAuth {
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
		c.hasAuth = true
	}
	u.User = nil
	c.base = strings.TrimRight(u.String(), "/")

	if cfg.HTTPClient != nil {
		c.http = cfg.HTTPClient
		return c, nil
	}
	tr, err := newTransport(cfg, u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	// No http.Client.Timeout: each request gets its own deadline through its context,
	// because a long-polling consume needs a longer one than an ack.
	c.http = &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
	return c, nil
}

// parseBaseURL reads a node's address (http:// when it names no scheme) and refuses
// what cannot be one; its errors never show the password the address may hold.
func parseBaseURL(base string) (*url.URL, error) {
	raw := strings.TrimSpace(base)
	if raw == "" {
		return nil, errors.New("no server URL")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("server URL %q: %w", redactURL(base), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q: scheme must be http or https", redactURL(base))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q: no host", redactURL(base))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: no query or fragment allowed", redactURL(base))
	}
	return u, nil
}

// newTransport is the client's own connection pool, sized for maxConns requests in
// flight, with the TLS settings of cfg for an https node.
func newTransport(cfg Config, https bool) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 2 * maxConns
	tr.MaxIdleConnsPerHost = maxConns
	if !https {
		return tr, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure}
	if cfg.CACertFile != "" {
		pool, err := caPool(cfg.CACertFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	tr.TLSClientConfig = tc
	return tr, nil
}

// caPool is the system's trusted CAs with those of the PEM file at path added.
func caPool(path string) (*x509.CertPool, error) {
	pem, err := readCACert(path)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA certificate %s: no PEM certificate found", path)
	}
	return pool, nil
}

// maxCACert bounds a CA file: a bundle of every public root is about 200 KB.
const maxCACert = 1 << 20

// readCACert reads a CA file if it is a regular file of at most maxCACert, as the
// config file is read: a FIFO would block narad deaf to Ctrl-C until a writer came,
// and /dev/zero would be read until memory ran out.
func readCACert(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxCACert {
		return nil, fmt.Errorf("%s is larger than 1 MiB", path)
	}
	return os.ReadFile(path)
}

// refuseRedirect makes a redirect an answer (shown as an error) instead of a request
// to wherever it points: the API never redirects, and Go would resend the Basic
// credentials to another port of the same host, or from https to http.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// CloseIdleConnections closes the kept-alive connections that carry no request. A
// program that is done with the node calls it so the node is not left holding
// connections: a server's graceful shutdown waits for a connection it accepted but
// never read a request from, which the transport may have dialled in a burst.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// BaseURL is the node's URL as requests use it: no trailing slash, no credentials.
func (c *Client) BaseURL() string { return c.base }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// redactURL is for error messages about a URL that did not parse: it may hold a password.
// Without "://" url.Parse reads "user:pass@host" as scheme "user" and an opaque rest,
// which Redacted leaves whole, so only a URL with a scheme is redacted by the parser.
func redactURL(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Redacted()
		}
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			return s[:j+3] + "xxxxx" + s[i:]
		}
		return "xxxxx" + s[i:]
	}
	return s
}

// request is one HTTP exchange to make.
type request struct {
	op      Op
	method  string
	path    string // below the base URL, starting with "/"
	query   string // encoded, without the "?"
	header  http.Header
	body    []byte
	ctype   string
	wait    time.Duration // a long poll's wait, added to the client's timeout
	limit   answerLimit   // the most the answer may be; zero: anyAnswer
	attempt int           // 1 for the first attempt of a call; the retry loops count
}

// response is an answer read in full, so the connection goes back to the pool.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) err(op Op) *Error {
	_, isJSON := jsonError(r.body)
	msg := errorText(r.body)
	if loc := r.header.Get("Location"); r.status/100 == 3 && loc != "" {
		// Redirects are not followed (see refuseRedirect): where it points is the news.
		msg = "redirect to " + oneLine(redactURL(loc))
	}
	return &Error{Op: op, Status: r.status, Message: msg, Plain: !isJSON}
}

// send makes one attempt. A transport error comes back wrapped with the op; it is
// ctx's own error when ctx (not the per-request timeout) ended it.
func (c *Client) send(ctx context.Context, r *request) (*response, error) {
	u := c.base + r.path
	if r.query != "" {
		u += "?" + r.query
	}
	timeout := c.timeout + r.wait
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Whether the request went out tells "the node never answered" from "the node
	// could not be reached", which call for different remedies.
	var sent atomic.Bool
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { sent.Store(i.Err == nil) },
	})
	req, err := c.newHTTPRequest(rctx, r, u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.op, err)
	}
	x := Exchange{Op: r.op, Method: r.method, URL: u, Attempt: max(r.attempt, 1)}
	if len(c.hooks.request) > 0 {
		// Cloned before the credentials go in: no hook ever sees them.
		ev := RequestEvent{Exchange: x, Header: req.Header.Clone(), Auth: c.hasAuth, Body: r.body}
		if r.op < opCount && secretBody[r.op] {
			ev.Body, ev.Secret = nil, true
		}
		for _, h := range c.hooks.request {
			h.OnRequest(ev)
		}
	}
	if len(c.hooks.sent) > 0 {
		// The caller's deadline (a --timeout, a refresh's limit) may end it sooner.
		until := timeout
		if dl, ok := ctx.Deadline(); ok {
			until = min(until, time.Until(dl))
		}
		for _, h := range c.hooks.sent {
			h.OnSent(SentEvent{Exchange: x, Wait: r.wait, Timeout: until})
		}
	}
	if c.hasAuth {
		req.SetBasicAuth(c.user, c.pass)
	}

	start := time.Now()
	out, err := c.roundTrip(req, r.limit)
	took := time.Since(start)
	if err == nil {
		for _, h := range c.hooks.answer {
			h.OnAnswer(AnswerEvent{Exchange: x, Status: out.status, Latency: took, BodySize: len(out.body)})
		}
		return out, nil
	}
	err = explainFailure(ctx, err, timeout, sent.Load())
	for _, h := range c.hooks.transport {
		h.OnTransportError(TransportErrorEvent{Exchange: x, Err: err, Latency: took, Sent: sent.Load()})
	}
	return nil, fmt.Errorf("%s: %w", r.op, err)
}

// newHTTPRequest is r as an HTTP request to u, with every header but the credentials.
func (c *Client) newHTTPRequest(ctx context.Context, r *request, u string) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.ctype != "" {
		req.Header["Content-Type"] = contentTypeHeader(r.ctype)
	}
	req.Header["X-Narad-Client"] = c.nameHeader
	req.Header["User-Agent"] = c.uaHeader
	return req, nil
}

// roundTrip sends req and reads the whole answer (at most limit bytes, see readBody),
// naming a connection closed or an answer cut short as such.
func (c *Client) roundTrip(req *http.Request, limit answerLimit) (*response, error) {
	resp, err := c.http.Do(req)
	if errors.Is(err, io.EOF) {
		return nil, &cutError{what: "the node closed the connection without answering", err: err}
	}
	if err != nil {
		return nil, err
	}
	b, err := readBody(resp, &c.reading, limit)
	resp.Body.Close()
	c.reached.Store(true)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, &cutError{what: "the node's answer was cut short", err: err}
	}
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// explainFailure says what a request that got no usable answer ran into: the caller
// giving up, this request's own deadline (after timeout), or a node that took the
// request and never answered (sent).
func explainFailure(ctx context.Context, err error, timeout time.Duration, sent bool) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		// Say which deadline ran out: the bare "context deadline exceeded" reads as if
		// the caller's own deadline had passed.
		return &TimeoutError{After: timeout, Sent: sent, err: err}
	case sent && !errors.Is(err, errBodyTooLarge):
		return &NoAnswerError{Err: err}
	}
	return err
}

// The content types requests carry, as shared header values.
var (
	jsonTypeHeader   = []string{"application/json"}
	binaryTypeHeader = []string{"application/octet-stream"}
)

func contentTypeHeader(ctype string) []string {
	switch ctype {
	case jsonTypeHeader[0]:
		return jsonTypeHeader
	case binaryTypeHeader[0]:
		return binaryTypeHeader
	}
	return []string{ctype}
}

// cutError is a connection that ended before the answer did: a bare "EOF" tells a
// user nothing.
type cutError struct {
	what string
	err  error
}

func (e *cutError) Error() string { return e.what }
func (e *cutError) Unwrap() error { return e.err }

// TimeoutError is a request that got no answer within the client's own timeout
// for it. Sent tells whether the request went out: then the node accepted the
// connection and may have carried the request out, but did not answer in time.
type TimeoutError struct {
	After time.Duration
	Sent  bool
	err   error
}

func (e *TimeoutError) Error() string {
	if e.Sent {
		return fmt.Sprintf("no answer within %s", e.After)
	}
	return fmt.Sprintf("no connection within %s", e.After)
}
func (e *TimeoutError) Unwrap() error   { return e.err }
func (e *TimeoutError) Timeout() bool   { return true }
func (e *TimeoutError) Temporary() bool { return true }

var _ net.Error = (*TimeoutError)(nil)

// NoAnswerError is a request that went out on a working connection which then
// closed (or broke) before an answer came: the node may have carried it out.
type NoAnswerError struct{ Err error }

func (e *NoAnswerError) Error() string { return "connection lost before an answer: " + e.Err.Error() }
func (e *NoAnswerError) Unwrap() error { return e.Err }

func topicPath(topic string, rest string) string {
	return "/v1/topics/" + url.PathEscape(topic) + rest
}

// formatWait renders a wait in the Go syntax the API asks for ("10s", "500ms",
// "1m30s"); a bare number is a 400.
func formatWait(d time.Duration) string { return d.String() }
