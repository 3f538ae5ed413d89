package consumer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// counting is a Handler that counts Count in messages itself (as exec mode does): it
// holds what it is handed until the test ends each delivery, finished or given back.
type counting struct {
	mu       sync.Mutex
	held     []consumer.Delivery
	finished int
	changed  chan struct{}
	handed   chan struct{}
}

func newCounting() *counting {
	return &counting{changed: make(chan struct{}), handed: make(chan struct{}, 100)}
}

func (h *counting) Slots(ctx context.Context) (int, error) { return 10, ctx.Err() }

func (h *counting) Handle(_ context.Context, ds []consumer.Delivery) error {
	h.mu.Lock()
	h.held = append(h.held, ds...)
	h.mu.Unlock()
	h.handed <- struct{}{}
	return nil
}

func (h *counting) Finish(context.Context, <-chan struct{}) error { return nil }

func (h *counting) Pipelining() consumer.Pipelining {
	return consumer.Pipelining{Counted: h.counted}
}

func (h *counting) counted() (consumer.MessageCount, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return consumer.MessageCount{Finished: h.finished, InHand: len(h.held)}, h.changed
}

// end settles the oldest delivery held: acked and finished, or given back.
func (h *counting) end(finished bool) {
	h.mu.Lock()
	d := h.held[0]
	h.held = h.held[1:]
	if finished {
		h.finished++
	}
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	if finished {
		_ = d.Ack()
	} else {
		_ = d.Nack(consumer.Declined)
	}
}

// TestCountInMessagesFinished: with Pipelining.Counted, Count is messages finished; the
// loop never asks for more than Count less those finished and those in hand, waits
// while every message still needed is in hand, takes again for one given back, and
// stops once Count are finished.
func TestCountInMessagesFinished(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 10)
	h := newCounting()
	done := runAsync(t, context.Background(), src, h, consumer.Options{Count: 3, Max: 10})
	<-h.handed   // 3 asked for, 3 in hand
	h.end(false) // one given back: one more is needed
	<-h.handed
	h.end(true)
	h.end(true)
	h.end(true) // three finished
	res := await(t, done, "the run")
	var asked []int
	for _, c := range src.Consumes() {
		asked = append(asked, c.Opts.Max)
	}
	if len(asked) != 2 || asked[0] != 3 || asked[1] != 1 {
		t.Errorf("consumes asked for %v, want [3 1]", asked)
	}
	if res.Reason != consumer.StopCount || !res.Counted || res.Finished != 3 || res.CountUnmet || res.Stats.Received != 4 {
		t.Errorf("result %+v", res)
	}
	if res.Outcome() != consumer.OutcomeOK {
		t.Errorf("outcome %v: a message given back and finished later is no failure", res.Outcome())
	}
}
