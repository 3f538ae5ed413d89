package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/supervisor"
)

// redeliverer is a Source that gives a nacked message back as a node does: queued
// again with the same partition and offset and a new receipt handle ("a#2" for the
// second delivery of "a").
type redeliverer struct {
	*consumertest.Source
	mu    sync.Mutex
	msgs  map[string]client.Message
	times map[string]int
}

func newRedeliverer(msgs ...client.Message) *redeliverer {
	r := &redeliverer{Source: consumertest.New(), msgs: map[string]client.Message{}, times: map[string]int{}}
	r.Status = func(a client.Action, h string) int {
		if a == client.Nack {
			r.mu.Lock()
			m, ok := r.msgs[h]
			r.mu.Unlock()
			if ok {
				base, _, _ := strings.Cut(h, "#")
				r.push(m, base)
			}
		}
		return 204
	}
	for _, m := range msgs {
		r.push(m, m.ReceiptHandle)
	}
	return r
}

func (r *redeliverer) push(m client.Message, base string) {
	r.mu.Lock()
	r.times[base]++
	if n := r.times[base]; n > 1 {
		m.ReceiptHandle = fmt.Sprintf("%s#%d", base, n)
	}
	r.msgs[m.ReceiptHandle] = m
	r.mu.Unlock()
	r.Push(m)
}

// settleAt is when handle was settled with a.
func settleAt(src *consumertest.Source, a client.Action, handle string) time.Time {
	for _, s := range src.Settles() {
		if s.Action == a && slices.Contains(s.Handles, handle) {
			return s.At
		}
	}
	return time.Time{}
}

// A message that fails again in the same run is held with backoff before it is given
// back (the first failure gives it back at once), with a line on stderr per failure.
func TestARepeatedFailureIsHeldWithBackoff(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "log")
	src := newRedeliverer(msg("a", "exit 1"))
	o := opts("log", log, "script")
	o.RetryBackoff = 20 * time.Millisecond
	o.RetryDelayMax = 50 * time.Millisecond
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 4, Wait: time.Second})

	ends := eventsOf(readLog(t, log), "end")
	if len(ends) != 4 {
		t.Fatalf("log %v, want 4 runs", readLog(t, log))
	}
	holds := []time.Duration{0, 40 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	for i, e := range ends {
		at := settleAt(src.Source, client.Nack, e.handle)
		if at.IsZero() {
			t.Fatalf("run %d (%s) not nacked", i+1, e.handle)
		}
		if d := at.Sub(e.at); d < holds[i] {
			t.Errorf("failure %d nacked %v after it ended, want a hold of %v", i+1, d, holds[i])
		}
	}
	want := []string{
		`nacked \(attempt 1\)`,
		`nacked, next try in 40ms \(attempt 2\)`,
		`nacked, next try in 50ms \(attempt 3\)`,
		`nacked, next try in 50ms \(attempt 4\)`,
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stderr %q, want a line per failure", stderr.String())
	}
	for i, w := range want {
		re := regexp.MustCompile(`^\[p4 @7\] exit 1 after \d+\.\d\ds: ` + w + `$`)
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q, want %s", i+1, lines[i], re)
		}
	}
	if s := r.Stats; s.Received != 4 || s.Nacked != 4 || s.Failed != 4 || r.sup.Failures() != 4 {
		t.Errorf("stats %+v, failures %d: want 4 received, nacked and failed", s, r.sup.Failures())
	}
}

// A message held after a failure keeps its lease but not its run slot: with -j 1
// the next message runs meanwhile, rather than everything waiting behind a poison one.
func TestAHeldMessageDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "log")
	src := newRedeliverer(msg("poison", "exit 1"))
	o := opts("log", log, "script")
	o.RetryBackoff = time.Minute // the second failure holds it for the rest of the test
	stop := make(chan struct{})
	done := make(chan runResult)
	go func() {
		done <- runSup(t, context.Background(), src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second})
	}()
	waitFor(t, "the second failure", func() bool { return len(eventsOf(readLog(t, log), "end")) == 2 })
	src.Push(msg("good", "exit 0"))
	waitFor(t, "the other message to be acked", func() bool { return len(src.Handles(client.Ack)) == 1 })
	close(stop)
	r := <-done
	var poisonRuns int
	for _, e := range eventsOf(readLog(t, log), "start") {
		if strings.HasPrefix(e.handle, "poison") {
			poisonRuns++
		}
	}
	if poisonRuns != 2 {
		t.Errorf("the failing message ran %d times, want 2 (held after the second)", poisonRuns)
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"poison", "poison#2"}) {
		t.Errorf("nacked %v, want both deliveries of the poison message (the held one at the stop)", got)
	}
	if r.Stats.Acked != 1 {
		t.Errorf("stats %+v", r.Stats)
	}
}

// Held messages are bounded: with -j 1, one running (or waiting) and at most two
// leases in all, so failures cannot pile up leases. In a synctest bubble, so that
// "nothing more happens" can be waited for: synctest.Wait returns only once every
// goroutine of the run waits (a command running keeps it from returning).
func TestHeldLeasesAreBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "log")
		src := consumertest.New()
		for i := range 5 {
			src.Push(msg(fmt.Sprintf("m%d", i), "exit 1"))
		}
		o := opts("log", log, "script")
		o.RetryDelay = time.Minute // every failure is held
		stop := make(chan struct{})
		done := make(chan runResult)
		go func() {
			done <- runSup(t, context.Background(), src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second})
		}()
		waitFor(t, "two failures", func() bool { return len(eventsOf(readLog(t, log), "end")) >= 2 })
		// Whatever the two failures let happen has happened: a third start is the failure.
		synctest.Wait()
		if n := len(eventsOf(readLog(t, log), "start")); n != 2 {
			t.Errorf("%d started with two leases held, want 2", n)
		}
		close(stop)
		r := <-done
		if n := len(eventsOf(readLog(t, log), "start")); n != 2 || r.Stats.Received != 2 {
			t.Errorf("%d started, %d taken: want 2 with two leases held", n, r.Stats.Received)
		}
		if r.Stats.Nacked != 2 {
			t.Errorf("stats %+v", r.Stats)
		}
	})
}

// producer records what is produced to the dead-letter topic.
type producer struct {
	mu    sync.Mutex
	got   []produced
	err   error
	block bool // wait for ctx's end, then fail with its error
}

type produced struct {
	topic, key string
	body       string
}

func (p *producer) Produce(ctx context.Context, topic string, body []byte, o client.ProduceOptions) error {
	p.mu.Lock()
	key := ""
	if o.Key != nil {
		key = *o.Key
	}
	p.got = append(p.got, produced{topic, key, string(body)})
	block, err := p.block, p.err
	p.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (p *producer) produced() []produced {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func keyed(handle, text, key string) client.Message {
	m := msg(handle, text)
	m.Key = &key
	return m
}

// After MaxAttempts failures the payload goes to the dead-letter topic with its key,
// and only then is the original acked.
func TestDeadLetterAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	src := newRedeliverer(keyed("a", "exit 3", "customer-42"))
	p := &producer{}
	o := opts("script")
	o.RetryBackoff = 10 * time.Millisecond
	o.MaxAttempts, o.DeadLetter, o.Producer = 3, "dlq", p
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 3, Wait: time.Second})
	if got := p.produced(); !slices.Equal(got, []produced{{"dlq", "customer-42", "exit 3"}}) {
		t.Errorf("produced %+v, want the payload once, with its key", got)
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"a#3"}) {
		t.Errorf("acked %v, want the third delivery", got)
	}
	if ackAt, dl := settleAt(src.Source, client.Ack, "a#3"), len(p.produced()); ackAt.IsZero() || dl != 1 {
		t.Errorf("ack %v after %d produces", ackAt, dl)
	}
	s := r.Stats
	if s.Received != 3 || s.Acked != 1 || s.Nacked != 2 || s.Failed != 3 || s.DeadLettered != 1 || r.sup.Failures() != 3 {
		t.Errorf("stats %+v, failures %d", s, r.sup.Failures())
	}
	re := regexp.MustCompile(`(?m)^\[p4 @7\] exit 3 after \d+\.\d\ds: produced to dlq and acked \(attempt 3 of 3\)$`)
	if !re.MatchString(stderr.String()) || !strings.Contains(stderr.String(), "nacked, next try in 20ms (attempt 2 of 3)") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// A dead-letter produce that fails leaves the message with the node: it is nacked
// (with backoff, as any failure), never acked, and the line says why.
func TestDeadLetterProduceFailureNacks(t *testing.T) {
	t.Parallel()
	src := newRedeliverer(msg("a", "exit 1"))
	p := &producer{err: errors.New("produce: 503 not the leader")}
	o := opts("script")
	o.RetryBackoff = 10 * time.Millisecond
	o.MaxAttempts, o.DeadLetter, o.Producer = 1, "dlq", p
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 2, Wait: time.Second})
	if len(src.Handles(client.Ack)) != 0 || len(src.Handles(client.Nack)) != 2 || len(p.produced()) != 2 {
		t.Errorf("acked %v, nacked %v, %d produces", src.Handles(client.Ack), src.Handles(client.Nack), len(p.produced()))
	}
	for _, want := range []string{
		"cannot produce to dlq (produce: 503 not the leader): nacked (attempt 1 of 1)",
		"cannot produce to dlq (produce: 503 not the leader): nacked, next try in 20ms (attempt 2)",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if s := r.Stats; s.Acked != 0 || s.Nacked != 2 || s.Failed != 2 || s.DeadLettered != 0 {
		t.Errorf("stats %+v", s)
	}
}

// The hard stop is not held up by a dead-letter produce: it is abandoned and the
// message nacked.
func TestHardStopAbandonsADeadLetterProduce(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "exit 1"))
	p := &producer{block: true}
	o := opts("script")
	o.MaxAttempts, o.DeadLetter, o.Producer = 1, "dlq", p
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runResult)
	go func() { done <- runSup(t, ctx, src, o, consumer.Options{Wait: 5 * time.Second}) }()
	waitFor(t, "the dead-letter produce", func() bool { return len(p.produced()) == 1 })
	cancel()
	r := <-done
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"a"}) || r.Stats.DeadLettered != 0 {
		t.Errorf("nacked %v, stats %+v", got, r.Stats)
	}
}

// With Verbose, a failure's line ends with what the command last wrote on stderr.
func TestVerboseFailureLineHasTheStderrTail(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "errline first errline database-unreachable exit 2"))
	o := opts("script")
	o.Verbose = true
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	runSup(t, context.Background(), src, o, consumer.Options{Count: 1})
	re := regexp.MustCompile(`(?m)^\[p4 @7\] exit 2 after \d+\.\d\ds: nacked \(attempt 1\); its stderr ended: first \| database-unreachable$`)
	if !re.MatchString(stderr.String()) {
		t.Errorf("stderr %q, want %s", stderr.String(), re)
	}
}

// Extends that all fail (503s, a node away) do not keep a command running past the
// point where its lease has certainly run out: it is stopped as for a 410, and
// nothing is settled.
func TestALeaseThatCertainlyRanOutStopsTheCommand(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "log")
	src := consumertest.New()
	src.Push(msg("a", "sleep 5s"))
	src.Status = func(a client.Action, h string) int {
		if a == client.Extend {
			return 503
		}
		return 204
	}
	o := opts("log", log, "script")
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Lease: 300 * time.Millisecond})
	if got := append(src.Handles(client.Ack), src.Handles(client.Nack)...); len(got) != 0 {
		t.Errorf("settled %v after the lease ran out", got)
	}
	if len(eventsOf(readLog(t, log), "end")) != 0 {
		t.Errorf("log %v: the command ran to its end", readLog(t, log))
	}
	if r.Stats.LeaseLost != 1 || r.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("stats %+v outcome %v, want lease_lost 1", r.Stats, r.Outcome())
	}
	re := regexp.MustCompile(`(?m)^\[p4 @7\] stopped after \d+\.\d\ds: lease ran out \(no extend succeeded for 300ms\); nothing settled, it may be delivered again$`)
	if !re.MatchString(stderr.String()) {
		t.Errorf("stderr %q, want %s", stderr.String(), re)
	}
}

func TestDeadLetterOptionsGoTogether(t *testing.T) {
	base := opts("script")
	for _, o := range []supervisor.Options{
		{MaxAttempts: 3},
		{DeadLetter: "dlq"},
		{MaxAttempts: 3, DeadLetter: "dlq"}, // no producer
		{MaxAttempts: -1, DeadLetter: "dlq", Producer: &producer{}},
	} {
		o.Command = base.Command
		if _, err := supervisor.New(o); err == nil {
			t.Errorf("New accepted %+v", o)
		}
	}
}

// NARAD_ATTEMPT numbers the runs of a message, not its failures: a run that succeeded
// but whose ack the node refused (410, so the message comes back) is a run all the
// same. --max-attempts still counts failures: the run after it fails for the first
// time, and only the second failure dead-letters it.
func TestAttemptNumbersRunsNotFailures(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "exit 0"), msg("b", "exit 1"), msg("c", "exit 1")) // one message, delivered three times
	src.Status = func(a client.Action, h string) int {
		if a == client.Ack && h == "a" {
			return 410
		}
		return 204
	}
	file := filepath.Join(t.TempDir(), "attempts")
	p := &producer{}
	o := opts("attempt", file, "script")
	o.RetryBackoff = 10 * time.Millisecond
	o.MaxAttempts, o.DeadLetter, o.Producer = 2, "dlq", p
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Drain: true})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "a 1\nb 2\nc 3\n"; got != want {
		t.Errorf("NARAD_ATTEMPT per run:\n%s\nwant\n%s", got, want)
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"b"}) || len(p.produced()) != 1 {
		t.Errorf("nacked %v, %d dead letters: want b nacked, c dead-lettered", got, len(p.produced()))
	}
	for _, want := range []string{"nacked (attempt 1 of 2)", "produced to dlq and acked (attempt 2 of 2)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if s := r.Stats; s.AckGone != 1 || s.DeadLettered != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A command that cannot be run at all (here a script without a #! line: exec format
// error) fails every message without trying it. It used to count each start as the
// message's failure, so with --max-attempts every message went to the dead-letter
// topic and the run exited 0; without it the run failed every message for ever. Now
// the first such start ends the run with the reason, and the message is given back.
func TestACommandThatCannotRunEndsTheRunAndDeadLettersNothing(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "handler")
	if err := os.WriteFile(script, []byte("echo handled\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := newRedeliverer(keyed("a", "x", "customer-42"))
	p := &producer{}
	o := opts()
	o.Command = []string{script}
	o.RetryBackoff = time.Millisecond
	o.MaxAttempts, o.DeadLetter, o.Producer = 2, "dlq", p
	o.CountMessages = true
	stderr := &lockedBuffer{}
	o.Stderr = stderr
	r := runSup(t, context.Background(), src, o, consumer.Options{Count: 1, Wait: time.Second})
	if got := p.produced(); len(got) != 0 {
		t.Errorf("produced %+v to the dead-letter topic for a command that never ran", got)
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "exec format error") || !strings.Contains(r.err.Error(), "#!") {
		t.Errorf("run error %v, want the exec format error and a hint about #! (result %+v, stderr %q)", r.err, r.Result, stderr.String())
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{"a"}) {
		t.Errorf("nacked %v, want the one delivery given back", got)
	}
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v", got)
	}
	if !strings.Contains(stderr.String(), "exec format error): given back") {
		t.Errorf("stderr %q", stderr.String())
	}
}
