package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/iostreams"
)

// settleServer is a fake v3.1 node whose acks (batch or single) answer by handle:
// "gone-*" 410, "bad-*" 400, anything else 204. It records each request's handles.
type settleServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests [][]string
	extend   []string
	seen     chan struct{} // a value per ack request
}

func newSettleServer(t *testing.T) *settleServer {
	s := &settleServer{seen: make(chan struct{}, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			io.WriteString(w, `{"status":"ready"}`)
			return
		}
		if r.URL.Path == "/v1/topics/nope/ack" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"topic \"nope\" not found"}`)
			return
		}
		var body struct {
			ReceiptHandles []string `json:"receipt_handles"`
		}
		single := r.URL.Query().Get("receipt_handle")
		if single != "" {
			body.ReceiptHandles = []string{single}
		} else {
			json.NewDecoder(r.Body).Decode(&body)
		}
		s.mu.Lock()
		s.requests = append(s.requests, body.ReceiptHandles)
		s.extend = append(s.extend, r.URL.Query().Get("extend"))
		s.mu.Unlock()
		type result struct {
			Status int    `json:"status"`
			Error  string `json:"error,omitempty"`
		}
		var res []result
		for _, h := range body.ReceiptHandles {
			switch {
			case strings.HasPrefix(h, "gone"):
				res = append(res, result{410, "receipt handle no longer matches an active reservation"})
			case strings.HasPrefix(h, "bad"):
				res = append(res, result{400, "receipt handle is malformed"})
			default:
				res = append(res, result{Status: 204})
			}
		}
		if single != "" {
			w.WriteHeader(res[0].Status)
			if res[0].Error != "" {
				json.NewEncoder(w).Encode(map[string]string{"error": res[0].Error})
			}
		} else {
			json.NewEncoder(w).Encode(map[string]any{"results": res})
		}
		s.seen <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *settleServer) got() ([][]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests), slices.Clone(s.extend)
}

func TestSettleExitCodesAndLines(t *testing.T) {
	s := newSettleServer(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderr  string
		extends string
	}{
		{"all settled", []string{"ack", "t", "1:0:1", "1:0:2"}, 0, "", "", ""},
		{"some gone", []string{"ack", "t", "1:0:1", "gone-1"}, ExitLeaseGone, "",
			"narad: ack gone-1: lease gone (410 receipt handle no longer matches an active reservation)\n", ""},
		{"a malformed handle is invalid input, and outranks gone", []string{"nack", "t", "gone-1", "bad-1"}, ExitUsage, "",
			"narad: nack gone-1: lease gone (410 receipt handle no longer matches an active reservation)\n" +
				"narad: nack bad-1: failed (400 receipt handle is malformed)\n", "0"},
		{"json", []string{"extend", "t", "a", "gone-1", "-o", "json"}, ExitLeaseGone,
			`{"receipt_handle":"a","status":204}` + "\n" +
				`{"receipt_handle":"gone-1","status":410,"error":"receipt handle no longer matches an active reservation"}` + "\n",
			"", "true"},
		{"control characters escaped", []string{"ack", "t", "gone-\x1b[31m"}, ExitLeaseGone, "",
			"narad: ack gone-\\x1b[31m: lease gone (410 receipt handle no longer matches an active reservation)\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, false, append(tt.args, "-s", s.URL)...)
			if r.code != tt.code || r.stdout != tt.stdout || r.stderr != tt.stderr {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q",
					r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
			_, ext := s.got()
			if ext[len(ext)-1] != tt.extends {
				t.Errorf("extend=%q, want %q", ext[len(ext)-1], tt.extends)
			}
		})
	}
}

func TestSettleStdinLines(t *testing.T) {
	s := newSettleServer(t)
	in := "1:0:1\n\n  1:0:2  \r\n" +
		`{"topic":"t","partition":1,"offset":3,"payload":"x","receipt_handle":"1:3:9"}` + "\n" +
		`{"topic":"t","payload":"peeked"}` + "\n" +
		"{broken\n"
	r := runCLI(t, strings.NewReader(in), false, "ack", "t", "first", "-", "-s", s.URL)
	if r.code != ExitFailed {
		t.Errorf("exit %d, want 1 for the lines without a handle", r.code)
	}
	reqs, _ := s.got()
	if want := [][]string{{"first", "1:0:1", "1:0:2", "1:3:9"}}; !slices.EqualFunc(reqs, want, slices.Equal) {
		t.Errorf("requests %q, want %q", reqs, want)
	}
	wantErr := "narad: line 5: no receipt_handle (a message from --peek or replay holds no lease)\n" +
		"narad: line 6: not a JSON message line: "
	if !strings.HasPrefix(r.stderr, wantErr) || strings.Count(r.stderr, "\n") != 2 {
		t.Errorf("stderr %q, want the two bad lines reported", r.stderr)
	}
}

// Handles read from a pipe are settled as they come, not at the end of input: those
// of a running `sub` would otherwise lose their leases while it runs.
func TestSettleStreamsStdin(t *testing.T) {
	s := newSettleServer(t)
	pr, pw := io.Pipe()
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, pr, false, "ack", "t", "-", "-s", s.URL) }()
	io.WriteString(pw, "1:0:1\n1:0:2\n")
	select {
	case <-s.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("no ack was sent while stdin stayed open")
	}
	io.WriteString(pw, "1:0:3\n")
	pw.Close()
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	reqs, _ := s.got()
	if want := [][]string{{"1:0:1", "1:0:2"}, {"1:0:3"}}; !slices.EqualFunc(reqs, want, slices.Equal) {
		t.Errorf("requests %q, want %q", reqs, want)
	}
}

func TestSettleFatal(t *testing.T) {
	s := newSettleServer(t)
	r := runCLI(t, strings.NewReader("a\nb\n"), false, "ack", "nope", "-", "-s", s.URL)
	want := "narad: ack: 404 topic \"nope\" not found (no topic nope on " + s.URL + "; see narad topic ls)\n"
	if r.code != ExitFailed || r.stderr != want {
		t.Errorf("exit %d stderr %q, want 1 and %q", r.code, r.stderr, want)
	}

	r = runCLI(t, nil, false, "ack", "t", "a", "-s", "http://127.0.0.1:1")
	if r.code != ExitFailed || !strings.Contains(r.stderr, "(cannot reach http://127.0.0.1:1; check --server or the context)") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d stderr %q, want one line saying the node cannot be reached", r.code, r.stderr)
	}
}

func TestSettleUsage(t *testing.T) {
	for _, args := range [][]string{{"ack", "t"}, {"ack"}, {"nack", "t", "-", "-"}, {"extend", "t", "h", "-o", "yaml"}, {"ack", "t", " "}} {
		r := runCLI(t, nil, false, args...)
		if r.code != ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "narad: ") {
			t.Errorf("%q: exit %d stderr %q, want one usage line and exit 2", args, r.code, r.stderr)
		}
	}
	// Empty stdin is no handles too, found out after reading it.
	s := newSettleServer(t)
	r := runCLI(t, strings.NewReader("\n\n"), false, "ack", "t", "-", "-s", s.URL)
	if r.code != ExitUsage {
		t.Errorf("empty stdin: exit %d stderr %q, want 2", r.code, r.stderr)
	}
}

func TestSettleCmdAction(t *testing.T) {
	for name, a := range map[string]client.Action{"ack": client.Ack, "extend": client.Extend, "nack": client.Nack} {
		ios, _, _, _ := iostreams.Test()
		var got *SettleOptions
		cmd := settleCmd(&Factory{IO: ios}, name, a, func(o *SettleOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"orders", "h1", "h2"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Action != a || got.Name != name || got.Topic != "orders" || !slices.Equal(got.Handles, []string{"h1", "h2"}) {
			t.Errorf("%s: options %+v", name, got)
		}
	}
}

func TestParseHandleLine(t *testing.T) {
	tests := []struct {
		line, handle string
		ok           bool
		err          string
	}{
		{"4:0:123", "4:0:123", true, ""},
		{"  4:0:123 \r", "4:0:123", true, ""},
		{"", "", false, ""},
		{" \t", "", false, ""},
		{`{"topic":"t","receipt_handle":"4:0:1","payload":{"a":1}}`, "4:0:1", true, ""},
		{`{"topic":"t","payload":"x"}`, "", true, "no receipt_handle"},
		{`{"receipt_handle":""}`, "", true, "no receipt_handle"},
		{`{"receipt_handle":`, "", true, "not a JSON message line"},
	}
	for _, tt := range tests {
		h, ok, err := parseHandleLine([]byte(tt.line))
		if h != tt.handle || ok != tt.ok || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("parseHandleLine(%q) = %q, %v, %v; want %q, %v, error with %q", tt.line, h, ok, err, tt.handle, tt.ok, tt.err)
		}
	}
}

func TestSettleFailureLine(t *testing.T) {
	tests := []struct {
		r    client.SettleResult
		want string
	}{
		{client.SettleResult{Handle: "h", Status: 204}, ""},
		{client.SettleResult{Handle: "4:0:123", Status: 410, Err: "receipt handle no longer matches an active reservation"},
			"narad: ack 4:0:123: lease gone (410 receipt handle no longer matches an active reservation)"},
		{client.SettleResult{Handle: "h", Status: 503, Err: ""}, "narad: ack h: failed (503 service unavailable)"},
		{client.SettleResult{Handle: "h", Status: 0, Err: `Post "http://x/v1/topics/t/ack?receipt_handle=h": dial tcp: connection refused`},
			"narad: ack h: no answer (dial tcp: connection refused)"},
	}
	for _, tt := range tests {
		if got := settleFailureLine("ack", tt.r); got != tt.want {
			t.Errorf("settleFailureLine(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestGather(t *testing.T) {
	ctx := context.Background()
	items := make(chan settleItem, 2*settleGather)
	for i := range settleGather + 5 {
		items <- settleItem{handle: fmt.Sprint(i)}
	}
	close(items)
	b1, ok1 := gather(ctx, items)
	b2, ok2 := gather(ctx, items)
	_, ok3 := gather(ctx, items)
	if len(b1) != settleGather || !ok1 || len(b2) != 5 || !ok2 || ok3 {
		t.Errorf("gathered %d (%v), %d (%v), end %v; want %d, 5, then the end", len(b1), ok1, len(b2), ok2, ok3, settleGather)
	}
}

// The unconfirmed settlements are shell input that sends them again: a here-document
// per action whose delimiter no handle can end early, the handles verbatim.
func TestWriteUnconfirmedPastesCleanly(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := &Factory{IO: ios}
	f.runEnv().writeUnconfirmed("orders", []pendingSettle{{"ack", "4:0:1"}, {"nack", "4:0:2"}, {"ack", "EOF"}})
	want := "narad: 2 acks and 1 nack not confirmed by the node; to send again, paste:\n" +
		"narad ack orders - <<'EOF_'\n4:0:1\nEOF\nEOF_\n" +
		"narad nack orders - <<'EOF'\n4:0:2\nEOF\n"
	if got := errOut.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	errOut.Reset()
	f.runEnv().writeUnconfirmed("orders", nil)
	if errOut.Len() != 0 {
		t.Errorf("nothing to list printed %q", errOut.String())
	}
	// A run with --config and --context names them, so the paste reads the same file
	// and context (the current context of the default file may be another server's).
	errOut.Reset()
	f.global.configPath, f.global.context = "my conf.yaml", "prod"
	f.runEnv().writeUnconfirmed("orders", []pendingSettle{{"ack", "4:0:1"}})
	if got, want := errOut.String(), "narad --config 'my conf.yaml' --context prod ack orders - <<'EOF'\n"; !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a line\n%s", got, want)
	}
	for in, want := range map[string]string{"http://127.0.0.1:7942": "http://127.0.0.1:7942", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// After a stop the reader hands over every whole line it took from stdin and says
// after which line it stopped; it starts no new read of stdin.
func TestHandleReaderLeftoversAfterAStop(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rd := newHandleReader(ctx, pr, []string{"-", "arg-1"})
	go io.WriteString(pw, "h1\n\nh2\nh3\n")
	var got []string
	for len(got) < 3 {
		it := <-rd.items
		got = append(got, it.handle)
	}
	cancel()
	// The reader is blocked reading stdin now (or about to be): a line written now is
	// not taken.
	rest, after, unread := rd.leftovers()
	var hs []string
	for _, it := range rest {
		hs = append(hs, it.handle)
	}
	if !slices.Equal(got, []string{"h1", "h2", "h3"}) || after != 4 || !unread {
		t.Errorf("read %v, stopped after line %d (unread %v); want h1..h3, after line 4", got, after, unread)
	}
	if !slices.Equal(hs, []string{"arg-1"}) {
		t.Errorf("leftovers %v, want the argument after -, never sent", hs)
	}

	// Lines read and not taken yet are handed over.
	ctx2, cancel2 := context.WithCancel(context.Background())
	rd2 := newHandleReader(ctx2, strings.NewReader("a\nb\nc"), []string{"-"})
	if it := <-rd2.items; it.handle != "a" {
		t.Fatalf("first %q", it.handle)
	}
	cancel2()
	rest2, after2, unread2 := rd2.leftovers()
	var hs2 []string
	for _, it := range rest2 {
		hs2 = append(hs2, it.handle)
	}
	// "c" has no newline: unless the reader saw the end of input before the stop, it
	// is not a whole line, and the resume point is the line it starts.
	allRead := slices.Equal(hs2, []string{"b", "c"}) && after2 == 3
	resume := slices.Equal(hs2, []string{"b"}) && unread2 && after2 == 2
	if !allRead && !resume {
		t.Errorf("leftovers %v after line %d unread %v, want b and c, all read; or b, stopped after line 2", hs2, after2, unread2)
	}
}
