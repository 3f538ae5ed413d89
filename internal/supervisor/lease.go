package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/consumer"
)

// leaseKeeper extends one delivery's lease every Lease/3 until stopped or lost. The
// lease is lost on a 410, and also once it has certainly run out: Lease after the
// last extend that succeeded (or, before any, after the delivery reached us), since
// the node started that lease before we heard of it. Failed extends alone (503s, a
// node that is away) would otherwise let the command run on while the node hands
// the message to another consumer.
type leaseKeeper struct {
	lost     chan struct{} // closed once the lease is gone
	reason   string        // why, set before lost closes
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func (s *Supervisor) keep(d consumer.Delivery) *leaseKeeper {
	// Extends go on through the soft stop (running commands keep their leases during
	// the grace), so they are not tied to the run's context; stop ends them.
	ctx, cancel := context.WithCancel(context.Background())
	k := &leaseKeeper{lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	lease := s.o.Lease
	renewed := time.Now()
	go func() {
		defer close(k.done)
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		lapse := time.NewTimer(lease)
		defer lapse.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-lapse.C:
				k.lose(fmt.Sprintf("lease ran out (no extend succeeded for %s)", shortDuration(lease)))
				return
			case <-tick.C:
			}
			// An extend that lands after the lease ran out is too late to matter.
			deadline := renewed.Add(lease)
			ectx, cancel := context.WithDeadline(ctx, deadline)
			err := d.Extend(ectx)
			cancel()
			switch {
			case err == nil:
				// The node renewed it before we got the answer, so it lasts until
				// now+lease at the most.
				renewed = time.Now()
				lapse.Reset(lease)
			case errors.Is(err, consumer.ErrLeaseGone):
				k.lose("lease gone (410 on extend)")
				return
			case ctx.Err() == nil && !time.Now().Before(deadline):
				k.lose(fmt.Sprintf("lease ran out (no extend succeeded for %s)", shortDuration(lease)))
				return
			}
			// Any other failure (the client already retried 502/503) is tried again
			// at the next tick.
		}
	}()
	return k
}

func (k *leaseKeeper) lose(why string) {
	k.reason = why
	close(k.lost)
}

// why says how the lease was lost; only once it was.
func (k *leaseKeeper) why() string {
	if !k.isLost() {
		return "lease lost"
	}
	return k.reason
}

// stop ends the extends and waits for one in flight, so that no extend can reach
// the broker after the settlement that follows.
func (k *leaseKeeper) stop() {
	k.stopOnce.Do(func() {
		k.cancel()
		<-k.done
	})
}

func (k *leaseKeeper) isLost() bool { return chans.Closed(k.lost) }
