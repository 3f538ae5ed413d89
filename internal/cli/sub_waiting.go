package cli

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// waitingNoticeAfter is how long a run with --count and no --timeout may wait for
// messages, holding none, before it says so once on stderr. A script or a CI job that
// waits for messages that never come would otherwise hang without a word. A variable
// so that tests need not wait that long.
var waitingNoticeAfter = 30 * time.Second

// waitingNoticed is called once the line is out (tests wait on it).
var waitingNoticed = func() {}

// waitingNotice watches the run co is about to start and says, once, when it has held
// nothing and received nothing new for waitingNoticeAfter while --count is not
// reached: "narad: waiting on orders: nothing for 30s, 2 of --count 5 received
// (--timeout D stops waiting)". A run without --count is a worker, for which waiting
// is the job; one with --timeout or --drain ends on its own. The returned func stops
// the watch, for the end of the run.
func (opts *SubOptions) waitingNotice(co *consumer.Options) (stop func()) {
	if opts.Count == 0 || opts.Timeout > 0 || opts.Drain {
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
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(waitingNoticeAfter / 10)
		defer tick.Stop()
		received, since := int64(-1), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				l := live.Load()
				if l == nil {
					since = now
					continue
				}
				// Holding messages is working (a command running, a slow reader), not
				// waiting; so is receiving.
				if n := l.Stats().Received; n != received || l.Held() > 0 {
					received, since = n, now
					continue
				}
				if now.Sub(since) < waitingNoticeAfter {
					continue
				}
				fmt.Fprintf(opts.IO.ErrOut, "narad: waiting on %s: nothing for %s, %d of --count %d received (--timeout D stops waiting)\n",
					render.Escape(opts.Topic), roundDuration(waitingNoticeAfter), received, opts.Count)
				waitingNoticed()
				return
			}
		}
	}()
	// Waits for the watch to end, so that its line comes before the run's last ones.
	return func() { close(done); <-exited }
}
