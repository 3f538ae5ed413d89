package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// The bad-input suite: invalid URLs, nodes that cannot be reached or answer nonsense,
// hostile bytes in what a node sends, and bad flags and files. Each case is one run of
// narad in-process against servers on 127.0.0.1, and must end, within a bound, with
// the documented exit code and one clear line on stderr (`narad: <what> (<hint>)`):
// never a panic, a stack trace, a hang, or a byte that would act on a terminal.

// badHangBound is how long a case may run before it counts as a hang. It is a bound,
// not a timing assertion: every case ends in well under a second or two.
const badHangBound = 240 * time.Second

// badRequestTimeout bounds each request that does not long-poll, in place of the 30 s
// default, in the cases of a node that never answers, so they end quickly (and a
// connection on a loaded machine still comes well within it).
const badRequestTimeout = time.Second

type badCase struct {
	name  string
	args  []string // $URL, $TLS, $OTHER, $DIR are replaced
	stdin string
	env   map[string]string
	// server starts what $URL names; nil means a v3.1 broker with topic t.
	server func(t *testing.T) string
	code   int
	// stderr must match the first line; lines is how many lines stderr holds (default 1).
	stderr string
	lines  int
	stdout string // when set, stdout must match
	check  func(t *testing.T, r cliResult)
	// timeout bounds each request that does not long-poll; zero means the client's
	// default. Only the cases about a silent node shorten it.
	timeout time.Duration
}

// badEnv is what the cases share: a broker, a TLS server, files.
type badEnv struct {
	broker *devbroker.Broker
	legacy *devbroker.Broker
	tls    *httptest.Server
	dir    string
	// otherHits counts requests reaching the "other host" of the redirect case, and
	// otherAuth those that carried credentials.
	otherHits, otherAuth atomic.Int32
	other                *httptest.Server
}

func newBadEnv(t *testing.T) *badEnv {
	e := &badEnv{dir: t.TempDir()}
	var err error
	e.broker, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0",
		Topics: []devbroker.TopicSpec{{Name: "t"}, {Name: "big"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.broker.Close() })
	e.legacy, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Legacy: true,
		Topics: []devbroker.TopicSpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.legacy.Close() })
	e.tls = httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(e.tls.Close)
	e.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.otherHits.Add(1)
		if r.Header.Get("Authorization") != "" {
			e.otherAuth.Add(1)
		}
		io.WriteString(w, `{"topics":[]}`)
	}))
	t.Cleanup(e.other.Close)
	return e
}

// closedPort is a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// rawServer accepts connections and hands each to serve, which owns it.
func rawServer(t *testing.T, serve func(c net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	}()
	t.Cleanup(func() {
		close(done)
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + l.Addr().String()
}

// readRequest reads a request's head off c, so an answer comes after it.
func readRequest(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// answering is an HTTP server whose every answer is status, content type and body.
func answering(status int, ctype, body string) func(t *testing.T) string {
	return func(t *testing.T) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
}

// endless streams a JSON-looking answer of size bytes (forever when size < 0), a chunk
// at a time with pause between chunks, until the client goes away.
func endless(size int64, pause time.Duration) func(t *testing.T) string {
	return func(t *testing.T) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if size >= 0 {
				w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			}
			w.WriteHeader(http.StatusOK)
			n, _ := io.WriteString(w, `{"topics":[`)
			chunk := []byte(strings.Repeat(" ", 32<<10))
			for sent := int64(n); size < 0 || sent < size; sent += int64(len(chunk)) {
				if size >= 0 && size-sent < int64(len(chunk)) {
					chunk = chunk[:size-sent]
				}
				if _, err := w.Write(chunk); err != nil {
					return
				}
				if pause > 0 {
					w.(http.Flusher).Flush()
					select {
					case <-time.After(pause):
					case <-r.Context().Done():
						return
					}
				}
			}
		}))
		t.Cleanup(func() {
			s.CloseClientConnections()
			s.Close()
		})
		return s.URL
	}
}

func badCases(e *badEnv) []badCase {
	const oneMiB = 1 << 20
	consume := func(body string) func(t *testing.T) string {
		return answering(http.StatusOK, "application/json", body)
	}
	return []badCase{
		// --- server URLs ---
		{name: "scheme ftp", args: []string{"-s", "ftp://127.0.0.1:1", "topic", "ls"}, code: ExitUsage,
			stderr: `^narad: invalid server "ftp://127.0.0.1:1" \(want http://HOST:PORT or https://HOST\)$`},
		{name: "no host", args: []string{"-s", "http://", "topic", "ls"}, code: ExitUsage, stderr: `^narad: invalid server "http://"`},
		{name: "port out of range", args: []string{"-s", "http://127.0.0.1:99999", "topic", "ls"}, code: ExitUsage,
			stderr: `a port is 1 to 65535`},
		{name: "credentials in the URL are not shown", args: []string{"-s", "http://u:SECRET@127.0.0.1:1", "topic", "ls"},
			code: ExitUsage, stderr: `put credentials in --user and --password`},
		{name: "unclosed IPv6 bracket", args: []string{"-s", "http://[::1", "topic", "ls"}, code: ExitUsage,
			stderr: `^narad: invalid server`},
		{name: "control bytes in the URL", args: []string{"-s", "http://127.0.0.1\x1b[2J:1", "topic", "ls"}, code: ExitUsage,
			stderr: `^narad: invalid server`},
		{name: "query in the URL", args: []string{"-s", "http://127.0.0.1:1/?x=1", "topic", "ls"}, code: ExitUsage,
			stderr: `no query or fragment allowed`},
		{name: "host:port without a scheme is http", args: []string{"-s", "$HOSTPORT", "topic", "ls"}, code: ExitOK, lines: -1,
			stdout: `(?m)^t\s+3`},

		// --- nodes that cannot be reached ---
		{name: "closed port, topic ls", server: closedPort, args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: .*connection refused \(cannot reach http://127\.0\.0\.1:\d+; check --server or the context\)$`},
		{name: "closed port, sub", server: closedPort, args: []string{"-s", "$URL", "sub", "t"}, code: ExitFailed,
			stderr: `connection refused \(cannot reach http://127\.0\.0\.1:\d+; check --server or the context\)$`},
		{name: "closed port, produce", server: closedPort, args: []string{"-s", "$URL", "produce", "t", "x"}, code: ExitFailed,
			stderr: `connection refused \(cannot reach`},
		{name: "closed port, ack", server: closedPort, args: []string{"-s", "$URL", "ack", "t", "0:1:2"}, code: ExitFailed,
			stderr: `connection refused`},
		{name: "TLS to a plain port", args: []string{"-s", "https://$HOSTPORT", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: .*(HTTP response to HTTPS client|first record does not look like a TLS handshake)`},
		{name: "plain http to a TLS port", args: []string{"-s", "http://$TLSHOSTPORT", "topic", "ls"}, code: ExitUsage,
			stderr: `^narad: list topics: 400 Client sent an HTTP request to an HTTPS server\.$`},
		{name: "TLS certificate not trusted", args: []string{"-s", "$TLS", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: .*certificate`},

		// --- nodes that answer nonsense ---
		{name: "garbage instead of HTTP", server: func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) { readRequest(c); io.WriteString(c, "\x1b[2Jgarbage\r\n\r\n") })
		}, args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed, stderr: `^narad: list topics: .*malformed HTTP`},
		{name: "connection closed without an answer", server: func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) { readRequest(c) })
		}, args: []string{"-s", "$URL", "topic", "info", "t"}, code: ExitFailed,
			stderr: `^narad: topic: connection lost before an answer: the node closed the connection without answering \(the node at http://127\.0\.0\.1:\d+ accepted the connection but closed it without an answer\)$`},
		{name: "answer cut short", server: func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) {
				readRequest(c)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"topics\":[")
			})
		}, args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed, stderr: `^narad: list topics: connection lost before an answer: the node's answer was cut short \(the node at http://127\.0\.0\.1:\d+ accepted the connection but closed it without an answer\)$`},
		{name: "truncated JSON, topic ls", server: answering(200, "application/json", `{"topics":[{"name":"a"`),
			args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed, stderr: `^narad: list topics: bad JSON in answer: unexpected end of JSON input`},
		{name: "truncated JSON, consume", server: consume(`{"messages":[{"topic":"t","payload":"x`),
			args: []string{"-s", "$URL", "sub", "t"}, code: ExitFailed, stderr: `^narad: consume: bad JSON in answer`},
		{name: "HTML with 200, topic info", server: answering(200, "text/html", "<html><body>\n<h1>Welcome</h1></body></html>"),
			args: []string{"-s", "$URL", "topic", "info", "t"}, code: ExitFailed, stderr: `^narad: topic: bad JSON in answer: invalid character '<'`},
		{name: "HTML with 200, consume", server: answering(200, "text/html", "<html><body>\n<h1>Welcome</h1></body></html>"),
			args: []string{"-s", "$URL", "sub", "t"}, code: ExitFailed, stderr: `^narad: consume: bad JSON in answer`},
		{name: "HTML error page, one line", server: answering(404, "text/html", "<html>\n<head><title>404 Not Found</title></head>\n<body>\x1b[31mnginx</body>\n</html>"),
			args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed, stderr: `^narad: list topics: 404 <html> <head><title>404 Not Found</title></head> <body>\[31mnginx</body> </html>$`},
		{name: "a 5 KB error body is cut", server: answering(500, "text/plain", strings.Repeat("e", 5000)),
			args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: 500 e{512}… \(5,000 bytes, 4,488 not shown\)`},
		{name: "2 GiB answer, topic ls", server: endless(2<<30, 0), args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: answer of 2,147,483,648 bytes is larger than 64 MiB$`},
		{name: "2 GiB answer, consume", server: endless(2<<30, 0), args: []string{"-s", "$URL", "sub", "t"}, code: ExitFailed,
			stderr: `^narad: consume: answer of 2,147,483,648 bytes is larger than 16 MiB, twice what a batch may be$`},
		{name: "headers never sent", server: func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) { readRequest(c); io.Copy(io.Discard, c) })
		}, args: []string{"-s", "$URL", "topic", "ls"}, code: ExitFailed, timeout: badRequestTimeout,
			stderr: `^narad: list topics: no answer within 1s`},
		{name: "headers never sent, sub --timeout", server: func(t *testing.T) string {
			return rawServer(t, func(c net.Conn) { readRequest(c); io.Copy(io.Discard, c) })
		}, args: []string{"-s", "$URL", "sub", "t", "--count", "1", "--timeout", "500ms"}, code: ExitTimeout, lines: -1},
		{name: "a body that never ends", server: endless(-1, 20*time.Millisecond), args: []string{"-s", "$URL", "topic", "info", "t"},
			code: ExitFailed, timeout: badRequestTimeout, stderr: `^narad: topic: no answer within 1s`},
		{name: "redirect to another host", server: func(t *testing.T) string {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, e.other.URL+r.URL.Path, http.StatusFound)
			}))
			t.Cleanup(s.Close)
			return s.URL
		}, args: []string{"-s", "$URL", "-u", "app", "-p", "SECRET", "topic", "ls"}, code: ExitFailed,
			stderr: `^narad: list topics: 302 redirect to http://127\.0\.0\.1:\d+/v1/topics \(narad does not follow redirects; give --server the node's own address\)$`, check: func(t *testing.T, r cliResult) {
				if n := e.otherHits.Load(); n != 0 {
					t.Errorf("the redirect was followed: %d requests reached the other host (%d with credentials)", n, e.otherAuth.Load())
				}
			}},

		// --- hostile bytes from the node ---
		{name: "Go-escaped \\x01 key (older node)", server: func(t *testing.T) string {
			if _, _, err := e.legacy.Produce("t", "\x01k\xff", []byte("v")); err != nil {
				t.Fatal(err)
			}
			return e.legacy.URL()
		}, args: []string{"-s", "$URL", "sub", "t", "--count", "1", "--utc"}, code: ExitOK, lines: -1,
			stdout: `^\[p\d+ @\d+\] key=\\x01k\\xff \d\d:\d\d:\d\d v\n$`},
		{name: "invalid UTF-8 key as JSON", server: consume("{\"topic\":\"t\",\"partition\":0,\"offset\":0,\"key\":\"\xff\xfe\",\"payload\":\"v\",\"timestamp\":0,\"receipt_handle\":\"0:0:1\"}"),
			args: []string{"-s", "$URL", "sub", "t", "--count", "1", "--no-ack", "--max", "1", "--utc"}, code: ExitOK, lines: -1,
			stdout: "^\\[p0 @0\\] key=\uFFFD\uFFFD 00:00:00 v\n$"},
		{name: "ANSI and bidi in payload and key", server: func(t *testing.T) string {
			if _, _, err := e.broker.Produce("t", "k\x1b]0;owned\x07\u202e", []byte("\x1b[2J\x1b[31mred\u202egnp.exe\u009b")); err != nil {
				t.Fatal(err)
			}
			return e.broker.URL()
		}, args: []string{"-s", "$URL", "sub", "t", "--count", "1", "--utc"}, code: ExitOK, lines: -1,
			stdout: `^\[p\d+ @\d+\] key=k\\x1b\]0;owned\\x07\\u202e \d\d:\d\d:\d\d \\x1b\[2J\\x1b\[31mred\\u202egnp\.exe\\u009b\n$`},
		{name: "ANSI and bidi in topic names from the node", server: answering(200, "application/json",
			`{"topics":[{"name":"a\u001b[2J\u202eb","partitions":1,"visibility_timeout_ms":30000,"retention_ms":1000}]}`),
			args: []string{"-s", "$URL", "topic", "ls"}, code: ExitOK, lines: -1, stdout: `a\\x1b\[2J\\u202eb`},
		{name: "ANSI and bidi in the node's error text", server: answering(403, "application/json",
			`{"error":"denied \u001b[31m\u009b\u202eevil\nsecond line"}`),
			args: []string{"-s", "$URL", "topic", "info", "t"}, code: ExitFailed,
			stderr: `^narad: topic: 403 denied \[31m\\u202eevil second line \(the user has no grant on topic t\)$`},
		{name: "ANSI in a topic name argument", args: []string{"produce", "t\x1b[2J\u202e", "x"}, code: ExitUsage,
			stderr: `^narad: invalid topic name "t\\x1b\[2J\\u202e"`},

		// --- flags ---
		{name: "unknown flag", args: []string{"sub", "t", "--bogus"}, code: ExitUsage, stderr: `^narad: unknown flag: --bogus \(see --help\)$`},
		{name: "unknown command", args: []string{"sbu", "t"}, code: ExitUsage, stderr: `^narad: unknown command "sbu" for "narad" \(did you mean sub\?`},
		{name: "bad duration", args: []string{"sub", "t", "--wait", "5x"}, code: ExitUsage, stderr: `^narad: invalid --wait "5x": not a duration`},
		{name: "negative duration", args: []string{"sub", "t", "--timeout", "-1s"}, code: ExitUsage, stderr: `must not be negative`},
		{name: "negative count, sub", args: []string{"sub", "t", "--count", "-1"}, code: ExitUsage, stderr: `^narad: --count must not be negative$`},
		{name: "negative count, produce", args: []string{"produce", "t", "x", "--count", "-3"}, code: ExitUsage, stderr: `^narad: invalid --count -3 \(1 or more\)$`},
		{name: "zero concurrency", args: []string{"produce", "t", "x", "-j", "0"}, code: ExitUsage, stderr: `invalid --concurrency 0`},
		{name: "max over 100", args: []string{"sub", "t", "--max", "101"}, code: ExitUsage, stderr: `--max must be 1\.\.100`},
		{name: "bad color", args: []string{"--color", "pink", "topic", "ls"}, code: ExitUsage, stderr: `invalid --color "pink"`},
		{name: "bad output", args: []string{"sub", "t", "-o", "yaml"}, code: ExitUsage, stderr: `^narad: invalid --output "yaml" \(text, json or raw\)$`},
		{name: "bad template", args: []string{"sub", "t", "--template", "{{.Nope}}"}, code: ExitUsage, stderr: `Nope`},
		{name: "partition the topic lacks", args: []string{"sub", "t", "--partition", "7"}, code: ExitUsage,
			stderr: `^narad: consume: 400 .*\(see narad topic info t\)$`},

		// --- messages ---
		{name: "empty message", args: []string{"produce", "t", ""}, code: ExitFailed, lines: 2,
			stderr: `^narad: argument 1: 400 .*\(0 bytes; a message needs at least one byte\)$`},
		{name: "empty stdin as one message", args: []string{"produce", "t"}, code: ExitFailed, lines: 2,
			stderr: `^narad: stdin: 400 .*a message needs at least one byte\)$`},
		{name: "empty stdin with --lines", args: []string{"produce", "t", "--lines"}, code: ExitOK,
			stderr: `^produced 0 messages \(0 B\) in `},
		{name: "1 MiB + 1", args: []string{"produce", "big", "--file", "$DIR/big"}, code: ExitFailed, lines: 2,
			stderr: `^narad: file .*/big: 413 .*\(1048577 bytes; a message is at most 1 MiB\)$`},
		{name: "missing --file", args: []string{"produce", "t", "--file", "$DIR/nope"}, code: ExitUsage,
			stderr: `^narad: cannot open --file: .*/nope: no such file or directory$`},
		{name: "--file is a directory", args: []string{"produce", "t", "--file", "$DIR"}, code: ExitUsage, stderr: `is a directory`},
		{name: "bad --json line", args: []string{"produce", "t", "--json"}, stdin: "{\"payload\":\n", code: ExitFailed, lines: 2,
			stderr: `^narad: line 1: not a JSON message line`},

		// --- handles ---
		{name: "garbage handle", args: []string{"ack", "t", "not-a-handle"}, code: ExitUsage,
			stderr: `^narad: ack not-a-handle: failed \(400 `},
		{name: "a 100 KB handle is cut on the error line", args: []string{"ack", "t", strings.Repeat("x", 100_000)}, code: ExitUsage,
			stderr: `^narad: ack x{200}… \(100,000 bytes, 99,800 not shown\): failed \(400 receipt handle is malformed\)$`},
		{name: "hostile handle", args: []string{"ack", "t", "\x1b[2J\u202e"}, code: ExitUsage,
			stderr: `^narad: ack \\x1b\[2J\\u202e: failed \(400 `},
		{name: "101+ handles", args: append([]string{"ack", "t"}, handles(150)...), code: ExitLeaseGone, lines: 150,
			stderr: `^narad: ack 0:\d+:1: lease gone \(410 `},
		{name: "empty stdin for ack -", args: []string{"ack", "t", "-"}, code: ExitUsage,
			stderr: `^narad: no receipt handles on stdin`},
		{name: "empty handle argument", args: []string{"ack", "t", ""}, code: ExitUsage,
			stderr: `^narad: empty receipt handle argument \(an unset variable\? pass the handle, or - to read them from stdin\)$`},

		// --- config ---
		{name: "bad YAML", args: []string{"topic", "ls"}, env: map[string]string{"NARAD_CONFIG": "$DIR/bad.yaml"}, code: ExitUsage,
			stderr: `^narad: config .*/bad\.yaml is not valid YAML: .* \(fix it, or name another file with --config\)$`},
		{name: "config is a directory", args: []string{"topic", "ls"}, env: map[string]string{"NARAD_CONFIG": "$DIR"}, code: ExitUsage,
			stderr: `^narad: config .* is not a regular file but a directory \(name a regular file with --config\)$`},
		{name: "unknown context", args: []string{"--context", "nope", "topic", "ls"}, code: ExitUsage,
			stderr: `^narad: no context named "nope" \(see narad context ls\)$`},
		{name: "unknown context from the environment", args: []string{"topic", "ls"}, env: map[string]string{"NARAD_CONTEXT": "nope"},
			code: ExitUsage, stderr: `^narad: no context named "nope"`},
	}
}

func handles(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("0:%d:1", i)
	}
	return hs
}

func TestBadInput(t *testing.T) {
	e := newBadEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, "big"), []byte(strings.Repeat("x", 1<<20+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "bad.yaml"), []byte("contexts:\n  a: [\n\tb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := badCases(e)
	if len(cases) < 40 {
		t.Fatalf("%d cases; the suite promises 40 or more", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := e.broker.URL()
			if tc.server != nil {
				url = tc.server(t)
			}
			vars := strings.NewReplacer("$URL", url, "$HOSTPORT", strings.TrimPrefix(e.broker.URL(), "http://"),
				"$TLSHOSTPORT", strings.TrimPrefix(e.tls.URL, "https://"), "$TLS", e.tls.URL, "$DIR", e.dir)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = vars.Replace(a)
			}
			env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml"), "NARAD_ADDR": e.broker.URL()}
			for k, v := range tc.env {
				env[k] = vars.Replace(v)
			}
			r := runBounded(t, tc.stdin, env, args, tc.timeout)
			t.Logf("exit %d, stderr %q", r.code, r.stderr)
			checkBadResult(t, tc, r)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// runBounded runs narad in-process; one that has not ended within badHangBound is sent
// two SIGINTs and reported as a hang.
func runBounded(t *testing.T, stdin string, env map[string]string, args []string, timeout time.Duration) cliResult {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.In = strings.NewReader(stdin)
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals(),
		requestTimeout: timeout}
	done := make(chan int, 1)
	go func() { done <- Run(f, args) }()
	select {
	case code := <-done:
		return cliResult{code, out.String(), errOut.String()}
	case <-time.After(badHangBound):
		f.Signals.Trigger(syscall.SIGINT)
		f.Signals.Trigger(syscall.SIGINT)
		select {
		case <-done:
			t.Fatalf("hang: still running after %s; ended by two SIGINTs", badHangBound)
		case <-time.After(10 * time.Second):
			t.Fatalf("hang: still running after %s and ignores SIGINT", badHangBound)
		}
	}
	return cliResult{}
}

func checkBadResult(t *testing.T, tc badCase, r cliResult) {
	t.Helper()
	report := func() string { return fmt.Sprintf("\nexit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr) }
	if r.code != tc.code {
		t.Errorf("exit %d, want %d%s", r.code, tc.code, report())
	}
	for _, bad := range []string{"panic", "goroutine ", "internal error", ".go:"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr holds %q%s", bad, report())
		}
	}
	if what := terminalActive(r.stderr); what != "" {
		t.Errorf("stderr holds %s%s", what, report())
	}
	if strings.Contains(r.stderr, "SECRET") || strings.Contains(r.stdout, "SECRET") {
		t.Errorf("a password was printed%s", report())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		// A retry notice comes once the retries pass a few seconds, which depends on
		// how busy the machine is: it is not the case's one line.
		if !strings.Contains(l, "; retrying") {
			lines = append(lines, l)
		}
	}
	want := tc.lines
	if want == 0 {
		want = 1
	}
	if want > 0 && (len(lines) != want || !strings.HasSuffix(r.stderr, "\n")) {
		t.Errorf("%d lines on stderr, want %d%s", len(lines), want, report())
	}
	if tc.stderr != "" && !regexp.MustCompile(tc.stderr).MatchString(lines[0]) {
		t.Errorf("stderr's first line does not match %s%s", tc.stderr, report())
	}
	for _, l := range lines {
		if want > 0 && l != "" && !strings.HasPrefix(l, "narad: ") && !strings.HasPrefix(l, "produced ") {
			t.Errorf("stderr line %q is not narad's%s", l, report())
		}
	}
	if tc.stdout != "" && !regexp.MustCompile(tc.stdout).MatchString(r.stdout) {
		t.Errorf("stdout does not match %s%s", tc.stdout, report())
	}
}

// terminalActive names the first character of s that would act on a terminal (other
// than the newlines ending lines), or returns "".
func terminalActive(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("a byte that is not UTF-8 at %d", i)
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("control %U at %d", r, i)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c:
			return fmt.Sprintf("bidi control %U at %d", r, i)
		}
	}
	return ""
}

// TestBadInputLinesMemoryBounded: 100 MiB of --lines, as 64 KiB lines and as one line,
// goes through without being held: the heap in use never grows by as much as the input
// (90 MiB: generous, since a line up to the 16 MiB limit is held and garbage waits for
// the collector).
func TestBadInputLinesMemoryBounded(t *testing.T) {
	var bodies atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/produce/batch") {
			// An older node: one request per message, so what it receives is the input.
			http.NotFound(w, r)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		bodies.Add(n)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"partition":0,"offset":0}`)
	}))
	defer s.Close()
	const total = 100 << 20
	for _, tc := range []struct {
		name    string
		line    int
		code    int
		stderr  string
		wantOut int64
	}{
		{"64 KiB lines", 64 << 10, ExitOK, `^produced 1600 messages \(100\.0 MiB\) in `, total - 1600},
		{"one line of 100 MiB", total, ExitFailed, `(?m)^narad: line 1: over 16(\.0)? MiB, not sent \(104857599 bytes\)$`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodies.Store(0)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var m runtime.MemStats
				for {
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
			ios, _, out, errOut := iostreams.Test()
			ios.In = &linesReader{line: tc.line, left: total}
			f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
			code := Run(f, []string{"-s", s.URL, "produce", "t", "--lines"})
			close(stop)
			<-sampled
			if code != tc.code || !regexp.MustCompile(tc.stderr).MatchString(errOut.String()) {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d and %s", code, errOut, out, tc.code, tc.stderr)
			}
			if got := bodies.Load(); got != tc.wantOut {
				t.Errorf("the node received %d bytes, want %d", got, tc.wantOut)
			}
			grew := int64(peak.Load()) - int64(before.HeapInuse)
			t.Logf("heap in use grew by at most %.1f MiB for 100 MiB of input", float64(grew)/(1<<20))
			if grew > 90<<20 {
				t.Errorf("heap in use grew by %.1f MiB for 100 MiB of input: the input is held", float64(grew)/(1<<20))
			}
		})
	}
}

// linesReader yields left bytes of lines of `line` bytes (the last byte of each a
// newline), without holding them.
type linesReader struct {
	line, pos int
	left      int64
}

func (r *linesReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.left > 0 {
		if r.pos == r.line-1 {
			p[n] = '\n'
			r.pos = 0
		} else {
			p[n] = 'x'
			r.pos++
		}
		n++
		r.left--
	}
	return n, nil
}
