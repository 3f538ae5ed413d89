package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/bench"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"1": 1, "100": 100, "256B": 256, "1KiB": 1024, "1kib": 1024, "4k": 4096, "4K": 4096, "1Ki": 1024,
		"1kB": 1000, "2MB": 2_000_000, "1MiB": 1 << 20, "1m": 1 << 20, "1.5KiB": 1536, "0.5k": 512,
		" 64 KiB ": 64 << 10, "1GiB": 1 << 30,
	}
	for in, want := range good {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-1", "1.3", "1.0001KiB", "1x", "1 K B", "1e3", "0x10", "1..2", "1TiB", "1KiBs"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// Flags become BenchOptions; the engine is not run.
func TestBenchFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := &Factory{IO: ios, Getenv: func(string) string { return "" }, Now: time.Now, Signals: NewSignals()}
	var got *BenchOptions
	cmd := benchCmd(f, func(o *BenchOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"t", "--size", "1KiB", "--count", "5", "-j", "3", "--keys", "4", "--payload", "json",
		"--consume", "--create", "--partitions", "2", "--delete", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := BenchOptions{Topic: "t", Count: 5, Size: 1024, Concurrency: 3, Keys: 4, Payload: bench.JSON,
		Consume: true, Create: true, Partitions: 2, Delete: true, Output: "json"}
	g := *got
	g.runEnv = runEnv{} // what the run may use, not what the flags said
	if !reflect.DeepEqual(g, want) {
		t.Errorf("options %+v, want %+v", g, want)
	}
	cmd = benchCmd(f, func(o *BenchOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"t"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Count != 10000 || got.Size != 256 || got.Concurrency != 8 || got.Payload != bench.Text || got.Consume {
		t.Errorf("defaults %+v", *got)
	}
}

// benchJSON is -o json as --help documents it; decoding rejects any other field.
type benchJSON struct {
	Topic       string `json:"topic"`
	Count       int    `json:"count"`
	Size        int    `json:"size"`
	Payload     string `json:"payload"`
	Keys        int    `json:"keys"`
	Concurrency int    `json:"concurrency"`
	Produce     struct {
		benchPhaseJSON
		Failed  *int64 `json:"failed"`
		Unknown *int64 `json:"unknown"`
	} `json:"produce"`
	Consume *struct {
		benchPhaseJSON
		Acked *int64 `json:"acked"`
		Left  *int64 `json:"left"`
	} `json:"consume"`
	Interrupted *bool `json:"interrupted"`
}

type benchPhaseJSON struct {
	Messages   *int64   `json:"messages"`
	Bytes      *int64   `json:"bytes"`
	Seconds    *float64 `json:"seconds"`
	MsgsPerSec *float64 `json:"msgs_per_sec"`
	MBPerSec   *float64 `json:"mb_per_sec"`
	Requests   *int64   `json:"requests"`
	Batch      *bool    `json:"batch"`
	Latency    *struct {
		P50 *float64 `json:"p50"`
		P95 *float64 `json:"p95"`
		P99 *float64 `json:"p99"`
		Max *float64 `json:"max"`
	} `json:"latency_ms"`
	Histogram *[]struct {
		FromMs *float64 `json:"from_ms"`
		ToMs   *float64 `json:"to_ms"`
		Count  *int64   `json:"count"`
	} `json:"latency_histogram"`
}

// histogramOK reports whether the phase's histogram has every field, buckets that
// follow each other, and counts that add up to its requests.
func (p *benchPhaseJSON) histogramOK() bool {
	if p.Histogram == nil || len(*p.Histogram) == 0 {
		return false
	}
	var n int64
	for i, b := range *p.Histogram {
		if b.FromMs == nil || b.ToMs == nil || b.Count == nil || *b.ToMs <= *b.FromMs {
			return false
		}
		if i > 0 && *b.FromMs != *(*p.Histogram)[i-1].ToMs {
			return false
		}
		n += *b.Count
	}
	return n == *p.Requests
}

// complete reports whether every documented field of a phase was there.
func (p *benchPhaseJSON) complete() bool {
	l := p.Latency
	return p.Messages != nil && p.Bytes != nil && p.Seconds != nil && p.MsgsPerSec != nil && p.MBPerSec != nil &&
		p.Requests != nil && p.Batch != nil && l != nil && l.P50 != nil && l.P95 != nil && l.P99 != nil && l.Max != nil &&
		p.histogramOK()
}

func decodeBenchJSON(t *testing.T, out string) benchJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var r benchJSON
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if dec.More() {
		t.Fatalf("stdout %q: more than one JSON document", out)
	}
	return r
}

func TestBenchJSONHasTheDocumentedFields(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	res := runCLI(t, nil, false, "bench", "t", "--count", "300", "--size", "1KiB", "--consume", "-o", "json", "-s", b.URL())
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	r := decodeBenchJSON(t, res.stdout)
	if r.Topic != "t" || r.Count != 300 || r.Size != 1024 || r.Payload != "text" || r.Concurrency != 8 {
		t.Errorf("settings %+v", r)
	}
	if !r.Produce.complete() || r.Produce.Failed == nil || r.Produce.Unknown == nil || r.Interrupted == nil {
		t.Fatalf("produce or top level lacks a documented field: %s", res.stdout)
	}
	if r.Consume == nil || !r.Consume.complete() || r.Consume.Acked == nil || r.Consume.Left == nil {
		t.Fatalf("consume lacks a documented field: %s", res.stdout)
	}
	if *r.Produce.Messages != 300 || *r.Consume.Messages != 300 || *r.Consume.Acked != 300 || *r.Produce.Bytes != 300*1024 {
		t.Errorf("produced %d (%d bytes), consumed %d, acked %d: want 300 each", *r.Produce.Messages, *r.Produce.Bytes,
			*r.Consume.Messages, *r.Consume.Acked)
	}
	if !*r.Produce.Batch || !*r.Consume.Batch || *r.Interrupted {
		t.Errorf("batch %v/%v interrupted %v: want batch forms, not interrupted", *r.Produce.Batch, *r.Consume.Batch, *r.Interrupted)
	}
	if !strings.Contains(res.stderr, "narad: warning: bench writes 300 messages of 1.0 KiB into t, then consumes and acks") {
		t.Errorf("stderr %q: want the warning that bench writes into the topic", res.stderr)
	}
	// Without --consume there is no consume phase, and nothing is taken.
	res = runCLI(t, nil, false, "bench", "t", "--count", "10", "-o", "json", "-s", b.URL())
	if r := decodeBenchJSON(t, res.stdout); res.code != 0 || r.Consume != nil || *r.Produce.Messages != 10 {
		t.Errorf("exit %d, stdout %s: want 10 produced and no consume phase", res.code, res.stdout)
	}
	if st, _ := b.Stats("t"); st.Available() != 10 {
		t.Errorf("%d available, want the 10 bench left", st.Available())
	}
}

// ackGate is a dev broker whose acks, after the first one, wait for open: the consume
// phase is surely under way while they wait.
func ackGate(t *testing.T, b *devbroker.Broker) (url string, firstAck <-chan struct{}, open func()) {
	t.Helper()
	gate, first := make(chan struct{}), make(chan struct{})
	var acks atomic.Int64
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/ack") {
			if acks.Add(1) == 1 {
				defer close(first)
			} else {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		b.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, first, open
}

// Ctrl-C during the consume phase: what was measured is printed, whatever was taken is
// acked or given back (nothing stays leased), and the exit is 130.
func TestBenchInterruptedDuringConsume(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	url, firstAck, open := ackGate(t, b)
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, out, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() {
		done <- Run(f, []string{"bench", "t", "--count", "2000", "--size", "8", "-j", "4", "--consume", "-o", "json", "-s", url})
	}()
	select {
	case <-firstAck:
	case code := <-done:
		t.Fatalf("bench ended (exit %d) before its first ack: %s", code, errOut)
	}
	f.Signals.Trigger(syscall.SIGINT)
	open()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130; stderr %s", code, errOut)
	}
	r := decodeBenchJSON(t, out.String())
	if !*r.Interrupted || r.Consume == nil || *r.Produce.Messages != 2000 || *r.Consume.Messages >= 2000 {
		t.Errorf("report %s: want interrupted during consume, 2000 produced", out)
	}
	st, err := b.Stats("t")
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlight() != 0 || st.Acked() != int(*r.Consume.Acked) || st.Available()+st.Acked() != 2000 {
		t.Errorf("broker available=%d inflight=%d acked=%d, report acked %d: want nothing leased, the rest available",
			st.Available(), st.InFlight(), st.Acked(), *r.Consume.Acked)
	}
	if !bytes.Contains(errOut.Bytes(), []byte("narad: interrupted: the figures are what was measured until then; bench's messages still in t: ")) {
		t.Errorf("stderr %q: want the interruption said", errOut)
	}
}

// On a terminal each phase's latencies are drawn as a histogram under the table, in
// 80 columns, with p50, p95 and p99 marked; through a pipe only the table comes.
func TestBenchHistogramOnATerminal(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	t.Setenv("NO_COLOR", "1")
	res := runCLI(t, nil, true, "bench", "t", "--count", "300", "--consume", "--color", "never", "-s", b.URL())
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(res.stdout, "\n")
	titles, marks := 0, map[string]int{}
	for _, l := range lines {
		if w := utf8.RuneCountInString(l); w > 80 {
			t.Errorf("a line of %d columns: %q", w, l)
		}
		if strings.HasPrefix(l, "produce latency, ") || strings.HasPrefix(l, "consume latency, ") {
			titles++
		}
		if strings.Contains(l, "│") && strings.Contains(l, "█") || strings.Contains(l, "▏") {
			for _, m := range []string{"p50", "p95", "p99"} {
				if strings.Contains(l, "  "+m) || strings.Contains(l, " "+m+" ") || strings.HasSuffix(l, " "+m) {
					marks[m]++
				}
			}
		}
	}
	if titles != 2 || marks["p50"] != 2 || marks["p95"] != 2 || marks["p99"] != 2 {
		t.Errorf("%d histograms, marks %v: want two, each with p50, p95 and p99 once\n%s", titles, marks, res.stdout)
	}
	res = runCLI(t, nil, false, "bench", "t", "--count", "10", "-s", b.URL())
	if strings.Contains(res.stdout, "latency, ") || strings.Contains(res.stdout, "█") {
		t.Errorf("a histogram through a pipe:\n%s", res.stdout)
	}
}

func TestBucketLabel(t *testing.T) {
	for _, c := range []struct {
		from, to float64
		want     string
	}{
		{0, 0.001, "0–1µs"}, {0.2, 0.5, "200–500µs"}, {0.5, 1, "500µs–1ms"}, {1, 2, "1–2ms"},
		{500, 1000, "500ms–1s"}, {1000, 2000, "1–2s"},
	} {
		if got := bucketLabel(c.from, c.to); got != c.want {
			t.Errorf("bucketLabel(%v, %v) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

// A terminal narrower than 80 columns draws the histograms as narrow as it is, not
// at 80 columns that the terminal wraps into bars twice as many.
func TestBenchHistogramFitsANarrowTerminal(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(true, true, true)
	ios.SetWidth(44)
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	if code := Run(f, []string{"bench", "t", "--count", "200", "--consume", "--color", "never", "-s", b.URL()}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	bars := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.Contains(l, "│") || strings.ContainsAny(l, "╭╰├") || strings.HasPrefix(l, "│") {
			continue // the table's lines
		}
		bars++
		if w := utf8.RuneCountInString(l); w > 44 {
			t.Errorf("a histogram line of %d columns on a terminal of 44: %q", w, l)
		}
	}
	if bars == 0 {
		t.Fatalf("no histogram:\n%s", out)
	}
}

// After the first Ctrl-C, bench waiting for its produce requests a moment later says
// what it waits for and how not to: against a node that does not answer it waited an
// attempt's whole timeout (30 s and more) with nothing on stderr about the stop.
func TestBenchFirstInterruptSaysWhatItWaitsFor(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// Produce answers wait for the gate, which the line opens once it is out.
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	var produced atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/produce") {
			produced.Add(1)
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		b.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	noticed := make(chan struct{})
	noteStoppingAfter(t, 10*time.Millisecond, func() { close(noticed); open() })
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, _, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() { done <- Run(f, []string{"bench", "t", "--count", "1000", "-s", srv.URL}) }()
	for produced.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	f.Signals.Trigger(syscall.SIGINT)
	select {
	case <-noticed:
	case <-time.After(20 * time.Second):
		t.Error("20s after the signal, nothing said what the run waits for")
		open()
	}
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	const note = "narad: stopping: waiting for the requests already out to be answered (Ctrl-C again to abandon them)\n"
	if got := errOut.String(); strings.Count(got, note) != 1 {
		t.Errorf("stderr %q\nwant %q once", got, note)
	}
}

// A node that goes away during the consume phase: bench says so once (as sub does) and
// waits for it, and the first Ctrl-C ends the wait with what was measured (exit 130).
// It waited in silence, and only a second Ctrl-C ended it.
func TestBenchNodeLostDuringConsume(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// After the first ack, the next consume is answered 503 on a connection that then
	// closes, and nothing listens any more: the retries find the node gone.
	var acked atomic.Bool
	var once sync.Once
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/ack"):
			defer acked.Store(true)
		case strings.HasSuffix(r.URL.Path, "/consume") && acked.Load():
			once.Do(func() { ln.Close() })
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b.Handler().ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, out, _ := iostreams.Test()
	errOut := &lockedWriter{w: &strings.Builder{}}
	ios.ErrOut = errOut
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() {
		done <- Run(f, []string{"bench", "t", "--count", "500", "--size", "8", "-j", "1", "--consume", "-o", "json", "-s", "http://" + ln.Addr().String()})
	}()
	const lost = "; retrying\n"
	bound := time.After(20 * time.Second) // bounds a hang only
	for !strings.Contains(errOut.String(), lost) {
		select {
		case code := <-done:
			t.Fatalf("bench ended (exit %d) without saying the node was lost: %s", code, errOut)
		case <-bound:
			t.Fatalf("bench said nothing of the node it lost: %s", errOut)
		case <-time.After(5 * time.Millisecond):
		}
	}
	f.Signals.Trigger(syscall.SIGINT)
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("exit %d, want 130; stderr %s", code, errOut)
		}
	case <-time.After(20 * time.Second): // bounds a hang only
		t.Fatalf("bench did not end at the first Ctrl-C while it waited for the node; stderr %s", errOut)
	}
	if got := errOut.String(); strings.Count(got, "narad: lost node http://"+ln.Addr().String()+": ") != 1 || strings.Count(got, lost) != 1 {
		t.Errorf("stderr %q: want the node said lost once", got)
	}
	if r := decodeBenchJSON(t, out.String()); !*r.Interrupted || r.Consume == nil {
		t.Errorf("report %s: want interrupted during consume", out)
	}
}
