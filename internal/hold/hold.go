// Package hold owns hold mode, `narad sub TOPIC -i`: one message at a time, full
// screen, while a person decides what becomes of it. It is a bubbletea program (Model)
// fed by the consume loop of package consumer through Feed, a consumer.Handler.
//
// Who does what: consumer.Run's loop asks Feed.Slots for room, which waits until the
// model asked for a message (Options.Ready); Feed.Handle sends each delivery to the
// program as Arrived. The model never settles in Update: a key starts a command that
// calls the Delivery (Ack, Nack, Extend, DeadLettered) and its answer comes back as a
// message, so the settle-once rule and the lease keeper (consumer's Options.Lease,
// the same as plain sub) stay in package consumer. The model reports each message
// settled for good (Options.Done), which is what Feed.Finish waits for.
package hold

import (
	"context"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
)

// Feed hands the consume loop's deliveries to a program, one when the model asks.
type Feed struct {
	send  func(tea.Msg)
	ended <-chan struct{} // the program is gone

	mu sync.Mutex
	// wanted is how many messages the model asked for and was not handed yet. An
	// ask stands until a message comes: a consume that found nothing leaves it, so
	// the loop asks the node again rather than wait for a second ask that never
	// comes (the model asks once, and waits).
	wanted  int
	handed  int
	settled int
	// settling counts settlements the program started and that have not returned:
	// a second q or a hard stop ends the program while an ack is still retried, and
	// the run must wait for it to be given up, so that it is named as unconfirmed
	// rather than dropped when the process exits.
	settling int
	changed  chan struct{}
}

// NewFeed returns a Feed that sends to send (Program.Send) until ended is closed.
func NewFeed(send func(tea.Msg), ended <-chan struct{}) *Feed {
	return &Feed{send: send, ended: ended, changed: make(chan struct{})}
}

// Ready is the model asking for one more message.
func (f *Feed) Ready() {
	f.mu.Lock()
	f.wanted++
	f.wake()
	f.mu.Unlock()
}

// Done is the model saying one message handed over is settled for good.
func (f *Feed) Done() {
	f.mu.Lock()
	f.settled++
	f.wake()
	f.mu.Unlock()
}

// wake tells whoever waits in Finish that something changed; f.mu is held.
func (f *Feed) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// settlingAdd counts a settlement starting (n=1) or returning (n=-1).
func (f *Feed) settlingAdd(n int) {
	f.mu.Lock()
	f.settling += n
	f.wake()
	f.mu.Unlock()
}

// Slots waits until the model wants a message; it wants it until Handle hands one.
func (f *Feed) Slots(ctx context.Context) (int, error) {
	if !f.awaitWanted(ctx, nil, false) {
		return 0, ctx.Err()
	}
	return 1, nil
}

// awaitWanted waits until the model wants a message, and with take counts one handed;
// false when gone or ctx ends it first (a nil gone never comes).
func (f *Feed) awaitWanted(ctx context.Context, gone <-chan struct{}, take bool) bool {
	for {
		f.mu.Lock()
		wanted, changed := f.wanted, f.changed
		if wanted > 0 && take {
			f.wanted--
		}
		f.mu.Unlock()
		if wanted > 0 {
			return true
		}
		select {
		case <-changed:
		case <-gone:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Handle hands ds to the screen. Once the program is gone nothing is sent: the run
// gives back what nobody settled.
func (f *Feed) Handle(_ context.Context, ds []consumer.Delivery) error {
	f.mu.Lock()
	f.handed += len(ds)
	f.wanted = max(f.wanted-len(ds), 0)
	f.mu.Unlock()
	for _, d := range ds {
		select {
		case <-f.ended:
			return consumer.ErrStopped
		default:
		}
		f.send(Arrived{Held: tracked{d, f}, Msg: d.Message()})
	}
	return nil
}

// tracked is a delivery whose settlements Feed counts while they are on their way.
type tracked struct {
	consumer.Delivery
	f *Feed
}

func (t tracked) Ack() error {
	t.f.settlingAdd(1)
	defer t.f.settlingAdd(-1)
	return t.Delivery.Ack()
}

func (t tracked) Nack(why consumer.Cause) error {
	t.f.settlingAdd(1)
	defer t.f.settlingAdd(-1)
	return t.Delivery.Nack(why)
}

func (t tracked) DeadLettered(why consumer.Cause) error {
	t.f.settlingAdd(1)
	defer t.f.settlingAdd(-1)
	return t.Delivery.DeadLettered(why)
}

// Pipelining: hold mode takes one message at a time, when the model asks.
func (f *Feed) Pipelining() consumer.Pipelining { return consumer.Pipelining{} }

// Finish returns once the screen settled everything handed to it, or the program is
// gone; at a stop it tells the program, which gives back what it holds and quits.
// Either way it first waits for the settlements still on their way: once the program
// is gone (or at the hard stop) the run gives up their retries (consumer's
// Options.Abandon), and each comes back promptly, named in Result.Unconfirmed.
func (f *Feed) Finish(ctx context.Context, stopping <-chan struct{}) error {
	gone, ended, hard := false, f.ended, ctx.Done()
	for {
		f.mu.Lock()
		left, settling, changed := f.handed-f.settled, f.settling, f.changed
		f.mu.Unlock()
		if settling == 0 && (left <= 0 || gone) {
			return nil
		}
		select {
		case <-changed:
		case <-ended:
			gone, ended = true, nil
		case <-stopping:
			f.send(Stop{})
			stopping = nil
		case <-hard:
			gone, hard = true, nil
		}
	}
}

// MovedOn returns once the model asked for a message after the last one handed (the
// person moved past it), the program is gone, or ctx is done: a --peek run whose
// reads ended (--count, --until) waits for it, so that its last message is shown for
// as long as the person looks at it, not closed the moment it arrives.
func (f *Feed) MovedOn(ctx context.Context) { f.awaitWanted(ctx, f.ended, false) }

// Peek returns the emit function of a replay run for --peek -i: each message waits
// until the model asked for one, then goes to the screen; replay stops once the
// program is gone.
func (f *Feed) Peek(ctx context.Context, stop error) func(*client.Message) error {
	return func(m *client.Message) error {
		if !f.awaitWanted(ctx, f.ended, true) {
			return stop
		}
		c := *m
		f.send(Arrived{Msg: &c})
		return nil
	}

}
