package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/producer"
)

// cliResult is what one in-process run of narad left behind.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs narad in-process with stdin, a config file of its own and no NARAD_*
// variables from the developer's environment; tty sets all three streams' terminal facts.
func runCLI(t *testing.T, stdin io.Reader, tty bool, args ...string) cliResult {
	t.Helper()
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, out, errOut := iostreams.Test()
	if stdin != nil {
		ios.In = stdin
	}
	ios.SetTTY(tty, tty, tty)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	env := map[string]string{"NARAD_CONFIG": cfg}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

// produceServer is a fake older node (no batch produce) that records produces: 404
// for topic "nope", 413 for bodies over 10 bytes, 400 for empty ones.
type produceServer struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string // body, and ?key= / ?partition= when present
	hits int      // single produces
}

func newProduceServer(t *testing.T) *produceServer {
	s := &produceServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/produce/batch") {
			http.NotFound(w, r) // an older node: one message per request
			return
		}
		s.hits++
		switch {
		case r.URL.Path == "/v1/topics/nope/produce":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"topic \"nope\" not found"}`)
		case len(body) == 0:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"message required"}`)
		case len(body) > 10:
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, `{"error":"message too large"}`)
		default:
			rec := string(body)
			if r.URL.Query().Has("key") {
				rec += " key=" + r.URL.Query().Get("key")
			}
			if p := r.URL.Query().Get("partition"); p != "" {
				rec += " p=" + p
			}
			s.got = append(s.got, rec)
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *produceServer) produced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func TestProduceArgumentsInOrder(t *testing.T) {
	s := newProduceServer(t)
	r := runCLI(t, nil, false, "produce", "t", "one", "two", "three", "-s", s.URL, "-k", "k1", "--count", "2")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	want := []string{"one key=k1", "one key=k1", "two key=k1", "two key=k1", "three key=k1", "three key=k1"}
	if got := s.produced(); !slices.Equal(got, want) {
		t.Errorf("produced %q, want %q", got, want)
	}
	if !strings.HasPrefix(r.stderr, "produced 6 messages (22 B) in ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want the one summary line", r.stderr)
	}
}

func TestProduceLinesStreamsAndReports(t *testing.T) {
	s := newProduceServer(t)
	in := "a\r\n\nthis line is too long\nb\n\n"
	r := runCLI(t, strings.NewReader(in), false, "produce", "t", "--lines", "--partition", "3", "-s", s.URL)
	if r.code != ExitFailed {
		t.Errorf("exit %d, want 1", r.code)
	}
	if got, want := s.produced(), []string{"a p=3", "b p=3"}; !slices.Equal(got, want) {
		t.Errorf("produced %q, want %q", got, want)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr %q: want a report and a summary", r.stderr)
	}
	if want := "narad: line 3: 413 message too large (21 bytes; a message is at most 1 MiB)"; lines[0] != want {
		t.Errorf("report %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "produced 2 messages (2 B) in ") || !strings.HasSuffix(lines[1], "s, 1 failed") {
		t.Errorf("summary %q", lines[1])
	}
}

func TestProduceFatalIsOneLine(t *testing.T) {
	s := newProduceServer(t)
	r := runCLI(t, nil, false, "produce", "nope", "a", "b", "c", "-j", "2", "-s", s.URL)
	if r.code != ExitFailed {
		t.Errorf("exit %d, want 1", r.code)
	}
	want := "narad: produce: 404 topic \"nope\" not found (no topic nope on " + s.URL + "; see narad topic ls)\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	s.mu.Lock()
	hits := s.hits
	s.mu.Unlock()
	if hits > 2 {
		t.Errorf("%d requests after a 404, want at most one per worker", hits)
	}
}

// A read that blocks forever (a terminal, an endless pipe) must not keep a fatal
// error from being reported.
func TestProduceFatalDoesNotWaitForInput(t *testing.T) {
	s := newProduceServer(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	go io.WriteString(pw, "x\n")
	done := make(chan cliResult, 1)
	go func() { done <- runCLI(t, pr, false, "produce", "nope", "--lines", "-s", s.URL) }()
	select {
	case r := <-done:
		if r.code != ExitFailed || !strings.Contains(r.stderr, "404") {
			t.Errorf("exit %d stderr %q", r.code, r.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("produce waited for more input after a 404")
	}
}

func TestProduceJSONLines(t *testing.T) {
	s := newProduceServer(t)
	in := `{"topic":"a","key":"k","payload":{"a": 1},"timestamp":1}
{"topic":"a","payload":"text","timestamp":1}
{"topic":"a","key":"//4=","key_encoding":"base64","payload":"aGk=","payload_encoding":"base64"}
{oops
`
	r := runCLI(t, strings.NewReader(in), false, "produce", "t", "--json", "-s", s.URL)
	if r.code != ExitFailed {
		t.Errorf("exit %d, want 1 (a bad line)", r.code)
	}
	want := []string{`{"a": 1} key=k`, "text", "hi key=\xff\xfe"}
	if got := s.produced(); !slices.Equal(got, want) {
		t.Errorf("produced %q, want %q", got, want)
	}
	if !strings.HasPrefix(r.stderr, "narad: line 4: not a JSON message line: ") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestProduceFlags(t *testing.T) {
	tests := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"t", "a"}, 0, ""},
		{[]string{"t", "a", "--file", "x"}, ExitUsage, "not both"},
		{[]string{"t", "--lines", "--json"}, ExitUsage, "cannot be used together"},
		{[]string{"t", "a", "--json"}, ExitUsage, "not MESSAGE arguments"},
		{[]string{"t", "a", "--count", "0"}, ExitUsage, "--count"},
		{[]string{"t", "a", "-j", "1000"}, ExitUsage, "--concurrency"},
		{[]string{"t", "a", "--partition", "-2"}, ExitUsage, "--partition"},
		{[]string{}, ExitUsage, "takes a topic"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			f := &Factory{IO: ios}
			var got *ProduceOptions
			cmd := produceCmd(f, func(o *ProduceOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if code := exitCodeFor(err); code != tt.code || (tt.err != "" && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("exit %d err %v, want %d with %q", code, err, tt.code, tt.err)
			}
			if tt.code == 0 && (got == nil || got.Key != nil || got.Partition != nil || got.Count != 1 || got.Concurrency != 1) {
				t.Errorf("options %+v: want no key, no partition, count 1, -j 1", got)
			}
		})
	}

	// An empty key is still a key: -k "" is sent as key=.
	ios, _, _, _ := iostreams.Test()
	var got *ProduceOptions
	cmd := produceCmd(&Factory{IO: ios}, func(o *ProduceOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"t", "a", "-k", "", "--partition", "0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Key == nil || *got.Key != "" || got.Partition == nil || *got.Partition != 0 {
		t.Errorf("key %v partition %v, want an empty key and partition 0", got.Key, got.Partition)
	}
}

func TestProduceSummary(t *testing.T) {
	tests := []struct {
		s    producer.Stats
		d    time.Duration
		want string
	}{
		{producer.Stats{Produced: 1000, Bytes: 48026}, 410 * time.Millisecond, "produced 1000 messages (46.9 KiB) in 0.41s"},
		{producer.Stats{Produced: 1, Bytes: 5}, 0, "produced 1 message (5 B) in 0.00s"},
		{producer.Stats{Failed: 2}, 1500 * time.Millisecond, "produced 0 messages (0 B) in 1.50s, 2 failed"},
		{producer.Stats{Produced: 3, Bytes: 3, Unknown: 8}, 0, "produced 3 messages (3 B) in 0.00s, 8 unknown"},
	}
	for _, tt := range tests {
		if got := produceSummary(tt.s, tt.d); got != tt.want {
			t.Errorf("produceSummary(%+v, %v) = %q, want %q", tt.s, tt.d, got, tt.want)
		}
	}
}

func TestResumeLine(t *testing.T) {
	res := func(mod func(*producer.Result)) *producer.Result {
		r := &producer.Result{Stopped: true, Unit: "line", Taken: 1173, Resume: 1174}
		r.Produced = 1173
		mod(r)
		return r
	}
	tests := []struct {
		name  string
		res   *producer.Result
		where string
		want  string
	}{
		{"complete", res(func(*producer.Result) {}), "stdin", "interrupted: lines 1-1173 produced; resume with tail -n +1174"},
		{"a file", res(func(*producer.Result) {}), "file in.txt", "interrupted: lines 1-1173 produced; resume with tail -n +1174 in.txt"},
		{"one line", res(func(r *producer.Result) { r.Resume = 2 }), "stdin", "interrupted: line 1 produced; resume with tail -n +2"},
		{"failures", res(func(r *producer.Result) { r.Failed = 2 }), "stdin", "interrupted: lines 1-1173 produced or reported above; resume with tail -n +1174"},
		{"unknown", res(func(r *producer.Result) { r.Resume, r.Unknown, r.UnknownFirst, r.UnknownLast = 1166, 8, 1166, 1173 }), "stdin",
			"interrupted: lines 1-1165 produced; 8 messages from lines 1166-1173 may or may not have been stored; resume with tail -n +1166 (may store those again)"},
		{"nothing done", res(func(r *producer.Result) { r.Resume, r.Unknown, r.UnknownFirst, r.UnknownLast = 1, 1, 1, 1 }), "stdin",
			"interrupted: no line produced; 1 message from line 1 may or may not have been stored; resume with tail -n +1 (may store those again)"},
		{"stored past the resume point", res(func(r *producer.Result) {
			r.Resume, r.Unknown, r.UnknownFirst, r.UnknownLast = 1166, 8, 1166, 1173
			r.StoredPastResume, r.StoredFirst, r.StoredLast = 100, 1174, 1273
		}), "stdin",
			"interrupted: lines 1-1165 produced; 8 messages from lines 1166-1173 may or may not have been stored; 100 messages from lines 1174-1273 were stored too; resume with tail -n +1166 (stores those again, or may)"},
		{"fatal with later batches stored", res(func(r *producer.Result) {
			r.Stopped, r.Fatal, r.Resume = false, errors.New("403"), 101
			r.StoredPastResume, r.StoredFirst, r.StoredLast = 1, 250, 250
		}), "stdin",
			"stopped: lines 1-100 produced; 1 message from line 250 was stored too; resume with tail -n +101 (stores those again)"},
		{"fatal", res(func(r *producer.Result) { r.Stopped, r.Fatal = false, errors.New("401") }), "stdin", "stopped: lines 1-1173 produced; resume with tail -n +1174"},
		{"arguments", res(func(r *producer.Result) { r.Unit, r.Resume = "argument", 3 }), "arguments", "interrupted: arguments 1-2 produced; resume from argument 3"},
		{"ran to the end", res(func(r *producer.Result) { r.Stopped = false }), "stdin", ""},
		{"a whole input", res(func(r *producer.Result) { r.Unit = "" }), "stdin", ""},
	}
	for _, tt := range tests {
		if got := resumeLine(tt.res, tt.where); got != tt.want {
			t.Errorf("%s:\n got  %q\n want %q", tt.name, got, tt.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 48026: "46.9 KiB",
		2 << 20: "2.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// On a terminal a progress line is drawn and then cleared before the summary. The
// clock is synctest's: the progress's ticks come in order however loaded the machine.
func TestProgressLine(t *testing.T) {
	synctest.Test(t, testProgressLine)
}

func testProgressLine(t *testing.T) {
	var b strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(p) })
	p := newProgressLine(w)
	stop := p.run(time.Millisecond, time.Millisecond, func() string { return "produced 3 messages…" })
	time.Sleep(20 * time.Millisecond)
	synctest.Wait()
	p.println("a failure\n")
	stop()
	mu.Lock()
	got := b.String()
	mu.Unlock()
	if !strings.Contains(got, "\r\x1b[Kproduced 3 messages…") || !strings.Contains(got, "\r\x1b[Ka failure\n") {
		t.Errorf("output %q: want the progress drawn, then cleared before the line", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// SIGINT stops reading and sending; the summary still says what was produced, and
// the exit is 130.
func TestProduceInterrupted(t *testing.T) {
	s := newProduceServer(t)
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	ios, _, _, errOut := iostreams.Test()
	ios.In = pr
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() { done <- Run(f, []string{"produce", "t", "--lines", "-s", s.URL}) }()
	io.WriteString(pw, "first\n")
	for deadline := time.Now().Add(5 * time.Second); len(s.produced()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first line was not sent while stdin stayed open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.Signals.Trigger(syscall.SIGINT)
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("exit %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("produce did not stop at SIGINT")
	}
	if got := errOut.String(); !strings.HasPrefix(got, "produced 1 message (5 B) in ") {
		t.Errorf("stderr %q, want the summary", got)
	}
}

// seqLines is an endless input of the lines 1, 2, 3, ...: `seq 1000000000 |`.
type seqLines struct {
	n   int
	buf []byte
}

func (s *seqLines) Read(p []byte) (int, error) {
	for len(s.buf) < len(p) {
		s.n++
		s.buf = strconv.AppendInt(s.buf, int64(s.n), 10)
		s.buf = append(s.buf, '\n')
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// gatedBroker is a dev broker whose answers are held until open is closed (or the
// client gives up on the request): a message is stored and its 202 is still on the
// way, as when a signal arrives while requests are out.
func gatedBroker(t *testing.T) (b *devbroker.Broker, url string, open func()) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		b.Handler().ServeHTTP(rec, r)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return b, srv.URL, open
}

// storedLines is every message of topic t as its text, read back by replay.
func storedLines(t *testing.T, b *devbroker.Broker) map[string]int {
	t.Helper()
	st, err := b.Stats("t")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range st.Partitions {
		for off := p.OldestOffset; off < p.NextOffset; off++ {
			resp, err := http.Get(fmt.Sprintf("%s/v1/topics/t/consume?partition=%d&offset=%d", b.URL(), p.Index, off))
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Payload json.RawMessage `json:"payload"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			got[strings.Trim(string(m.Payload), `"`)]++
		}
	}
	return got
}

// startInterruptible runs `narad produce t --lines -j 8` on an endless input against
// url, and returns once the node has stored a message (its answer held at the gate).
func startInterruptible(t *testing.T, b *devbroker.Broker, url string) (f *Factory, errOut *bytes.Buffer, done <-chan int) {
	t.Helper()
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, _, errBuf := iostreams.Test()
	ios.In = &seqLines{}
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f = &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	ch := make(chan int, 1)
	go func() { ch <- Run(f, []string{"produce", "t", "--lines", "-j", "8", "-s", url}) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, _ := b.Stats("t"); st.Messages() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing reached the node")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return f, errBuf, ch
}

// `seq 100000 | narad produce t --lines -j 8`, SIGINT after 0.5 s,
// said fewer produced than the node held: the requests out were cancelled, though the
// node had stored their messages. The first signal now stops the reading and lets them
// finish, so the summary is what the node holds, and the resume line continues right
// after it: the node holds exactly lines 1..N, once each.
func TestProduceInterruptIsExact(t *testing.T) {
	noteStoppingAfter(t, time.Hour, nil) // stderr is checked whole
	b, url, open := gatedBroker(t)
	f, errOut, done := startInterruptible(t, b, url)
	f.Signals.Trigger(syscall.SIGINT)
	// The answers are held a moment, so that a run that cancels its requests at the
	// signal has returned before they come.
	select {
	case <-done:
		t.Error("produce returned while its requests were still out")
		done = nil
	case <-time.After(200 * time.Millisecond):
	}
	open()
	if done != nil {
		if code := <-done; code != ExitInterrupted {
			t.Errorf("exit %d, want 130", code)
		}
	}
	stored := storedLines(t, b)
	n := len(stored)
	for i := 1; i <= n; i++ {
		if c := stored[strconv.Itoa(i)]; c != 1 {
			t.Fatalf("line %d stored %d times; want lines 1..%d once each", i, c, n)
		}
	}
	want := fmt.Sprintf("produced %d messages (", n)
	resume := fmt.Sprintf("interrupted: lines 1-%d produced; resume with tail -n +%d\n", n, n+1)
	if n == 1 {
		// The signal came while only the first request was out, with the first line
		// alone (a loaded machine had sent no other yet): the lines are said singular.
		want, resume = "produced 1 message (", "interrupted: line 1 produced; resume with tail -n +2\n"
	}
	if got := errOut.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, resume) {
		t.Errorf("stderr %q\nwant the summary %q... and %q (the node holds %d)", got, want, resume, n)
	}
}

// A second signal abandons the requests out: their messages are counted as unknown
// and named by line, and the run ends without waiting for their answers.
func TestProduceSecondInterruptAbandons(t *testing.T) {
	noteStoppingAfter(t, time.Hour, nil) // stderr is checked whole
	b, url, _ := gatedBroker(t)
	f, errOut, done := startInterruptible(t, b, url)
	f.Signals.Trigger(syscall.SIGINT)
	f.Signals.Trigger(syscall.SIGINT)
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	stored := len(storedLines(t, b))
	got := errOut.String()
	var produced, unknown int
	if _, err := fmt.Sscanf(got, "produced %d messages", &produced); err != nil {
		t.Fatalf("stderr %q: %v", got, err)
	}
	if i := strings.Index(got, " unknown\n"); i > 0 {
		fmt.Sscanf(got[strings.LastIndex(got[:i], " ")+1:], "%d", &unknown)
	}
	if produced != 0 || unknown < stored {
		t.Errorf("stderr %q: want 0 produced and at least the %d stored messages unknown", got, stored)
	}
	if !strings.Contains(got, "may or may not have been stored; resume with tail -n +1 (may store those again)\n") {
		t.Errorf("stderr %q: want the unknown lines named and a resume from line 1", got)
	}
}

// The progress line of a paced run says where the tape is, in its own time.
func TestTapePosition(t *testing.T) {
	in := `{"payload":"a","timestamp":1796076005}
{"payload":"b","timestamp":1796080447}
`
	p := producer.Paced(producer.JSONLinesWith(strings.NewReader(in), producer.JSONFields{Timestamp: true}), 1e9, nil)
	if got := tapePosition(p); got != "" {
		t.Errorf("before the first line: %q", got)
	}
	for range 2 {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	want := " tape at " + time.Unix(1796080447, 0).Format("2006-01-02 15:04:05") + " (+1h14m2s)"
	if got := tapePosition(p); got != want {
		t.Errorf("tapePosition = %q, want %q", got, want)
	}
}

// The first Ctrl-C lets a request already out finish its attempt but starts no new
// one: against a node that keeps answering 503 (or does not answer at all, 30 s an
// attempt) the retries held the end up for up to five attempts after the user asked
// to stop. The message is then unknown: it may have been stored.
func TestProduceFirstInterruptStopsRetrying(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}},
		Faults: []devbroker.FaultRule{{Op: "produce", Status: http.StatusServiceUnavailable, Probability: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, _, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	go func() {
		for b.Requests("produce") == 0 {
			time.Sleep(time.Millisecond)
		}
		f.Signals.Trigger(syscall.SIGINT)
	}()
	code := Run(f, []string{"produce", "t", "x", "-s", b.URL()})
	if got := b.Requests("produce"); code != ExitInterrupted || got >= client.DefaultBoundedAttempts {
		t.Errorf("exit %d after %d attempts, want 130 and fewer than %d", code, got, client.DefaultBoundedAttempts)
	}
	if !strings.Contains(errOut.String(), "1 unknown") {
		t.Errorf("stderr %q: want the message counted unknown", errOut.String())
	}
}

// noteStoppingAfter sets the stopping line's delay for one test, and what is called
// once it is out.
func noteStoppingAfter(t *testing.T, d time.Duration, noticed func()) {
	after, was := stoppingNoticeAfter, stoppingNoticed
	stoppingNoticeAfter = d
	if noticed != nil {
		stoppingNoticed = noticed
	}
	t.Cleanup(func() { stoppingNoticeAfter, stoppingNoticed = after, was })
}

// After the first Ctrl-C, a run still waiting for its requests a moment later says
// what it waits for and how not to, before its summary; the answers then still count.
func TestProduceFirstInterruptSaysWhatItWaitsFor(t *testing.T) {
	b, url, open := gatedBroker(t)
	noteStoppingAfter(t, 10*time.Millisecond, open) // the answers come once it is said
	f, errOut, done := startInterruptible(t, b, url)
	f.Signals.Trigger(syscall.SIGINT)
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	const note = "narad: stopping: waiting for the requests already out to be answered (Ctrl-C again to abandon them)\n"
	got := errOut.String()
	if !strings.HasPrefix(got, note) || strings.Count(got, note) != 1 || !strings.Contains(got, "interrupted: lines 1-") {
		t.Errorf("stderr %q\nwant %q once, then the summary", got, note)
	}
}
