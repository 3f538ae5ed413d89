package cli

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
)

// A replay read printed with the output flags: what replay and sub --peek both do.

// runReplay prints a replay through r (the output flags' renderer) with c; sub
// --peek shares it. A timeout (peek's --timeout) ends it, with exit 3 when ro.Count
// was not reached. With a matcher only the messages it keeps are printed, and
// ro.Count counts those. A read that follows the tail for ro.Count alone says so when
// nothing comes (watchWaiting), with waitHint.
func runReplay(e runEnv, c *client.Client, r *render.Renderer, ro replay.Options, timeout time.Duration, waitHint string, find findOptions) (exit error) {
	sctx, cancel := e.Context()
	defer cancel()
	// A reader that went away while the read waits at the tail (--follow, --peek) ends
	// the run as a closed stdout would: exit 0.
	readerGone, stopWatch := consumer.WatchReader(iostreams.Unwrap(e.IO.Out))
	defer stopWatch()
	rctx, cancelRead := chans.Context(sctx, readerGone)
	defer cancelRead()
	ctx, cancelT := withTimeout(rctx, timeout)
	defer cancelT()
	var buf []byte
	// A stdout nobody reads must not hold the write, and the run with it, past the
	// signal or the timeout that ends it.
	out := iostreams.GiveUpAt(e.IO.Out, ctx.Done())
	ro.Match = find.Match // ro.Count then counts the messages it keeps
	// The read's end (a signal, --timeout, the reader gone) ends a --jq that goes on
	// and on, as Run passes it to --filter: nothing is held, so the first signal.
	r = r.WithContext(ctx)
	e.waitOutNodeLoss(c, &ro)
	e.noteReadGaps(&ro)
	var printed atomic.Int64
	var src replay.Source = c
	stopWaiting := func() {}
	if ro.Follow && ro.Count > 0 && timeout == 0 {
		// Waiting at the tail for --count messages: say so if none come, once the node
		// has answered. With a filter, for matches: messages read and skipped are no
		// progress towards --count, and the line says how many there were.
		as := &answeredSource{Source: c}
		src = as
		stopWaiting = e.watchWaiting(ro.Topic, ro.Count, waitHint, skipsOf(&ro), func() (int64, bool, bool) {
			return printed.Load(), false, as.answered.Load()
		})
	}
	n, err := replay.Run(ctx, src, ro, func(m *client.Message) error {
		var err error
		buf, err = r.Append(buf[:0], m)
		if err != nil {
			return err
		}
		if err := writeAll(out, buf); err != nil {
			if consumer.IsClosedOutput(err) {
				return replay.ErrStop
			}
			return err
		}
		printed.Add(1)
		return nil
	})
	stopWaiting()
	read := int64(n)
	if find.Match != nil {
		read = find.Match.Read
	}
	if err == nil || read > 0 || ctx.Err() != nil {
		// (Nothing read before a fatal error says nothing: the error line does.)
		e.readStats(find.Stats, read, int64(n))
	}
	defer func() { e.filterFailures(find.Match, exit) }()
	switch {
	case sctx.Err() != nil:
		return nil // interrupted: Run turns the signal into 130/143
	case chans.Closed(readerGone):
		return nil // the reader went away: not an error, as a closed stdout is not
	case err != nil && ctx.Err() == nil:
		if errors.Is(err, replay.ErrNoSuchPartition) {
			return usageErrorf("%v", err)
		}
		return e.apiFatal(c, err, ro.Topic)
	case filterFailedAll(find.Match) != nil:
		// Before the timeout's exit 3: that nothing matched is the filter's doing.
		return filterFailedAll(find.Match)
	case ro.Count > 0 && n < ro.Count && ctx.Err() != nil:
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", timeout, n, ro.Count))
	case find.Heard != nil && !find.Heard.Load() && ctx.Err() != nil:
		// The first request (the topic's partitions) is what went unanswered.
		return e.neverAnswered(c, "topic", ro.Topic)
	}
	return nil
}

// noteReadGaps has a read say on stderr where it skipped offsets retention dropped:
// an --offset before the partition's oldest, or a read overtaken by retention.
// Nothing else would tell "gone" from "never there".
//
// A watch from the tail also says when it cannot start a partition yet (topic info
// gave no tail for it, its owner down) and when it does: that partition's messages of
// the meantime are not shown.
func (e runEnv) noteReadGaps(ro *replay.Options) {
	ro.OnTailUnknown = func(p int) {
		fmt.Fprintf(e.IO.ErrOut, "narad: note: partition %d: the node gives no tail for it (its owner is down?): watched from its tail once it does\n", p)
	}
	ro.OnTailFound = func(p int, at int64) {
		fmt.Fprintf(e.IO.ErrOut, "narad: note: partition %d: watched from offset %d, its tail now\n", p, at)
	}
	to := ro.To
	ro.OnGone = func(p int, from, next int64) {
		last := next - 1
		if to >= 0 && to < last {
			last = to
		}
		gone := fmt.Sprintf("offset %d is", from)
		if last > from {
			gone = fmt.Sprintf("offsets %d to %d are", from, last)
		}
		if to >= 0 && next > to {
			fmt.Fprintf(e.IO.ErrOut, "narad: note: partition %d: %s past retention (the oldest kept is %d)\n", p, gone, next)
			return
		}
		fmt.Fprintf(e.IO.ErrOut, "narad: note: partition %d: %s past retention; reading on from offset %d, the oldest kept\n", p, gone, next)
	}
}

// waitOutNodeLoss makes a follow read (replay --follow, sub --peek, the canary) wait
// out a node it reached and then lost, with the lines a long-running sub writes: a
// watch left running must not end because its node restarted.
func (e runEnv) waitOutNodeLoss(c *client.Client, ro *replay.Options) {
	if ro.Follow {
		ro.OnNodeLost, ro.OnNodeBack = e.nodeNotices(c)
	}
}
