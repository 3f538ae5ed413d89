package cli

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

func ptr[T any](v T) *T { return &v }

func TestWatchRates(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q := func(produced, lag, ackedAhead int64) *topicQueue {
		return &topicQueue{produced: produced, lag: lag, ackedAhead: ackedAhead, hasProduced: true, hasAckedAhead: true}
	}
	prev := []TopicStatus{
		{Name: "orders", highWatermark: 100, queue: q(100, 40, 5)}, // 65 settled
		{Name: "recreated", highWatermark: 500, queue: q(500, 0, 0)},
		{Name: "nometrics", highWatermark: 10},
		{Name: "partial", highWatermark: 10, Partial: true, queue: q(10, 0, 0)},
		{Name: "failed", err: errors.New("boom"), Error: "boom"},
		{Name: "noacked", highWatermark: 1, queue: &topicQueue{produced: 1, hasProduced: true}},
	}
	cur := []TopicStatus{
		{Name: "new", highWatermark: 7, queue: q(7, 7, 0)},
		{Name: "orders", highWatermark: 150, queue: q(150, 30, 0)}, // 120 settled
		{Name: "recreated", highWatermark: 3, queue: q(3, 3, 0)},
		{Name: "nometrics", highWatermark: 13},
		{Name: "partial", highWatermark: 20, queue: q(20, 0, 0)},
		{Name: "failed", highWatermark: 5, queue: q(5, 0, 0)},
		{Name: "noacked", highWatermark: 3, queue: &topicQueue{produced: 3, hasProduced: true}},
	}
	watchRates(prev, t0, cur, t0.Add(2*time.Second))
	want := map[string][2]string{
		"new":       {"-", "-"},       // nothing to compare with
		"orders":    {"25.0", "27.5"}, // (150-100)/2, (120-65)/2
		"recreated": {"-", "-"},       // a counter that went back
		"nometrics": {"1.5", "-"},
		"partial":   {"-", "5.0"}, // placeholder stats are no high watermark
		"failed":    {"-", "-"},
		"noacked":   {"1.0", "-"}, // without acked-ahead, settled cannot be told
	}
	for _, r := range cur {
		got := [2]string{optRate(r.ProducePerSec), optRate(r.ConsumePerSec)}
		if got != want[r.Name] {
			t.Errorf("%s: rates %v, want %v", r.Name, got, want[r.Name])
		}
	}

	// No time between two readings: no rate rather than a division by zero.
	again := []TopicStatus{{Name: "orders", highWatermark: 200, queue: q(200, 0, 0)}}
	watchRates(cur, t0, again, t0)
	if again[0].ProducePerSec != nil || again[0].ConsumePerSec != nil {
		t.Errorf("rates over no time: %v %v", again[0].ProducePerSec, again[0].ConsumePerSec)
	}
}

func TestTopicQueueReadyAndSettled(t *testing.T) {
	// 10 above the frontier: 3 leased, 2 acked ahead, so 5 ready; 90 below it.
	q := topicQueue{produced: 100, lag: 10, inFlight: 3, ackedAhead: 2}
	if q.ready() != 5 || q.settled() != 92 {
		t.Errorf("ready %d settled %d, want 5 and 92", q.ready(), q.settled())
	}
}

func TestWaitLook(t *testing.T) {
	row := func(name string, hw int64, q *topicQueue) TopicStatus {
		return TopicStatus{Name: name, highWatermark: hw, queue: q}
	}
	empty := &topicQueue{produced: 10, hasProduced: true, hasAckedAhead: true}
	state, _, err := waitLook([]TopicStatus{row("a", 10, empty)}, nil)
	if err != nil || !allEmpty(state) {
		t.Fatalf("empty topic: %+v %v", state, err)
	}
	// Gauges behind the high watermark (a node refreshes them every few seconds):
	// their zeros are not an empty topic yet.
	state, _, err = waitLook([]TopicStatus{row("a", 13, empty)}, nil)
	if err != nil || allEmpty(state) || state[0].Unseen != 3 {
		t.Fatalf("stale gauges: %+v %v", state, err)
	}
	if got := state[0].left(); got != "a: 3 not yet in the node's metrics" {
		t.Errorf("left = %q", got)
	}
	busy := &topicQueue{produced: 10, lag: 6, inFlight: 2, ackedAhead: 1, hasProduced: true, hasAckedAhead: true}
	state, _, _ = waitLook([]TopicStatus{row("a", 10, busy)}, nil)
	if got := state[0].left(); got != "a: 3 ready, 2 in flight" {
		t.Errorf("left = %q", got)
	}
	// A topic the metrics say nothing of, metrics refused: cannot tell, never empty.
	if _, topic, err := waitLook([]TopicStatus{row("a", 0, nil)}, nil); !errors.Is(err, errWaitUnknown) || topic != "a" {
		t.Errorf("no series: %v (topic %q)", err, topic)
	}
	for _, st := range []int{403, 404} {
		merr := &client.Error{Op: client.OpMetrics, Status: st, Message: "no"}
		if _, _, err := waitLook([]TopicStatus{row("a", 0, empty)}, merr); !errors.Is(err, errWaitUnknown) {
			t.Errorf("metrics %d: %v", st, err)
		}
	}
	// A 401 is the credentials, not the metrics grant: that error, which waiting
	// cannot fix.
	merr401 := &client.Error{Op: client.OpMetrics, Status: 401, Message: "no"}
	if _, _, err := waitLook([]TopicStatus{row("a", 0, empty)}, merr401); err != merr401 || retryable(err) {
		t.Errorf("metrics 401: %v", err)
	}
	// A node that answers 503 for a moment may do better at the next look.
	merr := &client.Error{Op: client.OpMetrics, Status: 503, Message: "busy"}
	if _, _, err := waitLook([]TopicStatus{row("a", 0, empty)}, merr); errors.Is(err, errWaitUnknown) || !retryable(err) {
		t.Errorf("metrics 503: %v", err)
	}
}

// A watch over 500 topics costs one request per topic per refresh and one for the
// metrics; the topics are listed once, and again only when the metrics show the set
// of topics changed.
func TestWatchRequestsPerRefresh(t *testing.T) {
	const topics = 500
	cfg := devbroker.Config{Addr: "127.0.0.1:0"}
	for i := range topics {
		cfg.Topics = append(cfg.Topics, devbroker.TopicSpec{Name: fmt.Sprintf("t%03d", i), Partitions: 3})
	}
	b, err := devbroker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	ios, _, out, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml", "NARAD_ADDR": b.URL()}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	f.root = NewRootCmd(f) // the connection flags' defaults
	type counts struct{ info, metrics, list int }
	var seen []counts // the broker's counters before each wait, i.e. after each refresh
	waits := 0
	opts := &StatusOptions{Watch: true, Interval: 2 * time.Second, Count: 4, Output: "json",
		after: func(d time.Duration) <-chan time.Time {
			seen = append(seen, counts{b.Requests("topic_info"), b.Requests("metrics"), b.Requests("list_topics")})
			if waits++; waits == 2 {
				// After the second refresh a topic appears: the third refresh sees it in
				// the metrics, the fourth lists and reads it.
				if err := b.CreateTopic(devbroker.TopicSpec{Name: "zzz", Partitions: 3}); err != nil {
					t.Error(err)
				}
			}
			ch := make(chan time.Time, 1)
			ch <- time.Now() // the interval has passed: nothing sleeps
			return ch
		}}
	opts.runEnv = f.runEnv()
	if err := statusRun(opts); err != nil {
		t.Fatalf("watch: %v (%s)", err, errOut)
	}
	final := counts{b.Requests("topic_info"), b.Requests("metrics"), b.Requests("list_topics")}
	seen = append(seen, final)
	// A list is a request per page of 100 topics: 5 for 500, 6 for 501.
	want := []counts{
		{topics, 1, 5},
		{2 * topics, 2, 5},
		{3 * topics, 3, 5},    // zzz is in these metrics, not yet in the list
		{4*topics + 1, 4, 11}, // listed again, once, and read
	}
	if len(seen) != len(want) {
		t.Fatalf("%d refreshes, want %d: %+v", len(seen), len(want), seen)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("after refresh %d: %+v requests, want %+v", i+1, seen[i], want[i])
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], `"name":"zzz"`) || strings.Contains(lines[2], `"name":"zzz"`) {
		t.Errorf("%d lines; zzz in the last only? %v", len(lines), strings.Contains(lines[3], "zzz"))
	}
}

func viewSample(at time.Time, n int) watchSample {
	s := watchSample{At: at}
	for i := range n {
		s.Rows = append(s.Rows, TopicStatus{Name: fmt.Sprintf("topic-%02d", i), Partitions: 3, Retained: int64(i),
			InFlight: ptr(int64(1)), Lag: ptr(int64(2)), ProducePerSec: ptr(12.5), ConsumePerSec: ptr(0.0)})
	}
	return s
}

func plainStyles() render.Styles { return render.NewStyles(&bytes.Buffer{}, false) }

func checkFits(t *testing.T, lines []string, width, height int) {
	t.Helper()
	if len(lines) > height {
		t.Errorf("%d lines on a screen of %d", len(lines), height)
	}
	for _, l := range lines {
		// Columns, not runes: a wide character takes two.
		if n := render.Width(l); n > width {
			t.Errorf("line of %d columns on a screen of %d: %q", n, width, l)
		}
	}
}

func TestWatchViewFitsAndScrolls(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 80, 24)
	v.update(viewSample(at, 50))
	lines := v.view()
	checkFits(t, lines, 80, 24)
	if len(lines) != 24 {
		t.Errorf("%d lines, want the whole screen of 24", len(lines))
	}
	if lines[1] != "refreshed 10:11:12" {
		t.Errorf("state line %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "TOPIC ") || !strings.Contains(lines[2], "PRODUCE/S") {
		t.Errorf("header %q", lines[2])
	}
	if !strings.HasPrefix(lines[3], "topic-00 ") || !strings.Contains(lines[3], "12.5") {
		t.Errorf("first row %q", lines[3])
	}
	if got := lines[23]; got != "topics 1–20 of 50 · ↑↓ PgUp PgDn scroll · q quits" {
		t.Errorf("footer %q", got)
	}
	v.key("j")
	v.key("\x1b[B")
	if got := v.view()[3]; !strings.HasPrefix(got, "topic-02 ") {
		t.Errorf("after two downs the first row is %q", got)
	}
	v.key("G")
	lines = v.view()
	if !strings.HasPrefix(lines[22], "topic-49 ") || lines[23] != "topics 31–50 of 50 · ↑↓ PgUp PgDn scroll · q quits" {
		t.Errorf("at the end: %q / %q", lines[22], lines[23])
	}
	v.key("k") // up from the end
	if got := v.view()[3]; !strings.HasPrefix(got, "topic-29 ") {
		t.Errorf("one up from the end: %q", got)
	}
	// A resize reflows: narrower lines, fewer rows, still in bounds.
	v.resize(40, 10)
	lines = v.view()
	checkFits(t, lines, 40, 10)
	if !strings.HasSuffix(lines[3], "…") {
		t.Errorf("a cut row ends with an ellipsis: %q", lines[3])
	}
	for _, k := range []string{"q", "\x03"} {
		if !v.key(k) {
			t.Errorf("key %q does not quit", k)
		}
	}
	if v.key("x") {
		t.Error("any key quits")
	}
}

// TestWatchSubSecondRefreshesEachHaveTheirTime: with --interval under a second,
// each refresh's heading (the line's, and the screen's state line) has tenths, so two
// in the same second are told apart; the headings of 300ms refreshes repeated one
// time three times over. From a second on, the time stays whole seconds.
func TestWatchSubSecondRefreshesEachHaveTheirTime(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		interval time.Duration
		want     []string
	}{
		{300 * time.Millisecond, []string{"at 10:00:00.0 (every 300ms)", "at 10:00:00.3 (every 300ms)",
			"at 10:00:00.6 (every 300ms)", "at 10:00:00.9 (every 300ms)"}},
		{time.Second, []string{"at 10:00:00 (every 1s)", "at 10:00:01 (every 1s)", "at 10:00:02 (every 1s)",
			"at 10:00:03 (every 1s)"}},
	} {
		ios, _, out, errOut := iostreams.Test()
		env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml", "NARAD_ADDR": b.URL()}
		clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return clock },
			Signals: NewSignals()}
		f.root = NewRootCmd(f)
		opts := &StatusOptions{Watch: true, Interval: c.interval, Count: len(c.want), Output: "text",
			after: func(d time.Duration) <-chan time.Time {
				clock = clock.Add(c.interval)
				ch := make(chan time.Time, 1)
				ch <- clock
				return ch
			}}
		opts.runEnv = f.runEnv()
		if err := statusRun(opts); err != nil {
			t.Fatalf("watch: %v (%s)", err, errOut)
		}
		var headings []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "at ") {
				headings = append(headings, l)
			}
		}
		if strings.Join(headings, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("--interval %s: headings %q, want %q", c.interval, headings, c.want)
		}
	}

	v := newWatchView("http://127.0.0.1:7942", 300*time.Millisecond, plainStyles(), 80, 24)
	v.update(viewSample(time.Date(2026, 12, 1, 10, 0, 0, 600_000_000, time.UTC), 2))
	if got := v.view()[1]; got != "refreshed 10:00:00.6" {
		t.Errorf("screen: %q, want refreshed 10:00:00.6", got)
	}
}

func TestWatchViewNodeLost(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 100, 24)
	v.update(viewSample(at, 2))
	lost := errors.New("dial tcp 127.0.0.1:7942: connect: connection refused")
	v.update(watchSample{At: at.Add(2 * time.Second), Err: lost})
	v.update(watchSample{At: at.Add(4 * time.Second), Err: lost})
	lines := v.view()
	checkFits(t, lines, 100, 24)
	want := "node unreachable since 10:00:02: dial tcp 127.0.0.1:7942: connect: connection refused (trying every…"
	if lines[1] != want {
		t.Errorf("state line\n%q, want\n%q", lines[1], want)
	}
	// The last table stays on screen.
	if !strings.HasPrefix(lines[3], "topic-00 ") || !strings.HasPrefix(lines[4], "topic-01 ") {
		t.Errorf("table gone: %q", lines)
	}
	// Back: the state line says when it refreshed, the error is gone.
	v.update(viewSample(at.Add(6*time.Second), 2))
	if got := v.view()[1]; got != "refreshed 10:00:06" {
		t.Errorf("back: %q", got)
	}
}

// An error text of wide characters (CJK, emoji) is cut to the screen's columns: cut
// by runes, it ran to twice the width and wrapped the screen.
func TestWatchViewWideCharactersFit(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 60, 24)
	v.update(viewSample(at, 2))
	v.update(watchSample{At: at.Add(2 * time.Second), Err: errors.New(strings.Repeat("接続が拒否されました🚫", 8))})
	lines := v.view()
	checkFits(t, lines, 60, 24)
	if !strings.HasSuffix(lines[1], "…") || !strings.Contains(lines[1], "接続") {
		t.Errorf("state line %q: want the error, cut with an ellipsis", lines[1])
	}
	// The server in the title line is cut after the title the same way.
	v = newWatchView("http://"+strings.Repeat("ノード", 30), time.Second, plainStyles(), 60, 24)
	checkFits(t, v.view(), 60, 24)
}

func TestWatchViewMetricsRefusedAndNoTopics(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v := newWatchView("s", time.Second, plainStyles(), 80, 24)
	v.update(watchSample{At: at, MetricsErr: &client.Error{Op: client.OpMetrics, Status: 403, Message: "no"}})
	lines := v.view()
	if lines[1] != "refreshed 10:00:00 · in flight, lag and consume rates not shown: this user may …" {
		t.Errorf("state %q", lines[1])
	}
	if lines[2] != "no topics (create one with narad topic create NAME)" {
		t.Errorf("no topics: %q", lines)
	}
}

func TestFrameDrawsInPlace(t *testing.T) {
	got := string(frame([]string{"a", "b"}))
	// Home, each line erased to its end, everything below erased: no clear screen,
	// so nothing flickers, and no newline after the last line, so nothing scrolls.
	if got != "\x1b[Ha\x1b[K\r\nb\x1b[K\x1b[J" {
		t.Errorf("frame %q", got)
	}
}

// On a terminal: the alternate screen, a frame, and q ends the watch with exit 0;
// so does Ctrl-C (a SIGINT when the terminal is not raw).
func TestWatchTerminalQuits(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(stdin string, signal bool) (int, string) {
		ios, in, out, _ := iostreams.Test()
		in.WriteString(stdin)
		ios.SetTTY(true, true, true)
		env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml", "NARAD_ADDR": b.URL()}
		f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
		if signal {
			// Ctrl-C once the first frame is on screen.
			ios.Out = writeHook{out, func(p []byte) {
				if bytes.Contains(p, []byte("orders")) {
					f.Signals.Trigger(syscall.SIGINT)
				}
			}}
		}
		return Run(f, []string{"status", "--watch", "--interval", "1h"}), out.String()
	}
	for _, c := range []struct {
		stdin  string
		signal bool
	}{{"q", false}, {"\x03", false}, {"", true}} {
		code, out := run(c.stdin, c.signal)
		if code != 0 {
			t.Errorf("stdin %q signal %v: exit %d", c.stdin, c.signal, code)
		}
		if !strings.HasPrefix(out, "\x1b[?1049h\x1b[?25l\x1b[H") || !strings.HasSuffix(out, "\x1b[?25h\x1b[?1049l") ||
			!strings.Contains(out, "orders") {
			t.Errorf("stdin %q signal %v: screen %q", c.stdin, c.signal, out)
		}
	}
}

// writeHook calls after on each write, once it went through.
type writeHook struct {
	w     *bytes.Buffer
	after func([]byte)
}

func (h writeHook) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.after(p)
	return n, err
}

// A node that goes away while watched is a line saying so, not the end: the watch
// goes on, and once the node is back the rates are over the time since the last
// refresh that reached it.
func TestWatchLinesNodeLostAndBack(t *testing.T) {
	b, err := devbroker.New(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	var downHits atomic.Int32
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			downHits.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // as a node that went away: no answer at all
			}
			return
		}
		b.Handler().ServeHTTP(w, r)
	}))
	defer node.Close()

	ios, _, out, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml", "NARAD_ADDR": node.URL}
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return clock },
		Signals: NewSignals()}
	f.root = NewRootCmd(f)
	waits := 0
	opts := &StatusOptions{Watch: true, Interval: 2 * time.Second, Count: 4, Output: "json",
		after: func(d time.Duration) <-chan time.Time {
			waits++
			clock = clock.Add(2 * time.Second)
			switch waits {
			case 1: // 10 messages arrive, then the node goes away for one refresh
				for range 10 {
					if _, _, err := b.Produce("orders", "", []byte("m")); err != nil {
						t.Error(err)
					}
				}
				down.Store(true)
			case 2:
				down.Store(false)
			}
			ch := make(chan time.Time, 1)
			ch <- clock
			return ch
		}}
	opts.runEnv = f.runEnv()
	if err := statusRun(opts); err != nil {
		t.Fatalf("watch: %v (%s)", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4: %s", len(lines), out)
	}
	if !strings.HasPrefix(lines[1], `{"time":"2026-12-01T10:00:02.000Z","error":"cannot reach the node: `) || strings.Contains(lines[1], "topics") {
		t.Errorf("the refresh that did not reach the node: %s", lines[1])
	}
	// Within a refresh nothing is retried (the next refresh is the retry): the topic's
	// read and the metrics' were all the node saw of it while away, one of them twice
	// at most (net/http sends a GET again, once, when a kept-alive connection drops).
	if n := downHits.Load(); n > 3 {
		t.Errorf("%d requests while the node was away, want at most 3", n)
	}
	// 10 produced between the first refresh (10:00:00) and the third (10:00:04).
	if !strings.Contains(lines[2], `"time":"2026-12-01T10:00:04.000Z"`) || !strings.Contains(lines[2], `"produce_per_sec":2.5,"consume_per_sec":0}`) {
		t.Errorf("back: %s", lines[2])
	}
	if !strings.Contains(lines[3], `"produce_per_sec":0,"consume_per_sec":0}`) {
		t.Errorf("after: %s", lines[3])
	}
}

// TestWaitEmptyTimeoutBoundsTheLooks: status --wait-empty --timeout D ends at D even
// when a look waits for a node that never answers (it retried for minutes past it).
func TestWaitEmptyTimeoutBoundsTheLooks(t *testing.T) {
	r := runTTY(t, false, false, stopAfter(20*time.Second), "status", "t", "--wait-empty", "--timeout", "300ms", "-s", faultNode(t, "silent"))
	const want = "narad: timed out after 300ms; the last look failed: no answer before --timeout ran out\n"
	if r.code != ExitTimeout || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 3 and %q", r.code, r.stderr, want)
	}
}

// TestWaitEmptySaysWhatItWaitsFor: --wait-empty without --timeout says once, a while
// in, what it still waits for, so a CI job whose workers never drain does not hang
// without a word.
func TestWaitEmptySaysWhatItWaitsFor(t *testing.T) {
	said := shortWaitingNotice(t, 50*time.Millisecond)
	b := subBroker(t, "a")
	r := runTTY(t, false, false, stopWhen(said), "status", "t", "--wait-empty", "--interval", "100ms", "-s", b.URL())
	const want = "narad: still waiting after 50ms: t: 1 ready (--timeout D stops waiting)\n"
	if strings.Count(r.stderr, want) != 1 {
		t.Errorf("stderr %q; want %q once", r.stderr, want)
	}
}

// TestWaitEmptySaysWhyLooksKeepFailing: a node that answers every look 503 (busy)
// is waited for, from the first look on, and the wait says once, a while in, why it
// goes on: it failed at the first look, and a later run of failures was silent.
func TestWaitEmptySaysWhyLooksKeepFailing(t *testing.T) {
	said := shortWaitingNotice(t, 50*time.Millisecond)
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}},
		Faults: []devbroker.FaultRule{{Op: devbroker.OpMetrics, Status: http.StatusServiceUnavailable, Probability: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "narad: still waiting after 50ms: the last look failed: metrics: 503 injected fault " +
			"(trying again every 100ms; --timeout D stops waiting)\n"},
		{[]string{"--timeout", "10m"}, "narad: still waiting after 50ms: the last look failed: metrics: 503 injected fault " +
			"(trying again every 100ms; --timeout 10m ends it)\n"},
	} {
		args := append([]string{"status", "t", "--wait-empty", "--interval", "100ms", "-s", b.URL()}, c.args...)
		r := runTTY(t, false, false, stopWhen(said), args...)
		if strings.Count(r.stderr, c.want) != 1 || r.code != ExitTerminated {
			t.Errorf("%v: exit %d, stderr %q; want 143 and %q once", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestWatchFirstLookHintIsTrue: the watch tries its first look once (the next refresh
// is its retry), so a 502 there must not say it was retried with backoff.
func TestWatchFirstLookHintIsTrue(t *testing.T) {
	r := runTTY(t, false, false, stopAfter(20*time.Second), "status", "--watch", "-s", faultNode(t, "502"))
	const want = "narad: list topics: 502 Bad Gateway (the first look is not retried; try again later)\n"
	if r.code != ExitFailed || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
}

// TestWatchCtrlCDuringFirstLook: Ctrl-C ends a watch with exit 0 (CLI.md), also while
// its first look still waits for a node that has not answered.
func TestWatchCtrlCDuringFirstLook(t *testing.T) {
	url, took := acceptingNode(t)
	r := runTTY(t, false, false, func(s *Signals) {
		<-took
		s.Trigger(syscall.SIGINT)
		time.Sleep(20 * time.Second) // only a bound on a hang
		s.Trigger(syscall.SIGINT)
	}, "status", "--watch", "-s", url)
	if r.code != 0 || r.stderr != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
}

// TestWatchFirstLookTooLongHasAHint: a first look that runs out of its time is one
// line with what bounds it, as every fatal error is; the no-answer line before it
// gives the look's bound, not the request's 30s.
func TestWatchFirstLookTooLongHasAHint(t *testing.T) {
	u := faultNode(t, "silent")
	r := runTTY(t, false, false, stopAfter(40*time.Second), "status", "--watch", "-s", u)
	want := "narad: list topics: no answer from " + u + " after 3s; waiting for it up to 10s\n" +
		"narad: the node gave no whole answer within 10s (a look may take twice --interval, at least 10s; try again later)\n"
	if r.code != ExitFailed || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
}

// TestWaitEmptyTimeoutDuringALookKeepsTheLastAnswer: --timeout that comes while a
// look is on its way reports what the last look that answered saw, and not that
// the look "failed": it was only cut short (the look in flight is the usual case
// with a short --interval).
func TestWaitEmptyTimeoutDuringALookKeepsTheLastAnswer(t *testing.T) {
	b, err := devbroker.New(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Produce("t", "", []byte("left")); err != nil {
		t.Fatal(err)
	}
	timeout := make(chan time.Time, 1)
	var hits atomic.Int32
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 { // the first look: the topic, then the metrics
			b.Handler().ServeHTTP(w, r)
			return
		}
		// The second look: the timeout comes while it waits for the answer.
		select {
		case timeout <- time.Now():
		default:
		}
		<-r.Context().Done()
	}))
	defer node.Close()

	ios, _, _, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml", "NARAD_ADDR": node.URL}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	f.root = NewRootCmd(f)
	opts := &StatusOptions{WaitEmpty: true, Topics: []string{"t"}, Interval: time.Second, Timeout: time.Minute, Output: "text",
		after: func(d time.Duration) <-chan time.Time {
			if d == time.Minute {
				return timeout
			}
			ch := make(chan time.Time, 1)
			ch <- time.Now() // the interval has passed: nothing sleeps
			return ch
		}}
	opts.runEnv = f.runEnv()
	err = statusRun(opts)
	const want = "timed out after 1m0s, still there: t: 1 ready"
	if exitCodeFor(err) != ExitTimeout || err == nil || err.Error() != want {
		t.Errorf("exit %d, %v (stderr %q); want 3 and %q", exitCodeFor(err), err, errOut, want)
	}
}

// The screen a watch leaves once it is over names no keys: none work any more.
func TestWatchViewEndedNamesNoKeys(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 80, 24)
	v.update(viewSample(at, 50))
	v.ended = true
	lines := v.view()
	checkFits(t, lines, 80, 24)
	if got := lines[len(lines)-1]; got != "topics 1–20 of 50" {
		t.Errorf("footer %q", got)
	}
	v.update(viewSample(at, 2))
	lines = v.view()
	if len(lines) != 5 || !strings.HasPrefix(lines[4], "topic-01 ") {
		t.Errorf("all topics fit: %q, want no footer", lines)
	}
}

// At 80 columns a long topic name gives way before any number: the name column is
// cut with an ellipsis so in flight, lag and both rates always show.
func TestWatchViewLongTopicNameKeepsTheNumbers(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	long := strings.Repeat("orders-eu-west-", 4) // 60 characters
	s := watchSample{At: at, Rows: []TopicStatus{
		{Name: long, Partitions: 12, Retained: 1234567, SizeBytes: 987654321,
			InFlight: ptr(int64(4321)), Lag: ptr(int64(98765)), ProducePerSec: ptr(1234.5), ConsumePerSec: ptr(987.6)},
		{Name: "short", Partitions: 3, Retained: 1, InFlight: ptr(int64(0)), Lag: ptr(int64(0)),
			ProducePerSec: ptr(0.0), ConsumePerSec: ptr(0.0)},
	}}
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 80, 24)
	v.update(s)
	lines := v.view()
	checkFits(t, lines, 80, 24)
	header, row, short := lines[2], lines[3], lines[4]
	if !strings.HasSuffix(header, "PRODUCE/S  CONSUME/S") {
		t.Errorf("header cut: %q", header)
	}
	fields := strings.Fields(row)
	head, tail, cut := strings.Cut(fields[0], "…")
	if len(fields) != 9 || !cut || !strings.HasPrefix(long, head) || !strings.HasSuffix(long, tail) {
		t.Fatalf("row %q: want the name cut with an ellipsis and every number whole", row)
	}
	// partitions, messages, size (two fields), in flight, lag, produce/s, consume/s
	if got, want := strings.Join(fields[1:], " "), "12 1234567 941.9 MiB 4321 98765 1234.5 987.6"; got != want {
		t.Errorf("numbers %q, want %q", got, want)
	}
	if !strings.HasPrefix(short, "short ") || !strings.HasSuffix(short, "0.0        0.0") {
		t.Errorf("a short name stays whole, the columns aligned: %q", short)
	}
	for _, l := range lines[2:5] {
		if render.Width(l) > 80 {
			t.Errorf("%q wider than 80", l)
		}
	}
	// Wide enough: nothing is cut.
	v.resize(140, 24)
	if got := v.view()[3]; !strings.HasPrefix(got, long+" ") {
		t.Errorf("at 140 columns the name is cut: %q", got)
	}
}

// The screen's title says the interval as the rest of narad writes durations: "every
// 1h", not Go's "every 1h0m0s".
func TestWatchViewSaysTheIntervalShort(t *testing.T) {
	v := newWatchView("http://127.0.0.1:7942", time.Hour, plainStyles(), 80, 24)
	v.update(viewSample(time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC), 1))
	if title := v.view()[0]; !strings.HasSuffix(title, " · every 1h") {
		t.Errorf("title %q, want it to end \" · every 1h\"", title)
	}
}

// Names that share a prefix longer than the name column (a retry tier and its delay
// child) are cut in the middle, so their rows still say which is which; cut at the
// end both read orders-retry-….
func TestWatchViewCutNamesStayApart(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	names := []string{"orders-retry-30s", "orders-retry-30s-run", "orders-retry-5m", "orders-retry-5m-run"}
	var rows []TopicStatus
	for _, n := range names {
		rows = append(rows, TopicStatus{Name: n, Partitions: 3, Retained: 15, SizeBytes: 2623,
			InFlight: ptr(int64(0)), Lag: ptr(int64(15)), ProducePerSec: ptr(0.0), ConsumePerSec: ptr(0.0)})
	}
	v := newWatchView("http://127.0.0.1:7942", 2*time.Second, plainStyles(), 80, 24)
	v.update(watchSample{At: at, Rows: rows})
	lines := v.view()
	checkFits(t, lines, 80, 24)
	seen := map[string]bool{}
	for i, n := range names {
		shown := strings.Fields(lines[3+i])[0]
		head, tail, cut := strings.Cut(shown, "…")
		if !cut || !strings.HasPrefix(n, head) || !strings.HasSuffix(n, tail) {
			t.Errorf("%s shown as %q: want its two ends around an ellipsis", n, shown)
		}
		if seen[shown] {
			t.Errorf("two topics shown alike as %q", shown)
		}
		seen[shown] = true
	}
}
