package consumer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// atOnce answers every consume at once, as a node does that ignores wait (or one
// whose wait cap is a millisecond): never waiting, whatever was asked.
type atOnce struct {
	*consumertest.Source
	ignoreWait bool
	n          atomic.Int64
}

var errSpun = errors.New("consumed 10,000 times: the loop spins")

func (s *atOnce) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	if s.n.Add(1) > 10_000 {
		return nil, errSpun // a loop that spins would never let the clock reach Timeout
	}
	if s.ignoreWait {
		o.Wait = 0
	}
	return s.Source.Consume(ctx, topic, o)
}

// After an empty answer the next consume waits for a floor (IdlePause since the last
// was sent), however short the wait asked for and whatever the node does with it,
// so no node can make a consumer spin. Time is synctest's: 3 s pass in no time.
func TestEmptyAnswersNeverSpin(t *testing.T) {
	for _, c := range []struct {
		name       string
		wait       time.Duration
		ignoreWait bool
	}{
		{"a wait of 1ms", time.Millisecond, false},
		{"a node answering 204 at once", 10 * time.Second, true},
		{"no wait", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &atOnce{Source: consumertest.New(), ignoreWait: c.ignoreWait}
				res, err := consumer.Run(context.Background(), src, &funcHandler{},
					consumer.Options{Topic: "t", Wait: c.wait, Timeout: 3 * time.Second, Max: 10})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				// 3 s at one consume per 100ms, and the one at the start.
				if got := len(src.Consumes()); got > 31 {
					t.Errorf("%d consumes in 3s; want at most 31 (one per 100ms)", got)
				}
				if res.Reason != consumer.StopTimeout {
					t.Errorf("stopped for %v; want the timeout", res.Reason)
				}
			})
		})
	}
}

// A node that answers more than max: the run holds only what it asked for, gives the
// rest back at once and says so; nothing is lost. --count 1 prints one message, not
// the 150 the node sent.
func TestSurplusIsGivenBackAtOnce(t *testing.T) {
	for _, c := range []struct {
		name              string
		count, max, queue int
		wantAcked         int
	}{
		{"--count 1 against 150 for max=1", 1, 1, 150, 1},
		{"a drain, max=1, three for each", 0, 1, 6, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := consumertest.New()
			src.Over = c.queue
			if c.count == 0 {
				src.Over = 2
			}
			msgs := src.Add("t", c.queue)
			biggest := 0
			h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
				biggest = max(biggest, len(ds))
				return consumer.AckAll(ds)
			}}
			var notes [][2]int
			res := run(t, context.Background(), src, h, consumer.Options{Count: c.count, Max: c.max, Drain: c.count == 0,
				OnSurplus: func(asked, got int) { notes = append(notes, [2]int{asked, got}) }})
			if biggest > c.max {
				t.Errorf("handed %d messages at once; asked for %d", biggest, c.max)
			}
			if res.Stats.Acked != int64(c.wantAcked) || res.Stats.Nacked != int64(c.queue-c.wantAcked) {
				t.Errorf("stats %+v; want %d acked, the rest given back", res.Stats, c.wantAcked)
			}
			if got := len(src.Handles(client.Ack)) + len(src.Handles(client.Nack)); got != len(msgs) {
				t.Errorf("%d of %d settled", got, len(msgs))
			}
			if len(notes) == 0 || notes[0][0] != c.max || notes[0][1] <= c.max {
				t.Errorf("surplus noted %v", notes)
			}
		})
	}
}
