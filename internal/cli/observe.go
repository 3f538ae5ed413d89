package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// What narad shows of the client's work is done here, by hooks on the client's
// events (internal/client/hooks.go): the client itself writes nothing.

// retryNoticeAfter is how long a call may retry in silence: past it, one line says
// what is going on, so nothing waits for minutes without a word.
const retryNoticeAfter = 3 * time.Second

// stderrLines writes whole lines to stderr, one at a time, for hooks called from
// many goroutines.
type stderrLines struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *stderrLines) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, line+"\n")
}

// verboseLog is -v: a line per request with its status and latency (or its
// transport error), and the older-node fallbacks as notes. Events never carry
// credentials, so neither can these lines.
type verboseLog struct{ out *stderrLines }

func (v verboseLog) OnAnswer(e client.AnswerEvent) {
	v.out.println(fmt.Sprintf("%s %s %d %s (%s)", e.Method, e.URL, e.Status, http.StatusText(e.Status), roundLatency(e.Latency)))
}

func (v verboseLog) OnTransportError(e client.TransportErrorEvent) {
	v.out.println(render.Escape(fmt.Sprintf("%s %s error: %s (%s)", e.Method, e.URL, describeErr(e.Err), roundLatency(e.Latency))))
}

func (v verboseLog) OnFallback(e client.FallbackEvent) {
	v.out.println("note: " + e.Fallback.String())
}

func roundLatency(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// retryNotice says, once per episode, that requests are being retried and why,
// when a call has been at it for longer than after; an answer that is not an error
// ends the episode.
type retryNotice struct {
	out   *stderrLines
	base  string // the node's URL, for connection errors
	after time.Duration
	// graceEnd, when set, is when a stop gives up what is still retried (a signal's
	// --shutdown-grace): the line says that when it comes before the budget ends.
	graceEnd func() time.Time

	mu    sync.Mutex
	shown bool
}

func (n *retryNotice) OnRetry(e client.RetryEvent) {
	if e.Elapsed < n.after {
		return
	}
	n.mu.Lock()
	shown := n.shown
	n.shown = true
	n.mu.Unlock()
	if !shown {
		var stopBy time.Time
		if n.graceEnd != nil {
			stopBy = n.graceEnd()
		}
		n.out.println(retryLine(n.base, e, stopBy))
	}
}

func (n *retryNotice) OnAnswer(e client.AnswerEvent) {
	if e.Status < 400 {
		n.mu.Lock()
		n.shown = false
		n.mu.Unlock()
	}
}

// slowNotice says, once per episode, that a request has had no answer for after (past
// its long poll's own wait): a node that takes the connection and never answers is
// otherwise a whole attempt's timeout (30s) of silence before the first retry line.
// An answer ends the episode, so a node that answers again and later stops answering
// is said again (a long-running sub). Requests are told apart by their Exchange only,
// so of identical ones out at once the oldest is taken for answered first: the line
// may come late, never early.
//
// A request costs a map entry and nothing else: one ticker, started with the first
// request, looks for one overdue every third of after. (A timer a request made a v3.1
// drain through a pipe, on one P, measurably slower.)
type slowNotice struct {
	out   *stderrLines
	base  string
	after time.Duration

	// cut, when set, says when the run's stop cuts a request out before its own
	// timeout would: the line then says that wait, not the attempt's timeout.
	cut requestCutter

	mu      sync.Mutex
	shown   bool // the line is out, or the run is over: nothing more to time
	closed  bool // the run is over: no episode after this one
	pending map[client.Exchange][]sentAt
	stop    chan struct{} // ends the ticker; nil until it runs
}

// requestCutter is a command's hook that knows when its stop cuts a request out
// (consumesOut: a sub's consumes, wait+AnswerGrace after the stop).
type requestCutter interface {
	cutAt(e client.SentEvent) (at time.Time, ok bool)
}

// sentAt is a request out, and when its silence is due a line.
type sentAt struct {
	due time.Time
	e   client.SentEvent
}

// close ends the notice with its run: a line due later would come after the run's
// last one. A line being written finishes first (under mu), so that what the run
// writes next comes after it.
func (n *slowNotice) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.shown, n.closed, n.pending = true, true, nil
	if n.stop != nil {
		close(n.stop)
		n.stop = nil
	}
}

func (n *slowNotice) OnSent(e client.SentEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.shown {
		return
	}
	if n.pending == nil {
		n.pending = make(map[client.Exchange][]sentAt)
	}
	n.pending[e.Exchange] = append(n.pending[e.Exchange], sentAt{time.Now().Add(e.Wait + n.after), e})
	if n.stop == nil {
		n.stop = make(chan struct{})
		go n.watch(n.stop)
	}
}

// watch looks for a request overdue until the line is out or the notice is closed.
func (n *slowNotice) watch(stop <-chan struct{}) {
	t := time.NewTicker(max(n.after/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if n.overdue(now) {
				return
			}
		}
	}
}

// overdue writes the line for a request past its due time, if there is one.
func (n *slowNotice) overdue(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.shown {
		return true
	}
	for _, ss := range n.pending {
		if s := ss[0]; !now.Before(s.due) {
			quiet := s.e.Wait + n.after
			limit := s.e.Timeout
			if n.cut != nil {
				if at, ok := n.cut.cutAt(s.e); ok {
					// s.due is when it was sent, plus quiet; in whole seconds, as
					// the timeout is.
					limit = min(limit, max(at.Sub(s.due.Add(-quiet)).Round(time.Second), time.Second))
				}
			}
			n.out.println(render.Escape(fmt.Sprintf("narad: %s: no answer from %s after %s; waiting for it up to %s",
				s.e.Op, n.base, roundDuration(quiet), roundDuration(limit))))
			n.shown, n.pending, n.stop = true, nil, nil
			return true
		}
	}
	return false
}

func (n *slowNotice) OnAnswer(e client.AnswerEvent) {
	n.mu.Lock()
	if n.shown && !n.closed {
		n.shown = false // the node answers: a silence from now on is a new episode
	}
	n.mu.Unlock()
	n.done(e.Exchange)
}

func (n *slowNotice) OnTransportError(e client.TransportErrorEvent) { n.done(e.Exchange) }

func (n *slowNotice) done(x client.Exchange) {
	n.mu.Lock()
	defer n.mu.Unlock()
	dropFirst(n.pending, x)
}

// dropFirst removes the oldest entry of k's queue in m, and k itself once its queue
// is empty: an exchange's attempts end in the order they were sent.
func dropFirst[K comparable, V any](m map[K][]V, k K) {
	switch vs := m[k]; len(vs) {
	case 0:
	case 1:
		delete(m, k)
	default:
		m[k] = vs[1:]
	}
}

// retryLine is "narad: consume: the node answers 502 Bad Gateway; retrying for up to
// 1m56s more", or for a call bounded by attempts "...; retrying (attempt 2 of 5)".
// After a signal whose grace ends before the budget (stopBy), the time left is the
// grace's: "for up to 3s more (the shutdown grace)", where it said the budget's two
// minutes right after the stop line had said three seconds.
func retryLine(base string, e client.RetryEvent, stopBy time.Time) string {
	var why string
	var apiErr *client.Error
	var timeout *client.TimeoutError
	var noAnswer *client.NoAnswerError
	switch {
	case errors.As(e.Err, &apiErr):
		why = "the node answers " + statusText(apiErr)
	case errors.As(e.Err, &timeout) && timeout.Sent:
		why = fmt.Sprintf("the node accepted the connection but sent no answer within %s", timeout.After)
	case errors.As(e.Err, &noAnswer):
		why = "the node accepted the connection but closed it without an answer"
	default:
		why = fmt.Sprintf("cannot reach %s (%s)", base, trimOp(e.Op, describeErr(e.Err)))
	}
	what := "retrying"
	if e.Handles > 1 {
		what = fmt.Sprintf("retrying %d handles", e.Handles)
	}
	left, bound := (e.Budget - e.Elapsed).Round(time.Second), ""
	if !stopBy.IsZero() && e.MaxAttempts == 0 {
		if g := time.Until(stopBy); g < left {
			left, bound = max(g.Round(time.Second), time.Second), " (the shutdown grace)"
		}
	}
	switch {
	case e.MaxAttempts > 0:
		what += fmt.Sprintf(" (attempt %d of %d)", e.Attempt, e.MaxAttempts)
	case left > 0:
		what += fmt.Sprintf(" for up to %s more%s", left, bound)
	}
	return render.Escape(fmt.Sprintf("narad: %s: %s; %s", e.Op, why, what))
}

// trimOp drops the "op: " every client error starts with, where the line says it already.
func trimOp(op client.Op, s string) string {
	p := op.String() + ": "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
