package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/iostreams"
)

// runTuned is runCLI with the client's config adjusted: backoff that does not wait
// (the client still counts what it asked for, so budgets and notices behave as in
// real time), and whatever tune changes (short timeouts).
func runTuned(t *testing.T, stdin io.Reader, tune func(*client.Config), args ...string) cliResult {
	t.Helper()
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, out, errOut := iostreams.Test()
	if stdin != nil {
		ios.In = stdin
	}
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals(),
		tuneClient: func(c *client.Config) {
			c.Retry.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
			if tune != nil {
				tune(c)
			}
		}}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// A consume answered with a plain-text 502 used to retry for two
// minutes without a word. One line now says what is going on, once, then the end.
func TestRetryNoticeForAPlain502(t *testing.T) {
	u := faultNode(t, "502")
	r := runTuned(t, nil, nil, "sub", "orders", "-s", u, "--count", "1")
	got := lines(r.stderr)
	if r.code != ExitFailed || len(got) != 2 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`^narad: consume: the node answers 502 Bad Gateway; retrying for up to (\dm)?\d+s more$`).MatchString(got[0]) {
		t.Errorf("notice %q", got[0])
	}
	if want := "narad: consume: 502 Bad Gateway (retried with backoff; try again later)"; got[1] != want {
		t.Errorf("fatal line %q, want %q", got[1], want)
	}
}

// A node that takes the request and never answers is reported as such, not as
// unreachable; retrying it is announced once the attempts have taken a while.
func TestSilentNodeIsNotUnreachable(t *testing.T) {
	u := faultNode(t, "silent")
	r := runTuned(t, nil, func(c *client.Config) {
		c.Timeout = 20 * time.Millisecond
		c.Retry.Initial = 2 * time.Second // so that the attempts pass the notice's few seconds
	}, "produce", "orders", "x", "-s", u)
	got := lines(r.stderr)
	// The notice, produce's summary and what to resume from, then the fatal line.
	if r.code != ExitFailed || len(got) != 4 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`^narad: produce: the node accepted the connection but sent no answer within 20ms; retrying \(attempt [2-5] of 5\)$`).MatchString(got[0]) {
		t.Errorf("notice %q", got[0])
	}
	want := "narad: produce: no answer within 20ms (the node at " + u + " accepted the connection but sent no answer within 20ms)"
	if got[3] != want {
		t.Errorf("fatal line\n%q, want\n%q", got[3], want)
	}
}

// A node that takes the request and never answers is not a whole attempt's timeout
// of silence: a few seconds in, one line says what is awaited and for how long, for a
// read (retried) and for a change (sent once) alike. (The attempt's 10s is only a
// bound on the run; the line comes 3s in.)
func TestNoAnswerSaysSoWithinSeconds(t *testing.T) {
	u := faultNode(t, "silent")
	for _, c := range []struct {
		args []string
		op   string
	}{
		{[]string{"topic", "ls"}, "list topics"},
		{[]string{"topic", "create", "x"}, "create topic"},
	} {
		r := runTuned(t, nil, func(c *client.Config) {
			c.Timeout = 10 * time.Second
			c.Retry.BoundedAttempts = 1
		}, append(c.args, "-s", u)...)
		got := lines(r.stderr)
		want := "narad: " + c.op + ": no answer from " + u + " after 3s; waiting for it up to 10s"
		if r.code != ExitFailed || len(got) != 2 || got[0] != want {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant first %q, then the fatal line", c.args, r.code, r.stderr, want)
		}
	}
}

// The notice is per episode: silent below the threshold, one line past it however
// many retries follow, and again only after an answer ended the episode.
func TestRetryNoticeOncePerEpisode(t *testing.T) {
	var buf strings.Builder
	n := &retryNotice{out: &stderrLines{w: &buf}, base: "http://127.0.0.1:1", after: 3 * time.Second}
	busy := client.RetryEvent{Op: client.OpAck, Status: 503, Err: &client.Error{Op: client.OpAck, Status: 503, Message: "owner unavailable"},
		Attempt: 2, Budget: 2 * time.Minute, Handles: 3}
	for _, e := range []time.Duration{time.Second, 2 * time.Second} {
		busy.Elapsed = e
		n.OnRetry(busy)
	}
	if buf.Len() != 0 {
		t.Fatalf("a notice before the threshold: %q", buf.String())
	}
	for _, e := range []time.Duration{3 * time.Second, 10 * time.Second, time.Minute} {
		busy.Elapsed = e
		n.OnRetry(busy)
	}
	want := "narad: ack: the node answers 503 owner unavailable; retrying 3 handles for up to 1m57s more\n"
	if buf.String() != want {
		t.Fatalf("notices %q, want %q", buf.String(), want)
	}
	n.OnAnswer(client.AnswerEvent{Status: 503})
	n.OnRetry(busy)
	if buf.String() != want {
		t.Fatalf("an error answer ended the episode: %q", buf.String())
	}
	n.OnAnswer(client.AnswerEvent{Status: 204})
	refused := client.RetryEvent{Op: client.OpConsume, Err: errors.New("consume: dial tcp 127.0.0.1:1: connect: connection refused"),
		Attempt: 4, MaxAttempts: 5, Elapsed: 4 * time.Second}
	n.OnRetry(refused)
	want += "narad: consume: cannot reach http://127.0.0.1:1 (dial tcp 127.0.0.1:1: connect: connection refused); retrying (attempt 4 of 5)\n"
	if buf.String() != want {
		t.Errorf("after a new episode %q, want %q", buf.String(), want)
	}
}

// -v is a hook now: the same lines as before, and never a credential.
func TestVerboseLines(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(202) }))
	defer s.Close()
	r := runTuned(t, nil, nil, "-v", "produce", "orders", "x", "-s", s.URL, "-u", "app", "-p", "s3cret")
	if r.code != 0 || !regexp.MustCompile(`(?m)^POST `+regexp.QuoteMeta(s.URL)+`/v1/topics/orders/produce 202 Accepted \(\d`).MatchString(r.stderr) {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "s3cret") {
		t.Errorf("-v shows the password:\n%s", r.stderr)
	}
	r = runTuned(t, nil, nil, "-v", "produce", "orders", "x", "-s", "http://127.0.0.1:1")
	if !regexp.MustCompile(`(?m)^POST http://127\.0\.0\.1:1/v1/topics/orders/produce error: dial tcp 127\.0\.0\.1:1: connect: connection refused \(`).MatchString(r.stderr) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// A 403's hint names the grant of the operation that was refused, from the error
// itself; an operation without a grant to ask for never claims "admin".
func TestForbiddenHintComesFromTheOp(t *testing.T) {
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	f := &Factory{}
	for _, tc := range []struct {
		op    client.Op
		topic string
		want  string
	}{
		{client.OpConsume, "orders", "(the user has no consume grant for topic orders)"},
		{client.OpProduce, "orders", "(the user has no produce grant for topic orders)"},
		{client.OpCreateTopic, "new", "(the user has no create grant for topic new)"},
		{client.OpTopicInfo, "orders", "(the user has no grant on topic orders)"},
		{client.OpDeleteTopic, "orders", "(the user neither owns topic orders nor has the admin grant)"},
		{client.OpListUsers, "", "(the user has no admin grant)"},
		{client.OpListTopics, "", "(the node refused this user)"},
		{client.Op(0), "", "(the node refused this user)"},
	} {
		err := f.runEnv().apiFatal(c, &client.Error{Op: tc.op, Status: 403, Message: "forbidden"}, tc.topic)
		if !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%v: %q, want the hint %q", tc.op, err, tc.want)
		}
	}
}

func TestCurlCommand(t *testing.T) {
	h := http.Header{"X-Narad-Client": {"narad/v1.0.0"}, "User-Agent": {"narad/v1.0.0"}}
	json := http.Header{"X-Narad-Client": {"narad/v1.0.0"}, "Content-Type": {"application/json"}}
	for _, tc := range []struct {
		e    client.RequestEvent
		want string
	}{
		{client.RequestEvent{Exchange: client.Exchange{Method: "GET", URL: "http://h:1/v1/topics/o/consume?max=10&wait=10s"}, Header: h},
			`curl -i 'http://h:1/v1/topics/o/consume?max=10&wait=10s' -H 'X-Narad-Client: narad/v1.0.0'`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/v1/topics/o/ack"}, Header: json, Auth: true,
			Body: []byte(`{"receipt_handles":["0:1:2"]}`)},
			`curl -i -X POST 'http://h:1/v1/topics/o/ack' -H 'Content-Type: application/json' -H 'X-Narad-Client: narad/v1.0.0' -u "$NARAD_USER:$NARAD_PASS" --data-binary '{"receipt_handles":["0:1:2"]}'`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte("it's $HOME `x`")},
			`curl -i -X POST 'http://h:1/p' --data-binary 'it'\''s $HOME ` + "`x`'"},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte{}},
			`curl -i -X POST 'http://h:1/p' --data-binary ''`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte("two\nlines")},
			`curl -i -X POST 'http://h:1/p' --data-binary @-  # the body on stdin: 9 bytes (text with control characters)`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte("abc\u202edef")},
			`curl -i -X POST 'http://h:1/p' --data-binary @-  # the body on stdin: 9 bytes (text with control characters)`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte{0x89, 'P', 'N', 'G', 0x1b}},
			`curl -i -X POST 'http://h:1/p' --data-binary @-  # the body on stdin: 5 bytes (binary)`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "POST", URL: "http://h:1/p"}, Body: []byte(strings.Repeat("x", curlInlineMax+1))},
			`curl -i -X POST 'http://h:1/p' --data-binary @-  # the body on stdin: 1025 bytes (too long to show)`},
		{client.RequestEvent{Exchange: client.Exchange{Method: "DELETE", URL: "http://h:1/v1/topics/o"}, Auth: true},
			`curl -i -X DELETE 'http://h:1/v1/topics/o' -u "$NARAD_USER:$NARAD_PASS"`},
	} {
		if got := curlCommand(tc.e); got != tc.want {
			t.Errorf("curlCommand(%+v)\n got %s\nwant %s", tc.e, got, tc.want)
		}
	}
}

// context add --user on a terminal asks for the password without echo instead of
// needing it in argv; never when stdin is not a terminal or a password flag is given.
func TestContextAddAsksForThePassword(t *testing.T) {
	e := newContextEnv(t)
	asked := 0
	prompt := "password for app (empty for none): "
	run := func(tty bool, secret func() (string, error), stdin string, args ...string) cliResult {
		ios, _, out, errOut := iostreams.Test()
		ios.In = strings.NewReader(stdin)
		ios.SetTTY(tty, false, false)
		env := map[string]string{"NARAD_CONFIG": e.path}
		f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals(),
			ReadSecret: func(p string) (string, error) {
				asked++
				if p != prompt {
					t.Errorf("prompt %q, want %q", p, prompt)
				}
				return secret()
			}}
		code := Run(f, args)
		return cliResult{code, out.String(), errOut.String()}
	}
	typed := func() (string, error) { return "typed pw", nil }
	if r := run(true, typed, "", "context", "add", "a", "--server", "http://h:1", "--user", "app"); r.code != 0 || asked != 1 {
		t.Fatalf("exit %d, asked %d times: %s", r.code, asked, r.stderr)
	}
	if got := e.load().Contexts["a"].Password; got != "typed pw" {
		t.Errorf("saved password %q", got)
	}
	if r := run(false, typed, "", "context", "add", "b", "--server", "http://h:1", "--user", "app"); r.code != 0 || asked != 1 {
		t.Errorf("asked with stdin not a terminal: exit %d, %d", r.code, asked)
	}
	if r := run(false, typed, "piped pw\nrest", "context", "add", "c", "--server", "http://h:1", "--user", "app", "--password-stdin"); r.code != 0 || asked != 1 {
		t.Errorf("asked with --password-stdin: exit %d, %d, %s", r.code, asked, r.stderr)
	}
	if got := e.load().Contexts["c"].Password; got != "piped pw" {
		t.Errorf("--password-stdin saved %q", got)
	}
	// --password-stdin on a terminal asks without echo rather than read a visible line.
	prompt = "password: "
	if r := run(true, typed, "", "context", "add", "c2", "--server", "http://h:1", "--user", "app", "--password-stdin"); r.code != 0 || asked != 2 {
		t.Errorf("--password-stdin on a terminal: exit %d, asked %d, %s", r.code, asked, r.stderr)
	}
	if got := e.load().Contexts["c2"].Password; got != "typed pw" {
		t.Errorf("--password-stdin on a terminal saved %q", got)
	}
	prompt = "password for app (empty for none): "
	if r := run(true, func() (string, error) { return "", errors.New("interrupted") }, "", "context", "add", "d", "--server", "http://h:1", "--user", "app"); r.code != ExitFailed || strings.Contains(r.stderr, "saved") {
		t.Errorf("a failed prompt: exit %d, %s", r.code, r.stderr)
	}
	if _, ok := e.load().Contexts["d"]; ok {
		t.Error("a context was saved although the prompt failed")
	}
}

// --password-stdin takes the first line of stdin as the password; a command that
// would read its input from stdin as well is refused before anything is sent.
func TestPasswordStdin(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		got = append(got, u+":"+p)
		mu.Unlock()
		w.WriteHeader(202)
	}))
	defer s.Close()
	r := runTuned(t, strings.NewReader("s3 cret\r\nnot read\n"), nil, "produce", "orders", "x", "-s", s.URL, "-u", "app", "--password-stdin")
	if r.code != 0 || len(got) != 1 || got[0] != "app:s3 cret" {
		t.Fatalf("exit %d, credentials %q, stderr %s", r.code, got, r.stderr)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"pw\nmessage\n", []string{"produce", "orders"}, "narad: --password-stdin takes stdin, so messages cannot come from it too (give them as arguments or with --file FILE)\n"},
		{"pw\nmessage\n", []string{"produce", "orders", "--lines", "--file", "-"}, "narad: --password-stdin takes stdin, so messages cannot come from it too (give them as arguments or with --file FILE)\n"},
		{"pw\n0:1:2\n", []string{"ack", "orders", "-"}, "narad: --password-stdin takes stdin, so handles cannot come from it too (give them as arguments)\n"},
		{"pw\n", []string{"produce", "orders", "x", "-p", "pw"}, "narad: --password and --password-stdin cannot be used together\n"},
		{"\nx\n", []string{"produce", "orders", "x"}, "narad: --password-stdin: no password on the first line of stdin\n"},
		{"", []string{"topic", "ls"}, "narad: --password-stdin: no password on the first line of stdin\n"},
	} {
		r := runTuned(t, strings.NewReader(tc.stdin), nil, append(tc.args, "-s", s.URL, "-u", "app", "--password-stdin")...)
		if r.code != ExitUsage || r.stderr != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if len(got) != 1 {
		t.Errorf("%d requests, want only the first run's", len(got))
	}
}

// After a signal, acks are retried only for the shutdown grace: a retry line then says
// the grace's time left, not the budget's (it said "for up to 1m55s more" right after
// the stop line had said 1s).
func TestRetryNoticeSaysTheGraceAfterASignal(t *testing.T) {
	var buf strings.Builder
	s := NewSignals()
	n := &retryNotice{out: &stderrLines{w: &buf}, base: "http://127.0.0.1:1", after: 0, graceEnd: s.graceEnd}
	busy := client.RetryEvent{Op: client.OpAck, Status: 503, Err: &client.Error{Op: client.OpAck, Status: 503, Message: "owner unavailable"},
		Attempt: 2, Budget: 2 * time.Minute, Elapsed: 5 * time.Second, Handles: 2}
	ran := make(chan struct{})
	defer close(ran)
	s.Grace(time.Minute, ran)
	n.OnRetry(busy) // no signal yet: the budget
	n.OnAnswer(client.AnswerEvent{Status: 204})
	s.Trigger(syscall.SIGTERM)
	n.OnRetry(busy) // the grace, sooner than the budget
	n.OnAnswer(client.AnswerEvent{Status: 204})
	s.Grace(10*time.Minute, ran)
	n.OnRetry(busy) // the budget, sooner than the grace
	got := lines(buf.String())
	want := []string{
		"narad: ack: the node answers 503 owner unavailable; retrying 2 handles for up to 1m55s more",
		`narad: ack: the node answers 503 owner unavailable; retrying 2 handles for up to (1m0s|5\ds) more \(the shutdown grace\)`,
		"narad: ack: the node answers 503 owner unavailable; retrying 2 handles for up to 1m55s more",
	}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	for i := range want {
		if i == 1 && !regexp.MustCompile("^"+want[i]+"$").MatchString(got[i]) || i != 1 && got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// The no-answer line is per episode too: once the node answered again, a later
// request it leaves unanswered is said again. It was said once a run, so a long-running
// sub whose node stopped answering a second time was silent for an attempt's 31s.
func TestNoAnswerNoticeOncePerEpisode(t *testing.T) {
	buf := &lockedWriter{w: &strings.Builder{}}
	n := &slowNotice{out: &stderrLines{w: buf}, base: "http://127.0.0.1:1", after: time.Millisecond}
	defer n.close()
	const line = "narad: consume: no answer from http://127.0.0.1:1 after 1ms; waiting for it up to 31s\n"
	sent := func(attempt int) client.Exchange {
		x := client.Exchange{Op: client.OpConsume, Method: "GET", URL: "http://127.0.0.1:1/v1/topics/t/consume", Attempt: attempt}
		n.OnSent(client.SentEvent{Exchange: x, Timeout: 31 * time.Second})
		return x
	}
	// Until stderr shows the line want times; the bound only turns a hang into a failure.
	waitLines := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); strings.Count(buf.String(), line) < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("stderr %q, want the line %d times", buf.String(), want)
			}
		}
	}
	sent(1)
	waitLines(1)
	sent(2) // still no answer: the same episode, nothing more
	n.OnAnswer(client.AnswerEvent{Exchange: sent(3), Status: 204})
	sent(4)
	waitLines(2)
	n.close()
	if got := strings.Count(buf.String(), line); got != 2 {
		t.Errorf("stderr %q: the line %d times, want 2", buf.String(), got)
	}
}
