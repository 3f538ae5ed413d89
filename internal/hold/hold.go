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
	asked chan struct{}
	ended <-chan struct{} // the program is gone

	mu      sync.Mutex
	handed  int
	settled int
	changed chan struct{}
}

// NewFeed returns a Feed that sends to send (Program.Send) until ended is closed.
func NewFeed(send func(tea.Msg), ended <-chan struct{}) *Feed {
	return &Feed{send: send, ended: ended, asked: make(chan struct{}, 16), changed: make(chan struct{})}
}

// Ready is the model asking for one more message.
func (f *Feed) Ready() {
	select {
	case f.asked <- struct{}{}:
	default:
	}
}

// Done is the model saying one message handed over is settled for good.
func (f *Feed) Done() {
	f.mu.Lock()
	f.settled++
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Slots waits until the model asked for a message.
func (f *Feed) Slots(ctx context.Context) (int, error) {
	select {
	case <-f.asked:
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Handle hands ds to the screen. Once the program is gone nothing is sent: the run
// gives back what nobody settled.
func (f *Feed) Handle(_ context.Context, ds []consumer.Delivery) error {
	f.mu.Lock()
	f.handed += len(ds)
	f.mu.Unlock()
	for _, d := range ds {
		select {
		case <-f.ended:
			return consumer.ErrStopped
		default:
		}
		f.send(Arrived{Held: d, Msg: d.Message()})
	}
	return nil
}

// Pipelining: hold mode takes one message at a time, when the model asks.
func (f *Feed) Pipelining() consumer.Pipelining { return consumer.Pipelining{} }

// Finish returns once the screen settled everything handed to it, or the program is
// gone; at a stop it tells the program, which gives back what it holds and quits.
func (f *Feed) Finish(ctx context.Context, stopping <-chan struct{}) error {
	for {
		f.mu.Lock()
		left, changed := f.handed-f.settled, f.changed
		f.mu.Unlock()
		if left <= 0 {
			return nil
		}
		select {
		case <-changed:
		case <-f.ended:
			return nil
		case <-stopping:
			f.send(Stop{})
			stopping = nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Peek returns the emit function of a replay run for --peek -i: each message waits
// until the model asked for one, then goes to the screen; replay stops once the
// program is gone.
func (f *Feed) Peek(ctx context.Context, stop error) func(*client.Message) error {
	return func(m *client.Message) error {
		select {
		case <-f.asked:
		case <-f.ended:
			return stop
		case <-ctx.Done():
			return stop
		}
		c := *m
		f.send(Arrived{Msg: &c})
		return nil
	}
}
