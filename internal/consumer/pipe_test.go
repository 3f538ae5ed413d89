//go:build linux

package consumer_test

import (
	"context"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// A pipe on Linux: a line counts as printed once the reader took it out of the pipe.

// TestPipeAcksOnlyWhatTheReaderTook: ten lines go into the pipe; the reader (head -n 2
// reading line by line) takes two and goes away while narad long-polls. Those two are
// acked, the eight it never took are given back, and the run ends at once.
func TestPipeAcksOnlyWhatTheReaderTook(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 10)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour})
	if got := takeLines(t, r, 2); got != "h0\nh1\n" {
		t.Fatalf("read %q", got)
	}
	waitFor(t, "all ten taken", func() bool { return src.Len() == 0 })
	r.Close()
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1"}) {
		t.Errorf("acked %v, want h0 h1: what the reader took", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"}) {
		t.Errorf("nacked %v, want h2..h9 given back", got)
	}
	if res.Reason != consumer.StopOutputClosed || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("reason %v outcome %v, want output closed, OK", res.Reason, res.Outcome())
	}
	if st := res.Stats; st.Acked != 2 || st.Nacked != 8 || st.Bugs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPipeWaitsForTheReaderAtTheEnd: with --count the run ends only once the reader
// took every line (acked), not when the lines were written.
func TestPipeWaitsForTheReaderAtTheEnd(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 3})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v before anything was read", got)
	}
	takeLines(t, r, 3)
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("acked %v", got)
	}
	if res.Reason != consumer.StopCount || res.Stats.Acked != 3 || res.Stats.Nacked != 0 {
		t.Errorf("result %+v", res)
	}
}

// TestPipeStopGivesBackWhatWaits: a signal while lines wait for a reader that does
// not read: after a short grace they are given back, and the run ends.
func TestPipeStopGivesBackWhatWaits(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	_, w := pipe(t)
	stop := make(chan struct{})
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour, Stop: stop})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	close(stop)
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v, want nothing: nothing was read", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("nacked %v", got)
	}
	if res.Outcome() != consumer.OutcomeInterrupted {
		t.Errorf("outcome %v", res.Outcome())
	}
}

// TestPipeSlowReaderKeepsLeases: lines that wait in the pipe have their leases
// extended (all of them in one request) until the reader takes them.
func TestPipeSlowReaderKeepsLeases(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	p := consumer.NewPrinter(w, lines{})
	asked := make(chan struct{}, 1)
	lease := func(ctx context.Context) (time.Duration, error) {
		asked <- struct{}{}
		return leaseOf(30 * time.Millisecond)(ctx)
	}
	done := runAsync(t, context.Background(), src, p, consumer.Options{Count: 3, Lease: lease})
	extendsOf := func() (n int) {
		for _, s := range src.Settles() {
			if s.Action == client.Extend && slices.Equal(s.Handles, []string{"h0", "h1", "h2"}) {
				n++
			}
		}
		return n
	}
	waitFor(t, "two extends of the waiting lines", func() bool { return extendsOf() >= 2 })
	takeLines(t, r, 3)
	res := await(t, done, "the run")
	select {
	case <-asked:
	default:
		t.Error("the lease was never asked for")
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("acked %v", got)
	}
	if st := res.Stats; st.Acked != 3 || st.LeaseLost != 0 || st.Nacked != 0 || st.Bugs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPipeHoldsABoundedNumber: while pipeHoldMax (1000) lines wait unread nothing
// more is taken, so a reader that stalls holds a bounded number of leases.
func TestPipeHoldsABoundedNumber(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 1500)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 1500})
	waitFor(t, "ten batches", func() bool { return src.Len() <= 500 })
	// Absence cannot be awaited: give the loop ample turns to take more if it would.
	time.Sleep(100 * time.Millisecond)
	if left := src.Len(); left != 500 {
		t.Errorf("%d taken while 1000 wait unread, want 1000", 1500-left)
	}
	go io.Copy(io.Discard, r)
	res := await(t, done, "the run")
	if res.Stats.Acked != 1500 {
		t.Errorf("stats %+v", res.Stats)
	}
}

// startCounter counts consumes as they start (consumertest records them as they end).
type startCounter struct {
	*consumertest.Source
	started atomic.Int32
}

func (s *startCounter) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	s.started.Add(1)
	return s.Source.Consume(ctx, topic, o)
}

// TestPipeNoLongPollWhileLinesWait: once a batch comes back short (the node had no
// more), the next consume, likely a long poll, waits until the reader took every line.
// A reader going away during a long poll then leaves nothing to give back, so nothing
// given back can be handed to that poll as it is cancelled.
func TestPipeNoLongPollWhileLinesWait(t *testing.T) {
	src := &startCounter{Source: consumertest.New()}
	src.Add("t", 10)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour})
	waitFor(t, "the batch", func() bool { return src.Len() == 0 })
	// Absence cannot be awaited: give the loop ample turns to start a consume if it would.
	time.Sleep(100 * time.Millisecond)
	if n := src.started.Load(); n != 1 {
		t.Errorf("%d consumes started while ten lines wait unread, want 1", n)
	}
	takeLines(t, r, 10)
	waitFor(t, "the long poll once all was read", func() bool { return src.started.Load() == 2 })
	r.Close()
	res := await(t, done, "the run")
	if res.Reason != consumer.StopOutputClosed || res.Stats.Acked != 10 {
		t.Errorf("result %+v", res)
	}
}
