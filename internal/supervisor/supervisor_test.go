package supervisor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/supervisor"
)

// msg is a message whose payload is the text given (sent as a JSON string), so a
// "script" helper reads it as steps.
func msg(handle, text string) client.Message {
	p, _ := json.Marshal(text)
	return client.Message{Topic: "t", Partition: 4, Offset: 7, Payload: p, Timestamp: 1790623277, ReceiptHandle: handle}
}

// lockedBuffer is a bytes.Buffer safe for the supervisor's concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// opts are Options for the helper with short, test-sized durations.
func opts(steps ...string) supervisor.Options {
	return supervisor.Options{
		Command:   helperCommand(steps...),
		Env:       helperEnviron(),
		KillGrace: time.Second,
	}
}

type runResult struct {
	consumer.Result
	err     error
	elapsed time.Duration
	sup     *supervisor.Supervisor
}

func runSup(t *testing.T, ctx context.Context, src consumer.Source, o supervisor.Options, co consumer.Options) runResult {
	t.Helper()
	s, err := supervisor.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if co.Topic == "" {
		co.Topic = "t"
	}
	if co.Lease == 0 {
		// Long enough that no test loses a lease to a loaded machine: a lease counts
		// as lost once no extend was confirmed for all of it, and the race detector
		// with other work on two CPUs can hold the keeper up for a second. A test of
		// the keeper sets a lease of its own.
		co.Lease = 30 * time.Second
	}
	start := time.Now()
	res, err := consumer.Run(ctx, src, s, co)
	return runResult{res, err, time.Since(start), s}
}

// event is a line of the helpers' log.
type event struct {
	what   string
	at     time.Time
	handle string
	pid    int
}

func readLog(t *testing.T, file string) []event {
	t.Helper()
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event
		var ns int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %s %d", &e.what, &ns, &e.handle, &e.pid); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		e.at = time.Unix(0, ns)
		evs = append(evs, e)
	}
	return evs
}

func eventsOf(evs []event, what string) []event {
	var out []event
	for _, e := range evs {
		if e.what == what {
			out = append(out, e)
		}
	}
	return out
}

// releaseWhen creates file (which a "waitfile" step waits for) once cond holds, or
// at the end of the test, so that a command runs for as long as a test needs to see
// something happen, however slow the machine, rather than for a fixed time.
func releaseWhen(t *testing.T, file string, cond func() bool) {
	t.Helper()
	ended, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for !cond() {
			select {
			case <-ended:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		_ = os.WriteFile(file, nil, 0o644)
	}()
	t.Cleanup(func() {
		close(ended)
		<-done
	})
}

// extendsIn counts the extend requests src had, and the handles they carried.
func extendsIn(src *consumertest.Source) (requests, handles int) {
	for _, s := range src.Settles() {
		if s.Action == client.Extend {
			requests++
			handles += len(s.Handles)
		}
	}
	return requests, handles
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestPayloadOnStdinAndEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := consumertest.New()
	key := "customer-42"
	binKey := "AP8=" // 0x00 0xff: not text
	stale := "stale"
	src.Push(
		client.Message{Topic: "orders", Partition: 4, Offset: 0, Key: &key,
			Payload: []byte(`{"order_id": "ord_123", "amount": 4999}`), Timestamp: 1790623277, ReceiptHandle: "h-json"},
		client.Message{Topic: "orders", Partition: 1, Offset: 9, Key: &binKey, KeyEncoding: "base64",
			Payload: []byte(`"iVBORw0KGgo="`), PayloadEncoding: "base64", Timestamp: 1790623278, ReceiptHandle: "h-bin"},
		client.Message{Topic: "orders", Partition: 2, Offset: 3,
			Payload: []byte(`"hello world"`), Timestamp: 1790623279, ReceiptHandle: "h-text"},
	)
	o := opts("env", filepath.Join(dir, "out"))
	o.Addr = "http://127.0.0.1:7942"
	// Inherited values of the variables must not leak through.
	o.Env = append(helperEnviron(), "NARAD_KEY="+stale, "NARAD_TOPIC=wrong")
	o.Concurrency = 1
	o.Stdout, o.Stderr = &lockedBuffer{}, &lockedBuffer{}

	got := map[string]helperRecord{}
	// One at a time, so each run's file can be read before the next overwrites it.
	for range 3 {
		r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1})
		if r.err != nil || r.Stats.Acked != 1 {
			t.Fatalf("run: %v %+v", r.err, r.Stats)
		}
		b, err := os.ReadFile(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		var v helperRecord
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		got[v.Env["NARAD_RECEIPT_HANDLE"]] = v
	}
	check := func(handle, stdin string, env map[string]string) {
		t.Helper()
		v, ok := got[handle]
		if !ok {
			t.Fatalf("no run for %s", handle)
		}
		if string(v.Stdin) != stdin {
			t.Errorf("%s: stdin %q, want %q", handle, v.Stdin, stdin)
		}
		if !maps.Equal(v.Env, env) {
			t.Errorf("%s: env %v, want %v", handle, v.Env, env)
		}
	}
	common := func(part, off, ts, handle string) map[string]string {
		return map[string]string{"NARAD_TOPIC": "orders", "NARAD_PARTITION": part, "NARAD_OFFSET": off,
			"NARAD_TIMESTAMP": ts, "NARAD_RECEIPT_HANDLE": handle, "NARAD_ADDR": "http://127.0.0.1:7942",
			"NARAD_ATTEMPT": "1"}
	}
	e := common("4", "0", "1790623277", "h-json")
	e["NARAD_KEY"] = "customer-42"
	check("h-json", `{"order_id": "ord_123", "amount": 4999}`, e)
	e = common("1", "9", "1790623278", "h-bin")
	e["NARAD_KEY_BASE64"] = "AP8="
	check("h-bin", "\x89PNG\r\n\x1a\n", e)
	// No key: no NARAD_KEY, not even the one inherited.
	check("h-text", "hello world", common("2", "3", "1790623279", "h-text"))
}

func TestExitCodeDecidesSettlement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ackCodes []int
		acked    []string
		nacked   []string
		outcome  consumer.Outcome
	}{
		{"default", nil, []string{"exit0"}, []string{"exit1", "exit3"}, consumer.OutcomeFailed},
		{"ack 3 too", []int{0, 3}, []string{"exit0", "exit3"}, []string{"exit1"}, consumer.OutcomeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := consumertest.New()
			src.Push(msg("exit0", "exit 0"), msg("exit1", "exit 1"), msg("exit3", "exit 3"))
			o := opts("script")
			o.AckExitCodes = tc.ackCodes
			o.Concurrency = 3
			r := runSup(t, context.Background(), src, o, consumer.Options{Count: 3})
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, tc.acked) {
				t.Errorf("acked %v, want %v", got, tc.acked)
			}
			if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, tc.nacked) {
				t.Errorf("nacked %v, want %v", got, tc.nacked)
			}
			n := int64(len(tc.nacked))
			if r.Stats.Failed != n || r.sup.Failures() != n || r.Outcome() != tc.outcome {
				t.Errorf("failed %d, failures %d, outcome %v", r.Stats.Failed, r.sup.Failures(), r.Outcome())
			}
		})
	}
}

func TestAllSucceededIsOK(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "exit 0"), msg("b", "exit 0"))
	r := runSup(t, context.Background(), src, opts("script"), consumer.Options{Count: 2})
	if r.Stats.Acked != 2 || r.Outcome() != consumer.OutcomeOK || r.Reason != consumer.StopCount {
		t.Errorf("result %+v outcome %v", r.Result, r.Outcome())
	}
}

func TestCommandThatCannotStart(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "x"))
	o := opts()
	o.Command = []string{filepath.Join(t.TempDir(), "no-such-program")}
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1})
	if r.Stats.Failed != 1 || r.Stats.Nacked != 1 || r.Outcome() != consumer.OutcomeFailed {
		t.Errorf("stats %+v outcome %v, want failed 1, nacked 1", r.Stats, r.Outcome())
	}
	if !strings.Contains(stderr.String(), "cannot start") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestLeaseIsExtendedWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	src := consumertest.New()
	// The command runs until four extends went out, not for a fixed time; the lease
	// is long enough that a loaded machine does not let it lapse meanwhile (a lease
	// of 600ms was lost when the keeper was held up for 400ms).
	src.Push(msg("slow", "waitfile "+release))
	releaseWhen(t, release, func() bool { n, _ := extendsIn(src); return n >= 4 })
	o := opts("script")
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Lease: 3 * time.Second})
	var extends []time.Time
	var ackAt time.Time
	for _, s := range src.Settles() {
		switch s.Action {
		case client.Extend:
			extends = append(extends, s.At)
		case client.Ack:
			ackAt = s.At
		}
	}
	// Any lease-length gap would have let it lapse.
	if len(extends) < 4 {
		t.Errorf("%d extends while the command ran, want 4", len(extends))
	}
	for _, e := range extends {
		if !ackAt.IsZero() && e.After(ackAt) {
			t.Error("an extend after the ack")
		}
	}
	if r.Stats.Acked != 1 || r.Stats.LeaseLost != 0 {
		t.Errorf("stats %+v", r.Stats)
	}
}

// TestExtendsOfManyCommandsShareRequests: with many commands running, their leases
// are extended together, one request for all those due, not one request per command.
func TestExtendsOfManyCommandsShareRequests(t *testing.T) {
	t.Parallel()
	const n = 20
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	release := filepath.Join(dir, "release")
	src := consumertest.New()
	for i := range n {
		src.Push(msg(fmt.Sprintf("m%d", i), "waitfile "+release))
	}
	// The commands run until two rounds' worth of handles were extended. A lease of
	// three seconds: a lease counts as lost once no extend was confirmed for all of
	// it, and on a loaded machine (the race detector, twenty commands starting, other
	// work on two CPUs) the keeper was held up for more than the 700ms a lease of a
	// second leaves, and all twenty were lost.
	releaseWhen(t, release, func() bool { _, h := extendsIn(src); return h >= 2*n })
	o := opts("log", log, "script")
	o.Concurrency = n
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: n, Lease: 3 * time.Second})
	if r.Stats.Acked != n || r.Stats.LeaseLost != 0 {
		t.Fatalf("stats %+v", r.Stats)
	}
	requests, handles := extendsIn(src)
	// Every second, a round of twenty handles. One request per handle would be 40
	// requests for two rounds; a round split in two by a loaded machine still carries
	// ten handles a request.
	t.Logf("%d extend requests for %d handles", requests, handles)
	if handles < 2*n || handles < 10*requests {
		t.Errorf("%d extend requests for %d handles: want the %d commands' leases extended together", requests, handles, n)
	}
}

func TestLeaseLostStopsTheCommandAndSettlesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	src.Push(msg("lost", "sleep 10s"))
	src.Status = func(a client.Action, h string) int {
		// Only once the command runs (and handles SIGTERM): a slow start is no test.
		if a == client.Extend && len(readLog(t, log)) > 0 {
			return 410
		}
		return 204
	}
	o := opts("log", log, "script")
	// The first extend after the command logged its start is answered 410. A lease
	// long enough not to lapse before that on a loaded machine: with 300ms, the
	// keeper held up that long lost the lease by the lapse rule and stopped the
	// command before it logged anything.
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Lease: 3 * time.Second})
	// The command sleeps 10s: a SIGTERM and no end in its log is the proof that it was
	// stopped, whatever the machine's load made of the timings.
	evs := readLog(t, log)
	if len(eventsOf(evs, "term")) != 1 || len(eventsOf(evs, "end")) != 0 {
		t.Errorf("log %v (run took %v), want the command stopped by SIGTERM", evs, r.elapsed)
	}
	if got := append(src.Handles(client.Ack), src.Handles(client.Nack)...); len(got) != 0 {
		t.Errorf("settled %v after a lost lease", got)
	}
	if r.Stats.LeaseLost != 1 || r.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("stats %+v outcome %v, want lease_lost 1 and exit 4", r.Stats, r.Outcome())
	}
}

func TestMaxProcessingTime(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("long", "sleep 10s"))
	o := opts("script")
	o.MaxProcessingTime = time.Second
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1})
	if r.elapsed > 6*time.Second {
		t.Errorf("run took %v", r.elapsed)
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"long"}) {
		t.Errorf("nacked %v", got)
	}
	if r.Stats.TimedOut != 1 || r.Stats.Nacked != 1 || r.Outcome() != consumer.OutcomeFailed {
		t.Errorf("stats %+v outcome %v, want timed_out 1", r.Stats, r.Outcome())
	}
}

func TestRetryDelayHoldsTheLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	src.Push(msg("fail", "exit 1"))
	o := opts("log", log, "script")
	// A lease long enough that a loaded machine does not let it lapse (the keeper can
	// be held up for a second), and a delay of two leases: some six extends, three
	// wanted.
	o.RetryDelay = 6 * time.Second
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Lease: 3 * time.Second})
	ends := eventsOf(readLog(t, log), "end")
	nacks := src.Settles()
	var nackAt time.Time
	extends := 0
	for _, s := range nacks {
		if s.Action == client.Nack {
			nackAt = s.At
		}
		if s.Action == client.Extend && len(ends) == 1 && s.At.After(ends[0].at) {
			extends++
		}
	}
	if len(ends) != 1 || nackAt.IsZero() {
		t.Fatalf("ends %v nack %v", ends, nackAt)
	}
	if d := nackAt.Sub(ends[0].at); d < o.RetryDelay {
		t.Errorf("nacked %v after the exit, want at least the %v retry delay", d, o.RetryDelay)
	}
	if extends < 3 {
		t.Errorf("%d extends during the retry delay, want the lease kept", extends)
	}
	if r.Stats.Nacked != 1 || r.Stats.Failed != 1 {
		t.Errorf("result %+v", r.Result)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	for i := range 8 {
		src.Push(msg(fmt.Sprintf("m%d", i), "sleep 1s"))
	}
	o := opts("log", log, "script")
	o.Concurrency = 4
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 8, Wait: time.Second})
	if r.Stats.Acked != 8 {
		t.Fatalf("stats %+v", r.Stats)
	}
	evs := readLog(t, log)
	if len(eventsOf(evs, "start")) != 8 || len(eventsOf(evs, "end")) != 8 {
		t.Fatalf("log %v", evs)
	}
	most := mostAtOnce(evs)
	// Never more than four at once, from the commands' own log rather than the
	// run's duration (the machine may be busy); that four can run, from the first
	// consume asking for four.
	if most > 4 {
		t.Errorf("%d commands at once, want at most 4", most)
	}
	if cs := src.Consumes(); len(cs) == 0 || cs[0].Opts.Max != 4 {
		t.Errorf("consumes %+v, want the first to ask for 4", cs)
	}
	for _, c := range src.Consumes() {
		if c.Opts.Max > 4 || c.Opts.Max < 1 {
			t.Errorf("a consume asked for %d with 4 slots", c.Opts.Max)
		}
	}
}

func TestSoftStopGivesBackWhatHasNotStartedAndLetsRunningFinish(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	// Two slots, but the node hands out four: two run, two wait for a slot.
	src.Over = 2
	for i := range 4 {
		src.Push(msg(fmt.Sprintf("m%d", i), "sleep 1s"))
	}
	o := opts("log", log, "script")
	o.Concurrency = 2
	stop := make(chan struct{})
	done := make(chan runResult)
	go func() {
		done <- runSup(t, context.Background(), src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second})
	}()
	waitFor(t, "two commands to start", func() bool { return len(eventsOf(readLog(t, log), "start")) == 2 })
	close(stop)
	r := <-done
	evs := readLog(t, log)
	var started []string
	for _, e := range eventsOf(evs, "start") {
		started = append(started, e.handle)
	}
	if len(started) != 2 || len(eventsOf(evs, "end")) != 2 {
		t.Fatalf("log %v, want the two running to finish and no other to start", evs)
	}
	var held []string
	for i := range 4 {
		if h := fmt.Sprintf("m%d", i); !slices.Contains(started, h) {
			held = append(held, h)
		}
	}
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(started)) {
		t.Errorf("acked %v, want the running ones %v", got, started)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, held) {
		t.Errorf("nacked %v, want the held ones %v", got, held)
	}
	firstEnd := eventsOf(evs, "end")[0].at
	for _, s := range src.Settles() {
		if s.Action == client.Nack && !s.At.Before(firstEnd) {
			t.Errorf("held messages nacked at %v, after the running ones ended (%v): not at once", s.At, firstEnd)
		}
	}
	if r.Reason != consumer.StopInterrupted || r.Outcome() != consumer.OutcomeInterrupted {
		t.Errorf("reason %v", r.Reason)
	}
}

func TestSoftStopEndsARetryDelayAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	// The running two run until the test releases them, so "at once" means before
	// that, on a machine of any speed.
	release := filepath.Join(dir, "release")
	src := consumertest.New()
	src.Push(msg("run1", "waitfile "+release), msg("run2", "waitfile "+release), msg("fail1", "exit 1"), msg("fail2", "exit 1"))
	o := opts("log", log, "script")
	o.Concurrency = 4
	o.RetryDelay = 30 * time.Second
	stop := make(chan struct{})
	done := make(chan runResult)
	go func() {
		done <- runSup(t, context.Background(), src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second})
	}()
	waitFor(t, "the failures to exit", func() bool { return len(eventsOf(readLog(t, log), "end")) == 2 })
	close(stop)
	// The held two are given back while the running two still run; waitFor fails
	// the test if that waits for the running ones (which never end unreleased).
	waitFor(t, "the held messages to be nacked", func() bool { return len(src.Handles(client.Nack)) == 2 })
	if got := len(eventsOf(readLog(t, log), "end")); got != 2 {
		t.Errorf("%d commands ended before the release, want only the 2 failures", got)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, []string{"run1", "run2"}) {
		t.Errorf("acked %v", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"fail1", "fail2"}) {
		t.Errorf("nacked %v", got)
	}
	if ends := eventsOf(readLog(t, log), "end"); len(ends) != 4 {
		t.Fatalf("log %v", ends)
	}
}

func TestShutdownGraceRunsOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	src.Push(msg("long", "sleep 10s"))
	o := opts("log", log, "script")
	o.ShutdownGrace = 300 * time.Millisecond
	stop := make(chan struct{})
	done := make(chan runResult)
	go func() {
		done <- runSup(t, context.Background(), src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second})
	}()
	waitFor(t, "the command to start", func() bool { return len(readLog(t, log)) == 1 })
	close(stop)
	r := <-done
	if r.elapsed > 5*time.Second {
		t.Errorf("took %v", r.elapsed)
	}
	if len(eventsOf(readLog(t, log), "term")) != 1 {
		t.Errorf("log %v, want SIGTERM at the end of the grace", readLog(t, log))
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"long"}) {
		t.Errorf("nacked %v", got)
	}
	if r.Reason != consumer.StopInterrupted {
		t.Errorf("reason %v", r.Reason)
	}
}

func TestHardStopKillsAndNacksAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	src := consumertest.New()
	src.Push(msg("a", "sleep 10s"), msg("b", "sleep 10s"))
	o := opts("log", log, "script")
	o.Concurrency = 2
	o.KillGrace = 10 * time.Second // the hard stop must not wait for it
	stop := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	sup, err := supervisor.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := &finishing{Supervisor: sup, entered: make(chan struct{})}
	done := make(chan consumer.Result)
	go func() {
		r, _ := consumer.Run(ctx, src, h, consumer.Options{Topic: "t", Stop: stop, Wait: 5 * time.Second, Lease: 30 * time.Second}) // too long to lapse on a loaded machine
		done <- r
	}()
	waitFor(t, "both commands to start", func() bool { return len(readLog(t, log)) == 2 })
	close(stop) // first signal: grace (30s by default)
	<-h.entered // the run took the first signal and waits for its running commands
	cancel()    // second signal
	start := time.Now()
	r := <-done
	// Well short of the 10s kill grace it must not wait for, and of the commands' 10s.
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("hard stop took %v", d)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("nacked %v", got)
	}
	for _, s := range src.Settles() {
		if s.CtxErr != nil {
			t.Errorf("a settlement on a cancelled context: %v", s.CtxErr)
		}
	}
	for _, e := range readLog(t, log) {
		if e.what == "end" {
			t.Errorf("%s ran to its end", e.handle)
		}
		if !processGone(e.pid) {
			t.Errorf("pid %d outlived the run", e.pid)
		}
	}
	if r.Reason != consumer.StopInterrupted {
		t.Errorf("reason %v", r.Reason)
	}
}

// finishing is a Supervisor that says when the run asks it to finish: the run has
// stopped taking, and waits for what runs.
type finishing struct {
	*supervisor.Supervisor
	entered chan struct{}
}

func (f *finishing) Finish(ctx context.Context, stopping <-chan struct{}) error {
	close(f.entered)
	return f.Supervisor.Finish(ctx, stopping)
}

func TestNoGrandchildOutlivesItsCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	src := consumertest.New()
	src.Push(msg("a", "x"))
	r := runSup(t, context.Background(), src, opts("spawn", pidFile), consumer.Options{Count: 1})
	if r.elapsed > 10*time.Second {
		t.Errorf("took %v", r.elapsed)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	waitFor(t, "the grandchild to be gone", func() bool { return processGone(pid) })
	if r.Stats.Acked != 1 {
		t.Errorf("stats %+v", r.Stats)
	}
}

func TestPrefixedOutputKeepsLinesWhole(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	for i := range 4 {
		m := msg(fmt.Sprintf("m%d", i), "")
		m.Partition, m.Offset = i, int64(10+i)
		src.Push(m)
	}
	o := opts("lines", "50", "some-output-line", "errline", "oops", "partial", "tail")
	o.Concurrency = 4
	o.Prefix = true
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	o.Stdout, o.Stderr = stdout, stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 4})
	if r.Stats.Acked != 4 {
		t.Fatalf("stats %+v", r.Stats)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		counts[line]++
	}
	for i := range 4 {
		p := fmt.Sprintf("[p%d @%d] ", i, 10+i)
		if counts[p+"some-output-line"] != 50 || counts[p+"tail"] != 1 {
			t.Errorf("%s: %d whole lines and %d tails, want 50 and 1", p, counts[p+"some-output-line"], counts[p+"tail"])
		}
		if !strings.Contains(stderr.String(), p+"oops\n") {
			t.Errorf("stderr %q lacks %q", stderr.String(), p+"oops")
		}
	}
	if len(counts) != 8 {
		t.Errorf("stdout has %d distinct lines, want 8: lines were mixed", len(counts))
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []supervisor.Options{
		{},
		{Command: []string{""}},
		{Command: []string{"true"}, Concurrency: -1},
	} {
		if _, err := supervisor.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// The hard stop ends the command's whole process group, what it started included,
// and returns once they are gone.
func TestHardStopKillsGrandchildrenToo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, pidFile := filepath.Join(dir, "log"), filepath.Join(dir, "pid")
	src := consumertest.New()
	src.Push(msg("a", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runResult)
	go func() {
		done <- runSup(t, ctx, src, opts("log", log, "spawn", pidFile, "sleep", "30s"), consumer.Options{Wait: 5 * time.Second})
	}()
	waitFor(t, "the grandchild to start", func() bool { b, _ := os.ReadFile(pidFile); return len(b) > 0 })
	cancel()
	r := <-done
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(b))
	waitFor(t, "the grandchild to be gone", func() bool { return processGone(pid) })
	for _, e := range readLog(t, log) {
		if !processGone(e.pid) {
			t.Errorf("pid %d outlived the run", e.pid)
		}
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"a"}) || r.Reason != consumer.StopInterrupted {
		t.Errorf("nacked %v, reason %v", got, r.Reason)
	}
}

// TestLeaseIsKeptWhileTheAckIsRetried: a command that succeeded keeps its message's
// lease until the ack has its answer, however long a 502/503 outage makes the client
// retry it; an extend answered 410 meanwhile (the ack landed first) loses nothing.
func TestLeaseIsKeptWhileTheAckIsRetried(t *testing.T) {
	t.Parallel()
	for _, extend := range []int{204, 410} {
		t.Run(strconv.Itoa(extend), func(t *testing.T) {
			t.Parallel()
			src := consumertest.New()
			src.Push(msg("m", "exit 0"))
			outage := make(chan struct{})
			var acking atomic.Bool
			src.Status = func(a client.Action, h string) int {
				switch a {
				case client.Ack:
					acking.Store(true)
					<-outage
				case client.Extend:
					// Only an extend of a message whose ack is on its way is answered so: one
					// sent while the command still ran (a loaded machine) keeps its lease.
					if acking.Load() {
						return extend
					}
				}
				return 204
			}
			o := opts("script")
			var stderr lockedBuffer
			o.Stderr = &stderr
			done := make(chan runResult, 1)
			// The lease must not lapse before the ack (while the command starts and
			// runs): a loaded machine held the keeper up for longer than the 90ms lease
			// this had, the lease was lost, no ack was sent and the test waited in vain.
			go func() {
				done <- runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Lease: 3 * time.Second})
			}()
			want := 3
			if extend == 410 {
				want = 1 // the keeper stops at a 410
			}
			waitFor(t, "extends while the ack is on its way", func() bool {
				var acked bool
				n := 0
				for _, s := range src.Settles() {
					switch s.Action {
					case client.Ack:
						acked = true
					case client.Extend:
						if acked {
							n++
						}
					}
				}
				return n >= want
			})
			close(outage)
			r := <-done
			if r.err != nil || r.Stats.Acked != 1 || r.Stats.LeaseLost != 0 || r.Stats.AckGone != 0 || r.Stats.Bugs != 0 {
				t.Errorf("err %v, stats %+v", r.err, r.Stats)
			}
			if r.Outcome() != consumer.OutcomeOK {
				t.Errorf("outcome %v", r.Outcome())
			}
			if got := stderr.String(); got != "" {
				t.Errorf("stderr %q", got)
			}
		})
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestOutputThatCannotBeWrittenIsNeverAcked: a command whose stdout cannot be written
// (a full disk) is nacked as failed, said so on stderr, and the run ends with the
// error; the reader of stdout gone (EPIPE) stops the run as a closed output, and
// what was not written is given back, not counted as failed.
func TestOutputThatCannotBeWrittenIsNeverAcked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		reason consumer.Reason
	}{
		{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}, consumer.StopFailed},
		{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}, consumer.StopOutputClosed},
	} {
		t.Run(c.err.Error(), func(t *testing.T) {
			t.Parallel()
			src := consumertest.New()
			for i := range 5 {
				src.Push(msg(fmt.Sprintf("h%d", i), "lines 1 out"))
			}
			o := opts("script")
			o.Stdout = failingWriter{c.err}
			var stderr lockedBuffer
			o.Stderr = &stderr
			r := runSup(t, context.Background(), src, o, consumer.Options{Drain: true})
			if r.Reason != c.reason {
				t.Errorf("reason %v, want %v (err %v)", r.Reason, c.reason, r.err)
			}
			if got := src.Handles(client.Ack); len(got) != 0 {
				t.Errorf("acked %v", got)
			}
			if r.Stats.Received != r.Stats.Nacked || r.Stats.Received == 0 || r.Stats.Received == 5 && c.reason == consumer.StopOutputClosed {
				t.Errorf("stats %+v: want what was taken nacked, and not all of it taken at EPIPE", r.Stats)
			}
			failedLine := strings.Contains(stderr.String(), "but its output could not be written")
			if errors.Is(c.err, syscall.EPIPE) {
				if r.err != nil || r.Stats.Failed != 0 || failedLine || r.Outcome() != consumer.OutcomeOK {
					t.Errorf("EPIPE: err %v, stats %+v, outcome %v, stderr %q", r.err, r.Stats, r.Outcome(), stderr.String())
				}
			} else if r.err == nil || !errors.Is(r.err, syscall.ENOSPC) || r.Stats.Failed == 0 || !failedLine {
				t.Errorf("ENOSPC: err %v, stats %+v, stderr %q", r.err, r.Stats, stderr.String())
			}
		})
	}
}
