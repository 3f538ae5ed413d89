package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// canaryRefused are the exec-mode flags about holding and settling messages, which
// `sub --peek -- COMMAND` does not do; --ack-exit-codes still says what succeeded.
var canaryRefused = []string{"lease", "retry-delay", "retry-delay-max", "max-attempts", "dead-letter", "dead-letter-format"}

// canaryRun is `sub TOPIC --peek -- COMMAND`: the command runs per message as in exec
// mode, but the messages come from replay reads, as --peek's do, so nothing is leased,
// acked or nacked and the topic's consumers never notice. A new handler is tried on
// live traffic this way before it takes any.
func canaryRun(opts *SubOptions) (exit error) {
	ro := peekReplay(opts)
	heard := &nodeHeard{}
	c, err := opts.Client(heard)
	if err != nil {
		return err
	}
	can, err := supervisor.NewCanary(commandOptions(c, opts))
	if err != nil {
		return usageErrorf("%v", err)
	}
	if opts.IO.IsStderrTTY() {
		opts.notice(fmt.Sprintf("trying %s on the messages of %s on %s, taking nothing (-j %d)",
			render.Escape(strings.Join(opts.Command, " ")), render.Escape(opts.Topic), render.Escape(c.BaseURL()), opts.Concurrency))
		opts.notice(fmt.Sprintf("  Ctrl-C: read nothing more, let running commands finish (up to %s)", roundDuration(opts.ShutdownGrace)))
	}
	defer opts.announceStop(can)()

	// The first signal ends the reading (sctx); the commands run under the hard
	// context, which only the second ends.
	sctx, cancel := opts.Context()
	defer cancel()
	ctx, cancelT := withTimeout(sctx, opts.Timeout)
	defer cancelT()
	// A reader of stdout that went away while the canary waits at the tail ends the
	// reading, as a command's write that finds it gone does (exit 0).
	rctx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	var readerGone atomic.Bool
	defer watchReaderGone(opts.IO.Out, func() {
		readerGone.Store(true)
		cancelRead()
	})()
	read := canaryRead{can: can, hard: opts.Signals.Hard}
	stopTimeout := opts.announceTimeout(opts.Timeout, opts.Timeout, can)
	opts.waitOutNodeLoss(c, &ro)
	opts.noteReadGaps(&ro)
	var src replay.Source = c
	stopWaiting := func() {}
	if ro.Count > 0 && opts.Timeout == 0 {
		// Waiting for --count messages, as --peek does: say so if none come (no
		// command running meanwhile), once the node has answered.
		as := &answeredSource{Source: c}
		src = as
		stopWaiting = opts.watchWaiting(ro.Topic, ro.Count, timeoutHint, skipsOf(&ro), func() (int64, bool, bool) {
			return read.n.Load(), can.Running() > 0, as.answered.Load()
		})
	}
	_, err = replay.Run(rctx, src, ro, read.message(rctx))
	stopWaiting()
	// The reading's end by a signal or --timeout gives running commands
	// --shutdown-grace, as in exec mode: at --timeout they are not waited for up to
	// --max-processing-time.
	can.Finish(opts.Signals.Hard, rctx.Done())
	stopTimeout()
	st := can.Stats()
	if !(err != nil && ctx.Err() == nil && st.Ran == 0 && opts.Stats != "json") {
		// (Nothing run before a fatal error says nothing: the error line does. A
		// signal or --timeout is no error: --stats then says that nothing ran.)
		opts.printCanaryStats(opts.Stats, st, opts.Match)
	}
	defer func() { opts.filterFailures(opts.Match, exit) }()
	switch {
	case sctx.Err() != nil:
		return nil // interrupted: Main turns the signal into 130/143
	case readerGone.Load() && ctx.Err() == nil:
		// The reader of stdout went away while the reading waited: not a failure.
	case read.err != nil && errors.Is(read.err, consumer.ErrOutputClosed):
		// The reader of stdout went away (`| head`): not a failure, as in exec mode.
	case read.err != nil && ctx.Err() == nil:
		return exitWith(ExitFailed, read.err)
	case err != nil && ctx.Err() == nil:
		if errors.Is(err, replay.ErrNoSuchPartition) {
			return usageErrorf("%v", err)
		}
		return opts.apiFatal(c, err, ro.Topic)
	}
	if st.Failed > 0 || st.Stopped > 0 {
		// A command stopped at the end of the grace (--timeout, then --shutdown-grace)
		// did not succeed either: the exit is 0 only when every command did, and exec
		// mode exits 1 for the same stop.
		return exitWith(ExitFailed, errors.New(canaryFailure(st)))
	}
	if err := filterFailedAll(opts.Match); err != nil {
		return err // no command ran: the filter kept nothing
	}
	if ro.Count > 0 && read.n.Load() < int64(ro.Count) && ctx.Err() != nil {
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", opts.Timeout, read.n.Load(), ro.Count))
	}
	if ctx.Err() != nil && !heard.Load() {
		// The first request (the topic's partitions) is what went unanswered.
		return opts.neverAnswered(c, "topic", ro.Topic)
	}
	return nil
}

// canaryRead hands each message read (that --filter and --grep keep) to the canary.
type canaryRead struct {
	can  *supervisor.Canary
	hard context.Context
	n    atomic.Int64 // messages run (the waiting line reads it)
	err  error        // what stopped the run of commands, if anything did
}

func (r *canaryRead) message(ctx context.Context) func(*client.Message) error {
	return func(m *client.Message) error {
		if r.err = r.can.Run(ctx, r.hard, m); r.err != nil {
			return replay.ErrStop
		}
		r.n.Add(1)
		return nil
	}
}

// canaryFailure is what the exit 1 of a canary says: the commands that failed and
// those stopped at shutdown, out of those that ran.
func canaryFailure(st supervisor.CanaryStats) string {
	var parts []string
	if st.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %s failed", st.Failed, countOf(st.Ran, "command", "commands")))
	}
	if st.Stopped > 0 {
		what := countOf(st.Stopped, "command stopped at shutdown", "commands stopped at shutdown")
		if st.Failed == 0 {
			what = fmt.Sprintf("%d of %s stopped at shutdown", st.Stopped, countOf(st.Ran, "command", "commands"))
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, ", ")
}
