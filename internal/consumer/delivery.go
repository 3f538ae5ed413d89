package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
)

var (
	// ErrAlreadySettled is a second settlement of one delivery. The first one won;
	// the second was refused, sent nothing, and was counted as a bug.
	ErrAlreadySettled = errors.New("delivery already settled")
	// ErrLeaseGone is a 410: the lease ran out or the message was settled already,
	// so it may be with another consumer now.
	ErrLeaseGone = errors.New("lease gone")
)

// Cause says why a delivery is nacked. Every nack gives the message back at once;
// the cause decides which counters move and whether the run counts it as a failure.
type Cause int

const (
	// GiveBack is a message that was not handled at all (stop, signal, output closed):
	// not the message's fault, so not a failure.
	GiveBack Cause = iota
	// Declined is the handler's verdict that handling failed (a non-zero exit, a
	// command stopped at shutdown).
	Declined
	// Failed is a message that could not be handled (a command that did not start);
	// it counts failed.
	Failed
	// TimedOut is handling that took too long and was stopped; it counts timed_out.
	TimedOut
)

// DeadLettered acks a delivery whose handling failed for good (why: Failed or
// TimedOut) once it was copied to a dead-letter topic: it counts that failure,
// dead_lettered, and (on a 204) acked. GiveBack is a person's own choice (hold mode's
// d key), which is no failure: only dead_lettered and acked move.
func (d Delivery) DeadLettered(why Cause) error {
	err := d.d.s.settle(client.Ack, why, []*delivery{d.d})
	if !errors.Is(err, ErrAlreadySettled) {
		d.d.s.c.deadLettered.Add(1)
	}
	return err
}

// Delivery is one leased message handed to a Handler. It is a small value whose
// settlement state is shared behind a pointer, so copies (in closures, structs, other
// goroutines) agree: the first settlement wins and any later one returns
// ErrAlreadySettled and counts a bug.
type Delivery struct{ d *delivery }

type delivery struct {
	msg     *client.Message // in the consume answer's slice, which it keeps alive
	s       *settler
	settled atomic.Bool
	// Guarded by s.mu: when its lease was taken or last confirmed extended (Unix
	// nanoseconds), whether the keeper found it lost (which settles it) and why, and
	// the channel Lost returns (made on first use, closed once lost).
	renewed   int64
	leaseLost bool
	lostWhy   string
	lost      chan struct{}
	parked    bool // see Park
}

// Park says the handler holds the delivery, its lease kept, only so that the node
// does not offer it again before the run ends (a failure under --drain), when it
// settles it: a drain does not wait for it, as it waits for what is held, to end.
func (d Delivery) Park() {
	s := d.d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, open := s.open[d.d]; !open || d.d.parked {
		return
	}
	d.d.parked = true
	s.parked++
	// A drain waiting for a settlement to ask again asks now.
	s.wake()
}

// Message is the delivered message. It must not be modified.
func (d Delivery) Message() *client.Message { return d.d.msg }

// Ack accepts the delivery. It returns ErrLeaseGone on a 410 (counted ack_gone).
func (d Delivery) Ack() error { return d.d.s.settle(client.Ack, GiveBack, []*delivery{d.d}) }

// Nack gives the message back at once, for the reason given.
func (d Delivery) Nack(why Cause) error { return d.d.s.settle(client.Nack, why, []*delivery{d.d}) }

// LeaseLost settles the delivery locally after a 410 on its holder's own Extend, as
// the keeper does after one on its: the message belongs to someone else now, so
// nothing is sent; it counts lease_lost and closes Lost. A delivery the keeper found
// lost already is no second settlement (ErrAlreadySettled, not counted as a bug).
func (d Delivery) LeaseLost() error {
	s := d.d.s
	if s.lose(d.d, whyGone) {
		return nil
	}
	s.mu.Lock()
	lost := d.d.leaseLost
	s.mu.Unlock()
	if !lost {
		s.c.bugs.Add(1)
	}
	return ErrAlreadySettled
}

// Extend renews the lease for a full visibility timeout. It is not a settlement; it
// returns ErrLeaseGone on a 410, and ErrAlreadySettled once the delivery is settled,
// except while its ack is on its way: an ack being retried keeps its lease. A 410
// then may only mean that the ack landed first; the ack's own answer says which.
func (d Delivery) Extend(ctx context.Context) error {
	if d.d.settled.Load() && !d.d.s.beingAcked(d.d) {
		return ErrAlreadySettled
	}
	s := d.d.s
	res, err := s.src.Settle(ctx, s.topic, client.Extend, []string{d.d.msg.ReceiptHandle})
	if len(res) == 1 {
		s.c.retries.Add(int64(res[0].Retries))
		switch res[0].Status {
		case 204:
			// Noted as the keeper notes its own, so that Lease tells the truth and the
			// keeper does not extend again a third of a lease too soon.
			s.renewed(d.d, time.Now().UnixNano())
			return nil
		case 410:
			return ErrLeaseGone
		}
		if err == nil {
			err = resultError(client.Extend, res[0])
		}
	}
	if err == nil {
		err = fmt.Errorf("extend: %d results for 1 handle", len(res))
	}
	return err
}

// Lease says when the delivery's lease was taken or last extended (by the run's
// keeper, or Extend), and whether it was lost (it is settled then; LostWhy says how).
// Hold mode counts the lease down from it.
func (d Delivery) Lease() (renewed time.Time, lost bool) {
	s := d.d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Unix(0, d.d.renewed), d.d.leaseLost
}

// AckAll acks ds in as few requests as the client needs. Deliveries already settled
// are refused one by one (counted as bugs); the others are still acked.
func AckAll(ds []Delivery) error { return settleAll(client.Ack, GiveBack, ds) }

// NackAll gives ds back at once, for the reason given, like AckAll.
func NackAll(ds []Delivery, why Cause) error { return settleAll(client.Nack, why, ds) }

func settleAll(a client.Action, why Cause, ds []Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	// Deliveries of one Run share a settler; grouping keeps a mixed slice correct
	// without costing the common case more than one pass.
	var first error
	for len(ds) > 0 {
		s := ds[0].d.s
		var same []*delivery
		var rest []Delivery
		for _, d := range ds {
			if d.d.s == s {
				same = append(same, d.d)
			} else {
				rest = append(rest, d)
			}
		}
		if err := s.settle(a, why, same); err != nil && first == nil {
			first = err
		}
		ds = rest
	}
	return first
}

// counters are the run's live counts; Stats is their snapshot.
type counters struct {
	received, acked, nacked, failed, timedOut, leaseLost, ackGone, retries, bugs, deadLettered atomic.Int64
	// declined is not a published counter: it is what makes a run's outcome a failure
	// when a handler said no. settleFailed is the part of failed that settlements
	// (not handlers) account for.
	declined, settleFailed atomic.Int64
	// extended is leases extended, for Live: not in Stats, which is what --stats prints.
	extended atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Received:  c.received.Load(),
		Acked:     c.acked.Load(),
		Nacked:    c.nacked.Load(),
		Failed:    c.failed.Load(),
		TimedOut:  c.timedOut.Load(),
		LeaseLost: c.leaseLost.Load(),
		AckGone:   c.ackGone.Load(),
		Retries:   c.retries.Load(),
		Bugs:      c.bugs.Load(),

		DeadLettered: c.deadLettered.Load(),
	}
}

// Unconfirmed is a settlement that never got a final answer (given up at a hard stop,
// or out of retries): the node may or may not have it, and sending it again is safe.
type Unconfirmed struct {
	Action    client.Action // Ack or Nack
	Handle    string
	Partition int
	Offset    int64
}

// settler performs the settlements of one Run and remembers what is still open, so
// that the run can give back anything a handler left behind.
type settler struct {
	src     Source
	topic   string
	noAck   bool
	base    context.Context // the run's context without its cancellation
	timeout time.Duration
	lastTry time.Duration
	// abandon ends at the hard stop (or Options.Abandon): retries are given up then.
	abandon context.Context
	c       *counters

	mu   sync.Mutex
	open map[*delivery]struct{}
	// acking are deliveries whose ack is on its way, retries included: settled, so
	// nothing else may settle them, but still held, so the keeper (and a handler's
	// own Extend) keeps their leases until the ack has its answer. A 502/503 outage
	// of acks would otherwise let every lease lapse and the node deliver again.
	acking      map[*delivery]struct{}
	parked      int           // open deliveries parked (see Delivery.Park)
	busy        int           // settlement requests on their way
	changed     chan struct{} // closed and replaced whenever a settlement ends
	unconfirmed []Unconfirmed
}

// newSettler returns the run's settler and the function that releases it.
func newSettler(ctx context.Context, src Source, o Options, c *counters) (*settler, context.CancelFunc) {
	abandon, cancel := chans.Context(ctx, o.Abandon)
	return &settler{
		src: src, topic: o.Topic, noAck: o.NoAck, c: c,
		// Settlements must outlive the soft stop: a give-back after SIGINT is the whole
		// point of handling the signal. The timeout and the abandon bound them instead.
		base:    context.WithoutCancel(ctx),
		timeout: o.SettleTimeout,
		lastTry: o.LastTry,
		abandon: abandon,
		open:    make(map[*delivery]struct{}),
		acking:  make(map[*delivery]struct{}),
		changed: make(chan struct{}),
	}, cancel
}

func (s *settler) wrap(msgs []client.Message) []Delivery {
	ds := make([]Delivery, len(msgs))
	backing := make([]delivery, len(msgs))
	now := time.Now().UnixNano()
	if !s.noAck {
		s.mu.Lock()
	}
	for i := range msgs {
		backing[i] = delivery{msg: &msgs[i], s: s, renewed: now}
		ds[i] = Delivery{&backing[i]}
		// With NoAck nothing is ever settled, so tracking would only grow.
		if !s.noAck {
			s.open[&backing[i]] = struct{}{}
		}
	}
	if !s.noAck {
		s.mu.Unlock()
	}
	return ds
}

// claimAll settles what it can of ds (a delivery settled already is a bug, counted)
// and returns the ones it claimed. With sending, those count as on their way in the
// same step, so that the run never looks idle between the two. With acking, they stay
// held (see settler.acking) until doneAcking.
func (s *settler) claimAll(ds []*delivery, sending, acking bool) []*delivery {
	claimed := make([]*delivery, 0, len(ds))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		if !d.settled.CompareAndSwap(false, true) {
			// One an extend found gone was settled by that, and counted lease_lost: its
			// holder settling it too (the pipe's reader took its line) sends nothing.
			if !d.leaseLost {
				s.c.bugs.Add(1)
			}
			continue
		}
		claimed = append(claimed, d)
		if !s.noAck {
			s.close(d)
			if acking {
				s.acking[d] = struct{}{}
			}
		}
	}
	if sending && len(claimed) > 0 {
		s.busy++
	}
	return claimed
}

// ended notes that a settlement is over (sent: its request too) and wakes whoever
// waits for one.
func (s *settler) ended(sent bool) {
	s.mu.Lock()
	if sent {
		s.busy--
	}
	s.wake()
	s.mu.Unlock()
}

// wake wakes whoever waits for the next end of a settlement or a park (pending's
// channel); s.mu is held.
func (s *settler) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// close takes d out of what is held, parked or not; s.mu is held.
func (s *settler) close(d *delivery) {
	delete(s.open, d)
	if d.parked {
		d.parked = false
		s.parked--
	}
}

// pending is how many deliveries are held (not parked) or being settled, and a
// channel closed at the next end of a settlement or park.
func (s *settler) pending() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open) - s.parked + s.busy, s.changed
}

// parkedNow is how many deliveries are parked.
func (s *settler) parkedNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parked
}

// unsettled returns the deliveries nobody settled.
func (s *settler) unsettled() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := make([]Delivery, 0, len(s.open))
	for d := range s.open {
		ds = append(ds, Delivery{d})
	}
	return ds
}

// unconfirmedList returns the settlements that never got a final answer, in order.
func (s *settler) unconfirmedList() []Unconfirmed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Unconfirmed(nil), s.unconfirmed...)
}

// requestContext bounds one settlement: by the retry budget and the abandon before
// it; after it, by one prompt try, so that a give-back at the hard stop still lands
// when the node is up and costs little when it is not.
func (s *settler) requestContext() (context.Context, context.CancelFunc) {
	if s.abandon.Err() != nil {
		return context.WithTimeout(s.base, s.lastTry)
	}
	ctx, cancel := context.WithTimeout(s.base, s.timeout)
	stop := context.AfterFunc(s.abandon, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// settle claims ds, counts the decision, sends it (unless NoAck) and counts the
// answers. It returns the first error: ErrAlreadySettled for one settled already,
// ErrLeaseGone for an ack answered 410, else the first failure.
func (s *settler) settle(a client.Action, why Cause, ds []*delivery) error {
	var first error
	sending := !s.noAck
	claimed := s.claimAll(ds, sending, sending && a == client.Ack)
	if len(claimed) < len(ds) {
		first = ErrAlreadySettled
	}
	s.countDecision(why, int64(len(claimed)))
	if len(claimed) == 0 {
		return first
	}
	if !sending {
		s.ended(false)
		return first
	}
	defer s.ended(true)
	res, err := s.send(a, claimed)
	if err := s.countAnswers(a, claimed, res, err); first == nil {
		first = err
	}
	return first
}

// countDecision counts n settlements for why whatever the broker answers: a failed
// command is a failure even if its nack is lost. (A plain ack's cause is GiveBack:
// nothing.)
func (s *settler) countDecision(why Cause, n int64) {
	switch why {
	case Declined:
		s.c.declined.Add(n)
	case Failed:
		s.c.failed.Add(n)
	case TimedOut:
		s.c.timedOut.Add(n)
	}
}

// send asks the node to settle ds, in as few requests as the client needs; an ack's
// leases stop being kept once it has its answer (or was given up).
func (s *settler) send(a client.Action, ds []*delivery) ([]client.SettleResult, error) {
	handles := make([]string, len(ds))
	for i, d := range ds {
		handles[i] = d.msg.ReceiptHandle
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	res, err := s.src.Settle(ctx, s.topic, a, handles)
	if a == client.Ack {
		s.doneAcking(ds)
	}
	return res, err
}

// countAnswers counts the node's answers to a settling ds (err: the request's, when
// some are missing) and notes those without a final one as unconfirmed. It returns
// the first error among them.
func (s *settler) countAnswers(a client.Action, ds []*delivery, res []client.SettleResult, err error) error {
	var first error
	fail := func(e error) {
		s.c.failed.Add(1)
		s.c.settleFailed.Add(1)
		if first == nil {
			first = e
		}
	}
	var lost []Unconfirmed
	for i, d := range ds {
		if i >= len(res) {
			fail(fmt.Errorf("%s: no result for handle: %w", a, orUnknown(err)))
		} else {
			s.c.retries.Add(int64(res[i].Retries))
		}
		if i >= len(res) || res[i].Unconfirmed() {
			// No final answer: it may or may not have landed. Counted, and named so
			// that it can be sent again by hand.
			if i < len(res) {
				fail(resultError(a, res[i]))
			}
			lost = append(lost, Unconfirmed{Action: a, Handle: d.msg.ReceiptHandle,
				Partition: d.msg.Partition, Offset: d.msg.Offset})
			continue
		}
		switch r := res[i]; {
		case r.Status == 204 && a == client.Ack:
			s.c.acked.Add(1)
		case r.Status == 410 && a == client.Ack:
			s.c.ackGone.Add(1)
			if first == nil {
				first = ErrLeaseGone
			}
		case (r.Status == 204 || r.Status == 410) && a == client.Nack:
			// A 410 on a nack means the lease had lapsed already: the message is back
			// in the queue either way.
			s.c.nacked.Add(1)
		default:
			fail(resultError(a, r))
		}
	}
	if len(lost) > 0 {
		s.mu.Lock()
		s.unconfirmed = append(s.unconfirmed, lost...)
		s.mu.Unlock()
	}
	return first
}

// doneAcking stops keeping the leases of ds: their ack has its answer (or was given up).
func (s *settler) doneAcking(ds []*delivery) {
	s.mu.Lock()
	for _, d := range ds {
		delete(s.acking, d)
	}
	s.mu.Unlock()
}

// beingAcked reports whether d's ack is on its way.
func (s *settler) beingAcked(d *delivery) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.acking[d]
	return ok
}

func resultError(a client.Action, r client.SettleResult) error {
	if r.Status == 0 {
		return fmt.Errorf("%s: no answer: %s", a, r.Err)
	}
	return &client.Error{Op: a.Op(), Status: r.Status, Message: r.Err}
}

func orUnknown(err error) error {
	if err == nil {
		return errors.New("the client returned fewer results than handles")
	}
	return err
}
