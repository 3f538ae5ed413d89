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
	"net/url"
	"os"
	"strings"
	"sync"
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
	Verbose        io.Writer
	UserAgent      string // default "narad-cli"
	ClientName     string // X-Narad-Client value; default "narad-cli"
	Retry          RetryPolicy
	// Timeout bounds each request that does not long-poll; zero means DefaultTimeout.
	Timeout time.Duration
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
	verbose    io.Writer
	verboseMu  sync.Mutex

	// What this node turned out not to speak, learned once per Client: an older node
	// answers a batch ack with 400 "receipt_handle required" and ignores max on consume.
	legacySettle  atomic.Bool
	legacyConsume atomic.Bool
}

const (
	// DefaultTimeout bounds every request that does not long-poll.
	DefaultTimeout = 30 * time.Second
	// consumeSlack is added to a consume's wait: the node answers at the wait (or its
	// cap), and the request must not time out before the node had its chance to.
	consumeSlack = 30 * time.Second
	// maxConns sizes the idle pool for about this many requests in flight (-j, produce
	// concurrency) so that connections are reused instead of re-dialled.
	maxConns = 64
	// maxBody bounds what is read of an answer: a batch is at most 8 MiB by contract,
	// and its first message always goes whatever its size.
	maxBody = 64 << 20
)

var errBodyTooLarge = errors.New("answer larger than 64 MiB")

// New checks cfg and builds a Client. It fails on a URL that is not http(s) or on a
// CA file that cannot be read or holds no certificate.
func New(cfg Config) (*Client, error) {
	raw := strings.TrimSpace(cfg.BaseURL)
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
		return nil, fmt.Errorf("server URL %q: %w", redactURL(cfg.BaseURL), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q: scheme must be http or https", redactURL(cfg.BaseURL))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q: no host", redactURL(cfg.BaseURL))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: no query or fragment allowed", redactURL(cfg.BaseURL))
	}
	c := &Client{
		user:    cfg.User,
		pass:    cfg.Password,
		hasAuth: cfg.User != "",
		ua:      orDefault(cfg.UserAgent, "narad-cli"),
		name:    orDefault(cfg.ClientName, "narad-cli"),
		retry:   cfg.Retry.withDefaults(),
		timeout: cfg.Timeout,
		verbose: cfg.Verbose,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
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
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 2 * maxConns
	tr.MaxIdleConnsPerHost = maxConns
	if u.Scheme == "https" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure}
		if cfg.CACertFile != "" {
			pem, err := os.ReadFile(cfg.CACertFile)
			if err != nil {
				return nil, fmt.Errorf("CA certificate: %w", err)
			}
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("CA certificate %s: no PEM certificate found", cfg.CACertFile)
			}
			tc.RootCAs = pool
		}
		tr.TLSClientConfig = tc
	}
	// No http.Client.Timeout: each request gets its own deadline through its context,
	// because a long-polling consume needs a longer one than an ack.
	c.http = &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
	return c, nil
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
	op      string
	method  string
	path    string // below the base URL, starting with "/"
	query   url.Values
	header  http.Header
	body    []byte
	ctype   string
	timeout time.Duration // 0 means the Client's
}

// response is an answer read in full, so the connection goes back to the pool.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) err(op string) *Error {
	msg := errorText(r.body)
	if loc := r.header.Get("Location"); r.status/100 == 3 && loc != "" {
		// Redirects are not followed (see refuseRedirect): where it points is the news.
		msg = "redirect to " + oneLine(redactURL(loc))
	}
	return &Error{Op: op, Status: r.status, Message: msg}
}

// send makes one attempt. A transport error comes back wrapped with the op; it is
// ctx's own error when ctx (not the per-request timeout) ended it.
func (c *Client) send(ctx context.Context, r *request) (*response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	timeout := r.timeout
	if timeout <= 0 {
		timeout = c.timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(rctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.op, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	req.Header.Set("User-Agent", c.ua)
	if c.hasAuth {
		req.SetBasicAuth(c.user, c.pass)
	}

	start := time.Now()
	resp, err := c.http.Do(req)
	if errors.Is(err, io.EOF) {
		err = &cutError{what: "the node closed the connection without answering", err: err}
	}
	var out *response
	if err == nil {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		resp.Body.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = &cutError{what: "the node's answer was cut short", err: err}
		}
		if err == nil && len(b) > maxBody {
			err = errBodyTooLarge
		}
		out = &response{status: resp.StatusCode, header: resp.Header, body: b}
		c.reached.Store(true)
	}
	c.logRequest(r.method, u, out, err, time.Since(start))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", r.op, ctx.Err())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// Say which deadline ran out: the bare "context deadline exceeded" reads
			// as if the caller's own deadline had passed.
			err = &timeoutError{after: timeout, err: err}
		}
		return nil, fmt.Errorf("%s: %w", r.op, err)
	}
	return out, nil
}

// cutError is a connection that ended before the answer did: a bare "EOF" tells a
// user nothing.
type cutError struct {
	what string
	err  error
}

func (e *cutError) Error() string { return e.what }
func (e *cutError) Unwrap() error { return e.err }

type timeoutError struct {
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string   { return fmt.Sprintf("no answer within %s", e.after) }
func (e *timeoutError) Unwrap() error   { return e.err }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

var _ net.Error = (*timeoutError)(nil)

// logRequest writes the verbose line. The URL never holds credentials (New strips
// them) and headers are never printed, so the Authorization header cannot leak.
func (c *Client) logRequest(method, u string, r *response, err error, d time.Duration) {
	if c.verbose == nil {
		return
	}
	if d >= time.Millisecond {
		d = d.Round(100 * time.Microsecond)
	} else {
		d = d.Round(time.Microsecond)
	}
	var line string
	if err != nil {
		// The *url.Error around it repeats the method and URL already on the line.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		line = fmt.Sprintf("%s %s error: %v (%s)\n", method, u, err, d)
	} else {
		line = fmt.Sprintf("%s %s %d %s (%s)\n", method, u, r.status, http.StatusText(r.status), d)
	}
	c.note(line)
}

// note writes one whole line to Verbose; the lock keeps concurrent lines apart.
func (c *Client) note(line string) {
	if c.verbose == nil {
		return
	}
	c.verboseMu.Lock()
	defer c.verboseMu.Unlock()
	io.WriteString(c.verbose, line)
}

func topicPath(topic string, rest string) string {
	return "/v1/topics/" + url.PathEscape(topic) + rest
}

// formatWait renders a wait in the Go syntax the API asks for ("10s", "500ms",
// "1m30s"); a bare number is a 400.
func formatWait(d time.Duration) string { return d.String() }
