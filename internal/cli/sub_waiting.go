package cli

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
)

// waitingNoticeAfter is how long a read bounded by --count alone (no --timeout) may
// wait for messages, holding none, before it says so once on stderr. A script or a CI
// job waiting for messages that never come would otherwise hang without a word. A
// variable so that tests need not wait that long.
var waitingNoticeAfter = 30 * time.Second

// waitingNoticed is called once the line is out (tests wait on it).
var waitingNoticed = func() {}

// timeoutHint is the waiting line's hint for a command that has --timeout.
const timeoutHint = "--timeout D stops waiting"

// readProgress is where a read stands, for watchWaiting: how many messages it has
// had, and whether it holds any now (a command running, a line a slow reader has not
// taken: working, not waiting); ok is false until the read has started.
type readProgress func() (n int64, holding, ok bool)

// watchWaiting says, once, when a read of count messages has held nothing and had
// nothing new for waitingNoticeAfter: "narad: waiting on orders: nothing for 30s, 2 of
// --count 5 so far", and hint (what bounds the wait) in parentheses when there is
// one. With skips (a read that keeps only some messages: --filter, --grep, --since,
// --until) n counts those kept, and the messages read and skipped meanwhile are no
// progress: "no match for 30s, 0 of --count 1 so far, 812 read without a match" (and
// how many of them the filter failed on), so that a filter that never matches (a
// typo, an expression wrong for the data) does not look like a quiet topic. The
// returned func ends the watch.
func (e runEnv) watchWaiting(topic string, count int, hint string, skips *readSkips, progress readProgress) (stop func()) {
	if hint != "" {
		hint = " (" + hint + ")"
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(waitingNoticeAfter / 10)
		defer tick.Stop()
		had, since := int64(-1), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n, holding, ok := progress()
				if !ok || holding || n != had {
					had, since = n, now
					continue
				}
				if now.Sub(since) < waitingNoticeAfter {
					continue
				}
				nothing, skipped := "nothing", skips.unmatched(n)
				if skipped != "" {
					nothing = "no match"
				}
				fmt.Fprintf(e.IO.ErrOut, "narad: waiting on %s: %s for %s, %d of --count %d so far%s%s\n",
					render.Escape(topic), nothing, roundDuration(waitingNoticeAfter), n, count, skipped, hint)
				waitingNoticed()
				return
			}
		}
	}()
	return endWatch(done, exited)
}

// readSkips is what a read that keeps only some messages has read, for the waiting
// line: every message (replay.Options.Read) and, with --filter, the failures.
type readSkips struct {
	read atomic.Int64
	mt   *replay.Matcher // nil without --filter or --grep
}

// skipsOf has ro count what it reads when it keeps only some messages (a matcher, a
// time range), and returns the count; nil when ro keeps every message it reads.
func skipsOf(ro *replay.Options) *readSkips {
	if ro.Match == nil && ro.Since.IsZero() && ro.Until.IsZero() {
		return nil
	}
	s := &readSkips{mt: ro.Match}
	ro.Read = &s.read
	return s
}

// unmatched is the waiting line's account of the messages read and not kept, kept of
// them kept: "" when none was skipped (or the read keeps all).
func (s *readSkips) unmatched(kept int64) string {
	if s == nil {
		return ""
	}
	read := s.read.Load()
	if read <= kept {
		return ""
	}
	line := fmt.Sprintf(", %d read without a match", read-kept)
	if s.mt != nil {
		if failed := s.mt.FailedNow(); failed > 0 {
			line += fmt.Sprintf(" (--filter failed on %d)", failed)
		}
	}
	return line
}

// endWatch is the stop of a watch whose goroutine may write a line (it closes exited
// when it ends): it ends the watch and waits for it briefly, so that a line on its way
// goes before the run's last ones, while a stderr that takes nothing (a paused pager)
// never holds up the end.
func endWatch(done, exited chan struct{}) func() {
	return func() {
		close(done)
		select {
		case <-exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// nodeAnswered is a client hook that notes the node's first answer below 500: until
// then a run waits for the node, which the retry notices speak of, not for messages.
type nodeAnswered struct{ atomic.Bool }

func (a *nodeAnswered) OnAnswer(e client.AnswerEvent) {
	if e.Status < 500 {
		a.Store(true)
	}
}

// nodeHeard is a client hook that notes the node's first HTTP answer, whatever its
// status (a 502 is the node, or its relay, speaking). A run that --timeout ends
// before one came never reached a node that took the connection and said nothing:
// a failure for a script to see (neverAnswered), not a run done.
type nodeHeard struct{ atomic.Bool }

func (h *nodeHeard) OnAnswer(client.AnswerEvent) { h.Store(true) }

// neverAnswered is the exit of a run whose --timeout ended it before the node answered
// any request: exit 1 with the line exec mode's first request (the topic's lease) fails
// with in the same case, "op: no answer before --timeout ran out (waiting for URL)".
func (e runEnv) neverAnswered(c *client.Client, op, topic string) error {
	return e.apiFatal(c, fmt.Errorf("%s: %w", op, context.DeadlineExceeded), topic)
}

// waitsForCountAlone reports a consuming run bounded by --count alone, which
// waitingNotice watches: a run without --count is a worker, for which waiting is the
// job, and one with --timeout or --drain ends on its own.
func (opts *SubOptions) waitsForCountAlone() bool {
	return opts.Count > 0 && opts.Timeout == 0 && !opts.Drain
}

// waitingNotice is watchWaiting for the consume run co is about to start, once the
// node has answered (answered, the run's client's hook; nil when not watched).
// counted is the handler's own count (exec mode's Pipelining.Counted), nil when
// --count counts messages taken: exec mode counts messages finished, and one that
// failed and came back was taken twice, so the line says how many are finished, as
// --count means.
func (opts *SubOptions) waitingNotice(co *consumer.Options, answered *nodeAnswered, counted func() (consumer.MessageCount, <-chan struct{})) (stop func()) {
	if answered == nil {
		return func() {}
	}
	var live atomic.Pointer[consumer.Live]
	prev := co.Live
	co.Live = func(l consumer.Live) {
		live.Store(&l)
		if prev != nil {
			prev(l)
		}
	}
	return opts.watchWaiting(opts.Topic, opts.Count, timeoutHint, nil, func() (int64, bool, bool) {
		l := live.Load()
		if l == nil || !answered.Load() {
			return 0, false, false
		}
		if counted != nil {
			n, _ := counted()
			return int64(n.Finished), l.Held() > 0, true
		}
		return l.Stats().Received, l.Held() > 0, true
	})
}

// answeredSource is a replay source that notes the topic's first answer: until then a
// read waits for the node, not for messages.
type answeredSource struct {
	replay.Source
	answered atomic.Bool
}

func (s *answeredSource) Topic(ctx context.Context, name string) (*client.Topic, error) {
	t, err := s.Source.Topic(ctx, name)
	if err == nil {
		s.answered.Store(true)
	}
	return t, err
}

// consumesOut is a client hook that knows the consumes out and when each was due its
// answer (sent, plus its long poll's wait): at a stop the run waits for those, since
// the node may be leasing messages for them, and a node that does not answer holds it
// up for a while, which the stop line then says (noteRequestsOut).
type consumesOut struct {
	mu      sync.Mutex
	due     map[client.Exchange][]time.Time
	stopped time.Time // when the run stopped; zero before
	grace   time.Duration
}

// stopAt notes the stop when stopped closes (until done), after which the loop cuts a
// consume out grace past its wait (consumer.Options.AnswerGrace).
func (c *consumesOut) stopAt(stopped, done <-chan struct{}, grace time.Duration) {
	go func() {
		select {
		case <-stopped:
			c.mu.Lock()
			c.stopped, c.grace = time.Now(), grace
			c.mu.Unlock()
		case <-done:
		}
	}()
}

// cutAt is when a request sent as e is cut by the run's stop, for the no-answer line
// (slowNotice): ok is false for one the stop does not cut, or before the stop.
func (c *consumesOut) cutAt(e client.SentEvent) (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Op != client.OpConsume || c.stopped.IsZero() {
		return time.Time{}, false
	}
	return c.stopped.Add(e.Wait + c.grace), true
}

func (c *consumesOut) OnSent(e client.SentEvent) {
	if e.Op != client.OpConsume {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due == nil {
		c.due = make(map[client.Exchange][]time.Time)
	}
	c.due[e.Exchange] = append(c.due[e.Exchange], time.Now().Add(e.Wait))
}

func (c *consumesOut) OnAnswer(e client.AnswerEvent) { c.done(e.Exchange) }

func (c *consumesOut) OnTransportError(e client.TransportErrorEvent) { c.done(e.Exchange) }

func (c *consumesOut) done(x client.Exchange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropFirst(c.due, x)
}

// overdue reports whether a consume out was due its answer more than d ago.
func (c *consumesOut) overdue(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	late := time.Now().Add(-d)
	for _, ds := range c.due {
		if ds[0].Before(late) {
			return true
		}
	}
	return false
}
