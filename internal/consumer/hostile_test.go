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
