package consumer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/narad/narad/internal/client"
)

// The keeper is the one place where a run keeps leases, in every mode: a message held
// keeps its lease wherever it waits, in hand behind a write that blocks (a paused
// terminal, a full pipe), in a pipe the reader has not read yet, in a command that
// runs or waits out its retry delay (exec mode), on screen (hold mode), or queued for
// its ack and while that ack is retried. Taking batches ahead of the one being written
// is safe only because of this.
//
// Every held message due (held a third of the lease since it was last extended) is
// extended with every other one held at least half that, so that deliveries that came
// at different moments share requests: one batch extend for all of them (the client
// splits it by the API's limit, and serves an older node one handle at a time).
//
// A lease is lost on either of two rules, and the delivery is then settled locally as
// lease_lost (nothing is sent for it, now or by the settlement its holder asks for
// later) and its Lost channel closed:
//   - an extend is answered 410: the message is someone else's now;
//   - the lease certainly lapsed: a whole lease passed since the last extend that was
//     confirmed, or since the delivery reached us when none was (the node started that
//     lease before we heard of it). Extends that only fail (503s, a node that is away)
//     would otherwise let a command run on while the node hands its message to another
//     consumer.
//
// A message whose ack is on its way is settled already: the keeper extends it but
// never loses it, since a 410 may only mean that the ack landed first; the ack's own
// answer counts.
const (
	// keepEvery is how often held messages are looked at, at most (see period).
	keepEvery = 100 * time.Millisecond
	// keepAsk is how long a message may be held before the topic's lease is asked for,
	// when the run was not told it: a run that keeps up never needs it.
	keepAsk = 200 * time.Millisecond
	// keepUnknown is how often held messages are extended when the lease could not be
	// learnt.
	keepUnknown = time.Second
)

// Why a lease was lost (Delivery.LostWhy).
const whyGone = "lease gone (410 on extend)"

func whyLapsed(lease time.Duration) string {
	return fmt.Sprintf("lease ran out (no extend succeeded for %s)", ShortDuration(lease))
}

// keeper extends the leases of a run's held messages (settler.open, and settler.acking:
// those whose ack is on its way, retries included) until the run ends. Only its own
// goroutine uses it.
type keeper struct {
	s *settler
	// lease is the topic's lease: 0 not known yet (asked for from the node once a
	// message has been held keepAsk), below 0 could not be learnt.
	lease time.Duration
}

// keep runs a keeper until the returned stop is called, which cuts a request on its way
// (the run is settling what it holds) and waits for the keeper to end; so does ctx (the
// hard stop). lease is the topic's lease, or 0 to learn it from the node when needed.
func (s *settler) keep(ctx context.Context, lease time.Duration) (stop func()) {
	k := &keeper{s: s, lease: lease}
	ctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTimer(k.period())
		defer t.Stop()
		for {
			select {
			case <-t.C:
				k.tick(ctx)
				t.Reset(k.period())
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

// period is how often held messages are looked at: often enough that an extend goes
// out soon after a third of the lease, and a lapse is noticed soon after it, however
// short the lease.
func (k *keeper) period() time.Duration {
	if k.lease > 0 {
		return max(min(keepEvery, k.lease/12), time.Millisecond)
	}
	return keepEvery
}

// tick loses the leases that certainly lapsed and extends what is due, asking for the
// lease first once something has been held keepAsk.
func (k *keeper) tick(ctx context.Context) {
	now := time.Now()
	if k.lease == 0 {
		if !k.s.heldBefore(now.Add(-keepAsk).UnixNano()) {
			return
		}
		k.askLease(ctx)
	}
	every := keepUnknown
	if k.lease > 0 {
		every = k.lease / 3
	}
	lapsed, due, firstLapse := k.s.sortHeld(now.UnixNano(), max(k.lease, 0), every)
	for _, d := range lapsed {
		k.s.lose(d, whyLapsed(k.lease))
	}
	if len(due) > 0 {
		k.extend(ctx, now, every, due, firstLapse)
	}
}

// extend extends due in one request (as few as the client needs), cut after every or
// at firstLapse, the first of their leases to lapse (0: none known), whichever comes
// first: an extend that lands after that is too late to matter, and the next tick has
// the lapse rule to apply.
func (k *keeper) extend(ctx context.Context, now time.Time, every time.Duration, due []*delivery, firstLapse int64) {
	deadline := now.Add(every).UnixNano()
	if firstLapse > 0 {
		deadline = min(deadline, firstLapse)
	}
	handles := make([]string, len(due))
	for i, d := range due {
		handles[i] = d.msg.ReceiptHandle
	}
	rctx, cancel := context.WithDeadline(ctx, time.Unix(0, deadline))
	defer cancel()
	res, _ := k.s.src.Settle(rctx, k.s.topic, client.Extend, handles)
	// The node renewed them before we got the answer, so each lasts until a lease
	// from now at the most: the lapse rule counts from here.
	answered := time.Now().UnixNano()
	for i := range min(len(res), len(due)) {
		k.s.c.retries.Add(int64(res[i].Retries))
		switch res[i].Status {
		case 204:
			k.s.renewed(due[i], answered)
		case 410:
			// The lease lapsed (or an ack landed first): if the message is still held, it
			// is someone else's now. One whose ack is on its way is settled already, so
			// lose leaves it alone: that ack's answer (204, or 410 as ack_gone) counts.
			k.s.lose(due[i], whyGone)
		}
		// Anything else is tried again at the next tick.
	}
}

// askLease learns the topic's lease from the node; -1 when it cannot.
func (k *keeper) askLease(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t, err := k.s.src.Topic(ctx, k.s.topic)
	if err != nil || t.VisibilityTimeout() <= 0 {
		k.lease = -1
		return
	}
	k.lease = t.VisibilityTimeout()
}

// heldBefore reports whether a message held (acks on their way included) had its
// lease taken or extended at or before t.
func (s *settler) heldBefore(t int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, set := range [...]map[*delivery]struct{}{s.open, s.acking} {
		for d := range set {
			if d.renewed <= t {
				return true
			}
		}
	}
	return false
}

// sortHeld looks at everything held at now. lapsed are the open deliveries whose lease
// certainly ran out (none when lease is 0: not known); due are those to extend: once
// any was last extended every ago, all those extended at least half that ago;
// firstLapse is when the first of due's leases still running lapses (0: none known),
// seen under the same lock rather than looked up again for each.
func (s *settler) sortHeld(now int64, lease, every time.Duration) (lapsed, due []*delivery, firstLapse int64) {
	dueAt, rideAt := now-int64(every), now-int64(every/2)
	anyDue := false
	addDue := func(d *delivery) {
		due = append(due, d)
		anyDue = anyDue || d.renewed <= dueAt
		if lapse := d.renewed + int64(lease); lease > 0 && lapse > now && (firstLapse == 0 || lapse < firstLapse) {
			firstLapse = lapse
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for d := range s.open {
		switch {
		case lease > 0 && d.renewed+int64(lease) <= now:
			lapsed = append(lapsed, d)
		case d.renewed <= rideAt:
			addDue(d)
		}
	}
	for d := range s.acking {
		if d.renewed <= rideAt {
			addDue(d)
		}
	}
	if !anyDue {
		return lapsed, nil, 0
	}
	return lapsed, due, firstLapse
}

// renewed notes that the node confirmed d's lease extended at t.
func (s *settler) renewed(d *delivery, t int64) {
	s.mu.Lock()
	d.renewed = max(d.renewed, t)
	s.mu.Unlock()
	s.c.extended.Add(1)
}

// lose settles d locally once its lease is lost, for why, unless something settled it
// first (false then): the message is someone else's, so nothing is sent, now or by a
// later settlement. It counts lease_lost and closes d's Lost channel.
func (s *settler) lose(d *delivery, why string) bool {
	s.mu.Lock()
	if !d.settled.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return false
	}
	d.leaseLost = true
	d.lostWhy = why
	if d.lost != nil {
		close(d.lost)
	}
	s.close(d)
	s.mu.Unlock()
	s.c.leaseLost.Add(1)
	s.ended(false)
	return true
}

// Lost is closed once the delivery's lease is lost (see the keeper's two rules): it
// is settled then, as lease_lost, and the work on it may as well stop, since the node
// may be handing it to another consumer. It is never closed for a delivery settled
// otherwise, nor in a run that keeps no leases (NoAck).
func (d Delivery) Lost() <-chan struct{} {
	s := d.d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.d.lost == nil {
		d.d.lost = make(chan struct{})
		if d.d.leaseLost {
			close(d.d.lost)
		}
	}
	return d.d.lost
}

// LostWhy says how the delivery's lease was lost ("" while it was not), for a line
// on stderr: a 410 on an extend, or a lease that certainly ran out.
func (d Delivery) LostWhy() string {
	s := d.d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.d.lostWhy
}

// ShortDuration writes d as people do: 4s, 1m, 1m30s, 250ms (for lines such as the
// keeper's reasons and exec mode's failure lines).
func ShortDuration(d time.Duration) string {
	s := d.Round(time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}
