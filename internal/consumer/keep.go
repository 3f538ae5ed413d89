package consumer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/client"
)

// A run with Options.Lease keeps the lease of every message it holds, wherever it
// waits: in hand behind a write that blocks (a paused terminal, a full pipe), in a pipe
// that the reader has not read yet, or queued for its ack. A message held a third of
// the lease is extended, with every other one due, in as few requests as the client
// needs. Taking batches ahead of the one being written is safe only because of this.
const (
	// keepEvery is how often held messages are looked at.
	keepEvery = 100 * time.Millisecond
	// keepAsk is how long a message may be held before the topic's lease is asked for:
	// a run that keeps up never needs it.
	keepAsk = 200 * time.Millisecond
	// keepUnknown is how often held messages are extended when the lease could not be
	// learnt.
	keepUnknown = time.Second
)

// keeper extends the leases of a run's held messages (settler.open, and settler.acking:
// those whose ack is on its way, retries included) until the run ends.
type keeper struct {
	s       *settler
	leaseOf func(context.Context) (time.Duration, error)
	lease   atomic.Int64 // nanoseconds; 0 not known yet, -1 could not be learnt
}

// keep runs a keeper until the returned stop is called, which cuts a request on its way
// (the run is settling what it holds) and waits for the keeper to end; so does ctx (the
// hard stop).
func (s *settler) keep(ctx context.Context, leaseOf func(context.Context) (time.Duration, error)) (stop func()) {
	k := &keeper{s: s, leaseOf: leaseOf}
	ctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(keepEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				k.tick(ctx)
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		<-exited
	}
}

// tick extends what has been held a third of the lease, asking for the lease first once
// something has been held keepAsk.
func (k *keeper) tick(ctx context.Context) {
	now := time.Now().UnixNano()
	if k.lease.Load() == 0 {
		if len(k.s.heldSince(now-int64(keepAsk))) == 0 {
			return
		}
		k.askLease(ctx)
	}
	every := keepUnknown
	if l := time.Duration(k.lease.Load()); l > 0 {
		every = l / 3
	}
	due := k.s.heldSince(now - int64(every))
	if len(due) == 0 {
		return
	}
	handles := make([]string, len(due))
	for i, d := range due {
		handles[i] = d.msg.ReceiptHandle
	}
	rctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	res, _ := k.s.src.Settle(rctx, k.s.topic, client.Extend, handles)
	for i := range min(len(res), len(due)) {
		k.s.c.retries.Add(int64(res[i].Retries))
		switch res[i].Status {
		case 204:
			k.s.renewed(due[i], now)
		case 410:
			// The lease lapsed (or an ack landed first): if the message is still held, it
			// is someone else's now. It is counted lease_lost, and whatever settles it
			// later sends nothing. One whose ack is on its way is settled already, so
			// lost leaves it alone: that ack's answer (204, or 410 as ack_gone) counts.
			k.s.lost(due[i])
		}
		// Anything else is tried again at the next tick.
	}
}

// askLease learns the topic's lease; -1 when it cannot.
func (k *keeper) askLease(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := k.leaseOf(ctx)
	if err != nil || d <= 0 {
		k.lease.Store(-1)
		return
	}
	k.lease.Store(int64(d))
}

// heldSince returns the messages held (acks on their way included) whose lease was
// taken or extended at or before t.
func (s *settler) heldSince(t int64) []*delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ds []*delivery
	for _, set := range [...]map[*delivery]struct{}{s.open, s.acking} {
		for d := range set {
			if d.renewed <= t {
				ds = append(ds, d)
			}
		}
	}
	return ds
}

// renewed notes that d's lease was extended at now.
func (s *settler) renewed(d *delivery, now int64) {
	s.mu.Lock()
	d.renewed = now
	s.mu.Unlock()
	s.c.extended.Add(1)
}

// lost settles d locally after a 410 on extend, unless something settled it first: the
// message is someone else's, so nothing is sent, now or by a later settlement.
func (s *settler) lost(d *delivery) {
	s.mu.Lock()
	if !d.settled.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return
	}
	d.leaseLost = true
	delete(s.open, d)
	s.mu.Unlock()
	s.c.leaseLost.Add(1)
	s.ended(false)
}
