package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// hangGuard only turns a hang into a failure; it measures nothing.
const hangGuard = 20 * time.Second

// watched is a Source that counts the consumes on their way, and lets a test hold
// every consume after the first few (or those hold picks) until it releases them.
type watched struct {
	*consumertest.Source
	mu       sync.Mutex
	started  int                              // consumes begun
	inFlight int                              // consumes not answered yet
	most     int                              // the most in flight at once
	begun    chan struct{}                    // gets a value as each consume begins
	free     int                              // consumes answered without being held
	hold     func(client.ConsumeOptions) bool // when set, picks the held ones instead
	release  chan struct{}                    // closed to answer the held ones
}

func newWatched(free int) *watched {
	return &watched{Source: consumertest.New(), begun: make(chan struct{}, 1000), free: free, release: make(chan struct{})}
}

func (w *watched) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	w.mu.Lock()
	w.started++
	n := w.started
	w.inFlight++
	w.most = max(w.most, w.inFlight)
	w.mu.Unlock()
	w.begun <- struct{}{}
	defer func() {
		w.mu.Lock()
		w.inFlight--
		w.mu.Unlock()
	}()
	// Leased when asked for, as a node does, and answered when released.
	res, err := w.Source.Consume(ctx, topic, o)
	held := n > w.free
	if w.hold != nil {
		held = w.hold(o)
	}
	if !held || err != nil {
		return res, err
	}
	select {
	case <-w.release:
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("consume: %w (%w)", ctx.Err(), client.ErrAnswerLost)
	}
}

func (w *watched) counts() (started, most int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started, w.most
}

// waitBegun waits for n more consumes to begin.
func (w *watched) waitBegun(t *testing.T, n int, what string) {
	t.Helper()
	for range n {
		select {
		case <-w.begun:
		case <-time.After(hangGuard):
			t.Fatalf("no consume began %s", what)
		}
	}
}

// gatedWriter holds its first write until gate is closed.
type gatedWriter struct {
	mu      sync.Mutex
	out     bytes.Buffer
	entered chan struct{}
	gate    chan struct{}
	writes  int
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	first := g.writes == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.Write(p)
}

// The next consume is on its way while a batch is being written: the first write
// waits for it, which a loop that asks only after the write would never send.
func TestNextConsumeIsOnItsWayWhileABatchIsWritten(t *testing.T) {
	src := newWatched(1000)
	msgs := src.Add("t", 30)
	w := &gatedWriter{entered: make(chan struct{}), gate: make(chan struct{})}
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Drain: true, Max: 10})
	src.waitBegun(t, 1, "at all")
	<-w.entered
	src.waitBegun(t, 1, "while the first batch was being written")
	close(w.gate)
	res := await(t, done, "the drain")
	if res.Reason != consumer.StopDrained || res.Stats.Acked != 30 {
		t.Errorf("result %+v, want all 30 drained", res)
	}
	if got, want := sorted(src.Handles(client.Ack)), sorted(handles(msgs)); !slices.Equal(got, want) {
		t.Errorf("acked %v, want every message", got)
	}
}

// Pipelined or not, no line is acked before it was written, and every one is acked
// before Run returns: for a node that answers batches and for one that answers one
// message per consume.
func TestPipelinedAcksFollowTheirWrites(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single=%v", single), func(t *testing.T) {
			o := &orderedOut{Source: consumertest.New(), written: map[string]bool{}}
			o.Single = single
			msgs := o.Add("t", 500)
			res := run(t, context.Background(), o, consumer.NewPrinter(o, lines{}), consumer.Options{Drain: true, Max: 10})
			if len(o.early) > 0 {
				t.Errorf("acked before written: %v", o.early)
			}
			if got := sorted(o.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs))) {
				t.Errorf("acked %d handles, want all 500", len(got))
			}
			if res.Reason != consumer.StopDrained || res.Stats.Acked != 500 || res.Stats.Nacked != 0 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// --count asks, over the consumes on their way together, for no more than it still
// needs: the rest stays on the node.
func TestCountNeverOverReservesWhilePipelined(t *testing.T) {
	for _, c := range []struct {
		count, max int
		single     bool
	}{{250, 100, false}, {37, 10, false}, {1, 100, false}, {5, 100, true}, {20, 100, true}} {
		t.Run(fmt.Sprintf("count=%d max=%d single=%v", c.count, c.max, c.single), func(t *testing.T) {
			src := consumertest.New()
			src.Single = c.single
			src.Add("t", 1000)
			var out bytes.Buffer
			res := run(t, context.Background(), src, consumer.NewPrinter(&out, lines{}),
				consumer.Options{Count: c.count, Max: c.max, Wait: time.Second})
			asked, got := 0, 0
			for _, cs := range src.Consumes() {
				if cs.Opts.Max > c.max {
					t.Errorf("a consume asked for %d, more than --max %d", cs.Opts.Max, c.max)
				}
				asked += max(cs.Opts.Max, 1)
				got += cs.Got
			}
			if got != c.count || src.Len() != 1000-c.count {
				t.Errorf("took %d, %d left, want %d taken", got, src.Len(), c.count)
			}
			if !c.single && asked != c.count {
				t.Errorf("asked for %d in all, want %d", asked, c.count)
			}
			if res.Reason != consumer.StopCount || res.Stats.Acked != int64(c.count) || res.Stats.Nacked != 0 {
				t.Errorf("result %+v, want %d acked", res, c.count)
			}
		})
	}
}

// countingWriter closes reached once it has been written n lines.
type countingWriter struct {
	mu      sync.Mutex
	lines   int
	n       int
	reached chan struct{}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.lines
	w.lines += strings.Count(string(p), "\n")
	if before < w.n && w.lines >= w.n {
		close(w.reached)
	}
	return len(p), nil
}

// A node that hands out more than asked can bring --count's messages before a
// consume sent ahead has answered: what that consume brings is given back, not
// printed.
func TestExtrasOfAConsumeOnItsWayAtTheCountAreGivenBack(t *testing.T) {
	src := newWatched(0)
	src.Over = 2 // each answer brings two more than asked
	// Asked for 3, then 3 and 2 ahead (10 in all): the one asked for 2 is held.
	src.hold = func(o client.ConsumeOptions) bool { return o.Max == 2 }
	src.Add("t", 100)
	w := &countingWriter{n: 10, reached: make(chan struct{})}
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 10, Max: 3, Wait: time.Second})
	select {
	case <-w.reached: // 5 + 5 printed: the count; the consume asked for 2 still holds 4
	case <-time.After(hangGuard):
		t.Fatal("the first 10 lines were never printed")
	}
	close(src.release)
	res := await(t, done, "the count")
	// What each answer brought over what it asked for was given back on arrival, and
	// what the one held brought once the count was reached.
	if res.Reason != consumer.StopCount || res.Stats.Acked != 10 || res.Stats.Nacked != res.Stats.Received-10 {
		t.Errorf("result %+v, want 10 printed and acked, the rest given back", res)
	}
	if w.lines != 10 {
		t.Errorf("%d lines printed, want 10", w.lines)
	}
}

// A node that answers one message per consume gets several consumes at once.
func TestSingleShapeNodeGetsParallelConsumes(t *testing.T) {
	src := newWatched(1) // the first answer (one message) says what the node is
	src.Single = true
	msgs := src.Add("t", 40)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Drain: true})
	src.waitBegun(t, 1+12, "in parallel")
	if _, most := src.counts(); most < 12 {
		t.Errorf("at most %d consumes at once, want 12", most)
	}
	close(src.release)
	res := await(t, done, "the drain")
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs))) || res.Reason != consumer.StopDrained {
		t.Errorf("acked %d of 40, reason %v", len(got), res.Reason)
	}
}

// heldAcks is a Source whose settlements wait until released; it records the most on
// their way at once and the handles each carried.
type heldAcks struct {
	*consumertest.Source
	mu       sync.Mutex
	inFlight int
	most     int
	sizes    []int
	release  chan struct{}
}

func (h *heldAcks) Settle(ctx context.Context, topic string, a client.Action, hs []string) ([]client.SettleResult, error) {
	h.mu.Lock()
	h.inFlight++
	h.most = max(h.most, h.inFlight)
	h.sizes = append(h.sizes, len(hs))
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return h.Source.Settle(ctx, topic, a, hs)
}

// A node that answers one message per consume settles one handle per request: the
// acks of written lines go out side by side, one handle each, as many at once as
// consumes, rather than in requests that the client would split again.
func TestSingleShapeNodeGetsAcksSideBySide(t *testing.T) {
	src := &heldAcks{Source: consumertest.New(), release: make(chan struct{})}
	src.Single = true
	msgs := src.Add("t", 8)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Drain: true})
	waitFor(t, "the 8 lines' acks on their way at once", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.most == 8
	})
	close(src.release)
	res := await(t, done, "the drain")
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs))) || res.Reason != consumer.StopDrained {
		t.Errorf("acked %v, reason %v; want all 8 drained", got, res.Reason)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for _, n := range src.sizes {
		if n != 1 {
			t.Errorf("a settlement carried %d handles, want one each: %v", n, src.sizes)
			break
		}
	}
}

// A stop while consumes sent ahead are on their way lets them arrive and gives back
// what they bring; the batch written before the stop is acked.
func TestStopWhilePipelinedGivesBackWhatIsOnItsWay(t *testing.T) {
	synctest.Test(t, stopWhilePipelined)
}

func stopWhilePipelined(t *testing.T) {
	src := newWatched(1)
	first := src.Add("t", 3)
	later := src.Add("t", 20)
	stop := make(chan struct{})
	w := &gatedWriter{entered: make(chan struct{}), gate: make(chan struct{})}
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Stop: stop, Max: 3, Wait: time.Second})
	<-w.entered
	src.waitBegun(t, 2, "ahead")
	close(w.gate) // the first batch is written
	close(stop)
	synctest.Wait() // the stop takes effect with the answers still held
	close(src.release)
	res := await(t, done, "the stop")
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(handles(first))) {
		t.Errorf("acked %v, want the written batch %v", got, handles(first))
	}
	nacked := src.Handles(client.Nack)
	if len(nacked) != int(res.Stats.Received)-3 || len(nacked) == 0 {
		t.Errorf("given back %v of %d received, want everything after the first batch", nacked, res.Stats.Received)
	}
	for _, h := range nacked {
		if !slices.Contains(handles(later), h) {
			t.Errorf("gave back %s, which was written", h)
		}
	}
	if res.AnswerLost || res.Reason != consumer.StopInterrupted || src.Len() != 20-len(nacked) {
		t.Errorf("result %+v, %d left on the node", res, src.Len())
	}
}

// The hard stop cuts the consumes on their way at once and says so.
func TestHardStopWhilePipelinedCutsWhatIsOnItsWay(t *testing.T) {
	src := newWatched(1)
	src.Add("t", 30)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(t, ctx, src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Max: 3, Wait: time.Second})
	src.waitBegun(t, 3, "ahead")
	cancel()
	res := await(t, done, "the hard stop")
	if !res.AnswerLost {
		t.Errorf("result %+v, want the cut consumes reported", res)
	}
}
