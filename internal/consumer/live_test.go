package consumer_test

import (
	"context"
	"testing"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// Live reads the run's own counters while it runs and after: what the metrics serve
// is what --stats prints, at every step.
func TestLiveIsTheRunsCounters(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 4)
	var live consumer.Live
	started := false
	h := &funcHandler{handle: func(ctx context.Context, ds []consumer.Delivery) error {
		if got := live.Held(); got != len(ds) {
			t.Errorf("Held() = %d with %d in hand", got, len(ds))
		}
		if got := live.Stats().Received; got != int64(len(ds)) {
			t.Errorf("Stats().Received = %d with %d taken", got, len(ds))
		}
		if err := ds[0].Extend(ctx); err != nil {
			t.Errorf("extend: %v", err)
		}
		if got := live.Extended(); got != 1 {
			t.Errorf("Extended() = %d after one extend", got)
		}
		if err := ds[0].Nack(consumer.Declined); err != nil {
			t.Error(err)
		}
		if err := consumer.AckAll(ds[1:]); err != nil {
			t.Error(err)
		}
		if got := live.Held(); got != 0 {
			t.Errorf("Held() = %d with all settled", got)
		}
		return nil
	}}
	res := run(t, context.Background(), src, h, consumer.Options{Count: 4, Max: 4, Live: func(l consumer.Live) {
		if started {
			t.Error("Live called twice")
		}
		started = true
		live = l
		if s := l.Stats(); s != (consumer.Stats{}) {
			t.Errorf("before anything was taken: %+v", s)
		}
	}})
	if !started {
		t.Fatal("Live never called")
	}
	if got := live.Stats(); got != res.Stats {
		t.Errorf("after the run Live says %+v, the result %+v", got, res.Stats)
	}
	if res.Stats.Acked != 3 || res.Stats.Nacked != 1 {
		t.Errorf("stats %+v", res.Stats)
	}
}
