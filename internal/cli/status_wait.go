package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// status TOPIC... --wait-empty: for CI, "the workers drained it". Each poll is one
// look at the node (readStatus: the topics' infos, then the metrics), and the answer
// is only ever what the metrics say: where they cannot be read, or say nothing of a
// topic, the command says so and fails rather than guess.

// waitTopic is one topic's state in --wait-empty's answer (-o json prints it).
type waitTopic struct {
	Name     string `json:"name"`
	Ready    int64  `json:"ready"`
	InFlight int64  `json:"in_flight"`
	// Unseen is messages the topic's high watermarks count and its metrics do not
	// yet (a node refreshes its gauges every few seconds): not empty until they are.
	Unseen int64 `json:"unseen,omitempty"`
}

func (w waitTopic) empty() bool { return w.Ready == 0 && w.InFlight == 0 && w.Unseen == 0 }

// left says what is still on the topic: "orders: 12 ready, 3 in flight".
func (w waitTopic) left() string {
	var parts []string
	if w.Ready > 0 {
		parts = append(parts, fmt.Sprintf("%d ready", w.Ready))
	}
	if w.InFlight > 0 {
		parts = append(parts, fmt.Sprintf("%d in flight", w.InFlight))
	}
	if w.Unseen > 0 {
		parts = append(parts, fmt.Sprintf("%d not yet in the node's metrics", w.Unseen))
	}
	return render.Escape(w.Name) + ": " + strings.Join(parts, ", ")
}

// waitResult is --wait-empty's -o json document.
type waitResult struct {
	Empty         bool        `json:"empty"`
	WaitedSeconds float64     `json:"waited_seconds"`
	Topics        []waitTopic `json:"topics"`
}

// errWaitUnknown is a look that cannot tell whether the topics are empty, and never
// will by waiting: the caller fails with it.
var errWaitUnknown = errors.New("cannot tell")

// waitLook turns one look at the node into each topic's state. On an error (one
// wrapping errWaitUnknown, a topic's, the node's) topic is the topic it is about
// ("" for the node's).
func waitLook(rows []TopicStatus, merr error) (state []waitTopic, topic string, err error) {
	if err := credentialsRefused(rows, merr); err != nil {
		return nil, "", err // the credentials, not the metrics grant
	}
	if merr != nil {
		if st := client.StatusOf(merr); st == http.StatusUnauthorized || st == http.StatusForbidden || st == http.StatusNotFound {
			return nil, "", fmt.Errorf("%w: the node's /metrics cannot be read (%s), and only they say what is ready or in flight "+
				"(run it as a user who may read them)", errWaitUnknown, describeErr(merr))
		}
		return nil, "", merr
	}
	out := make([]waitTopic, len(rows))
	for i, r := range rows {
		if r.err != nil {
			return nil, r.Name, r.err
		}
		q := r.queue
		if q == nil {
			return nil, r.Name, fmt.Errorf("%w whether %s is empty: the node's /metrics has no in-flight and lag series for it "+
				"(narad status %s shows what the node does say)", errWaitUnknown, render.Escape(r.Name), render.Escape(r.Name))
		}
		w := waitTopic{Name: r.Name, Ready: q.ready(), InFlight: q.inFlight}
		if q.hasProduced && !r.Partial {
			// The infos were read before the metrics: a produced count behind the high
			// watermarks is gauges not yet refreshed, whose zero would be a lie.
			w.Unseen = max(r.highWatermark-q.produced, 0)
		}
		out[i] = w
	}
	return out, "", nil
}

func statusWaitEmpty(opts *StatusOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	ctx, cancel := opts.Context()
	defer cancel()
	start := opts.Now()
	// --timeout bounds the looks too: one at a node that takes the connection and
	// never answers would otherwise retry for minutes past it.
	look, cutLook := context.WithCancel(ctx)
	defer cutLook()
	var timedOut chan struct{} // closed at --timeout; nil without one
	if opts.Timeout > 0 {
		timedOut = make(chan struct{})
		t := opts.timer(opts.Timeout)
		go func() {
			select {
			case <-t:
				close(timedOut)
				cutLook()
			case <-look.Done():
			}
		}()
	}
	var last []waitTopic // the last state known, for the timeout's report
	var lastErr error    // the last look's error, when it failed
	said := false        // the still-waiting line is out
	saidFailing := false // the line saying why the looks fail is out
	for n := 0; ; n++ {
		rows, _, merr := readStatus(look, c, opts.Topics)
		if ctx.Err() != nil {
			return exitWith(ExitFailed, nil) // a signal: the exit code says it
		}
		state, topic, err := waitLook(rows, merr)
		if cause := unreachedCause(rows, merr); n == 0 && cause != nil && chans.Closed(timedOut) {
			// The timeout cut the first look while the client retried a node it never
			// reached: that it cannot be reached is the news (exit 1), not that the
			// topics were not drained in time (exit 3).
			return opts.apiFatal(c, cause, "")
		}
		if err != nil && chans.Closed(timedOut) {
			// The timeout cut this look short: what it got is not an answer, nor a
			// failure of the node's. Only when no look ever answered is that worth
			// saying; otherwise the last answer (and the last real failure) stand.
			if last == nil && lastErr == nil {
				lastErr = errors.New("no answer before --timeout ran out")
			}
			return waitTimedOut(opts, last, lastErr, opts.Now().Sub(start))
		}
		switch {
		case errors.Is(err, errWaitUnknown):
			return exitWith(ExitFailed, err)
		case err != nil && (n == 0 && !answeredBusy(err) || !retryable(err)):
			// A node never reached, a topic that is not there, a refusal: waiting
			// would not change it. Later on, a node that went away may come back; a
			// node that answers it is busy (503: a partition's owner unavailable) was
			// reached, and is waited for from the first look on.
			if topic != "" {
				err = fmt.Errorf("%s: %w", render.Escape(topic), err)
			}
			return opts.apiFatal(c, err, topic)
		case err != nil:
			lastErr = err
			if !saidFailing && opts.Now().Sub(start) >= waitingNoticeAfter {
				// Looks that keep failing tell nothing of the topics: say once why
				// the wait goes on, so that it never goes on without a word.
				saidFailing = true
				if topic != "" {
					err = fmt.Errorf("%s: %w", render.Escape(topic), err)
				}
				fmt.Fprintf(opts.IO.ErrOut, "narad: still waiting after %s: the last look failed: %s (trying again every %s; %s)\n",
					roundDuration(waitingNoticeAfter), render.Escape(describeErr(err)), roundDuration(opts.Interval), waitBound(opts))
				waitingNoticed()
			}
		default:
			last, lastErr = state, nil
			if allEmpty(state) {
				return waitDone(opts, state, opts.Now().Sub(start), true)
			}
			if !said && opts.Timeout == 0 && opts.Now().Sub(start) >= waitingNoticeAfter {
				// Without --timeout the wait is as long as the workers take: say once
				// what it waits for, so a job that never ends does not hang without a word.
				said = true
				fmt.Fprintf(opts.IO.ErrOut, "narad: still waiting after %s: %s (--timeout D stops waiting)\n",
					roundDuration(waitingNoticeAfter), strings.Join(lefts(state), "; "))
				waitingNoticed()
			}
		}
		select {
		case <-ctx.Done():
			return exitWith(ExitFailed, nil)
		case <-timedOut:
			return waitTimedOut(opts, last, lastErr, opts.Now().Sub(start))
		case <-opts.timer(opts.Interval):
		}
	}
}

// unreachedCause is the first error of a look that says why the node could not be
// reached (a refused connection), not only that the look was cut short; nil if none.
func unreachedCause(rows []TopicStatus, merr error) error {
	cut := func(err error) bool {
		return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	}
	for _, r := range rows {
		if r.err != nil && client.StatusOf(r.err) == 0 && !cut(r.err) {
			return r.err
		}
	}
	if merr != nil && client.StatusOf(merr) == 0 && !cut(merr) {
		return merr
	}
	return nil
}

// waitTimedOut reports --timeout: what was still there at the last look that answered,
// and what the last one that did not ran into. Exit 3.
func waitTimedOut(opts *StatusOptions, last []waitTopic, lastErr error, took time.Duration) error {
	if err := waitDone(opts, last, took, false); err != nil {
		return err
	}
	line := fmt.Sprintf("timed out after %s", opts.Timeout)
	if len(last) > 0 {
		line += ", still there: " + strings.Join(lefts(last), "; ")
	}
	if lastErr != nil {
		line += "; the last look failed: " + describeErr(lastErr)
	}
	return exitWith(ExitTimeout, errors.New(line))
}

// lefts says what is left on each topic that is not empty.
func lefts(state []waitTopic) []string {
	var out []string
	for _, w := range state {
		if !w.empty() {
			out = append(out, w.left())
		}
	}
	return out
}

func allEmpty(state []waitTopic) bool {
	for _, w := range state {
		if !w.empty() {
			return false
		}
	}
	return true
}

// waitDone reports the end of a wait: the JSON document on stdout with -o json, and
// on success a line on stderr.
func waitDone(opts *StatusOptions, state []waitTopic, took time.Duration, empty bool) error {
	if opts.Output == "json" {
		if state == nil {
			state = []waitTopic{}
		}
		if err := opts.printJSON(waitResult{Empty: empty, WaitedSeconds: took.Round(time.Millisecond).Seconds(), Topics: state}); err != nil {
			return err
		}
	}
	if empty {
		names := make([]string, len(state))
		for i, w := range state {
			names[i] = render.Escape(w.Name)
		}
		fmt.Fprintf(opts.IO.ErrOut, "nothing ready or in flight on %s (waited %s)\n", strings.Join(names, ", "),
			took.Round(10*time.Millisecond))
	}
	return nil
}

// answeredBusy is a look the node answered with a status that says it cannot answer
// now (5xx: busy, a partition's owner unavailable; 429): it was reached, so a later
// look may get through.
func answeredBusy(err error) bool {
	st := client.StatusOf(err)
	return st/100 == 5 || st == http.StatusTooManyRequests
}

// waitBound says what ends a wait that goes on.
func waitBound(opts *StatusOptions) string {
	if opts.Timeout > 0 {
		return "--timeout " + roundDuration(opts.Timeout) + " ends it"
	}
	return timeoutHint
}

// retryable is an error a later look may not meet: the node gone away for a moment
// (no answer, 5xx). Anything else (a refusal, a topic not there) waiting cannot fix.
func retryable(err error) bool {
	st := client.StatusOf(err)
	return st == 0 && !errors.Is(err, context.Canceled) || st/100 == 5 || st == http.StatusTooManyRequests
}
