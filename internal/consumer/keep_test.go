package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// The keeper's tests run in a synctest bubble: its clock moves only when every
// goroutine of the run waits, so "a third of the lease later" is exact, whatever the
// machine's load.

// gate is an output whose writes block until it opens: a terminal paused with Ctrl-S.
type gate struct{ open chan struct{} }

func (g gate) Write(b []byte) (int, error) {
	<-g.open
	return len(b), nil
}

// extendedOnce reports which handles have had at least one extend.
func extendedOnce(src *consumertest.Source) map[string]bool {
	seen := map[string]bool{}
	for _, h := range src.Handles(client.Extend) {
		seen[h] = true
	}
	return seen
}

// extendsOf counts each handle's extends.
func extendsOf(src *consumertest.Source) map[string]int {
	n := map[string]int{}
	for _, h := range src.Handles(client.Extend) {
		n[h]++
	}
	return n
}

// after lets the bubble's clock run d and everything due by then happen.
func after(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// keepHolder is a handler that holds what it is handed, as a running command does, until
// the test settles it; Finish waits for release.
type keepHolder struct {
	mu      sync.Mutex
	got     []consumer.Delivery
	release chan struct{}
}

func newKeepHolder() *keepHolder { return &keepHolder{release: make(chan struct{})} }

func (h *keepHolder) Slots(ctx context.Context) (int, error) { return consumer.MaxBatch, ctx.Err() }

func (h *keepHolder) Handle(_ context.Context, ds []consumer.Delivery) error {
	h.mu.Lock()
	h.got = append(h.got, ds...)
	h.mu.Unlock()
	return nil
}

func (h *keepHolder) Finish(ctx context.Context, _ <-chan struct{}) error {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil
}

func (h *keepHolder) Pipelining() consumer.Pipelining { return consumer.Pipelining{} }

func (h *keepHolder) held() []consumer.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// TestKeepHeldBehindABlockedWrite: the batch being written to an output that blocks,
// and the batches taken ahead of it, keep their leases until they are written and
// acked; nothing is lost, nothing settled twice.
func TestKeepHeldBehindABlockedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Add("t", 300)
		g := gate{open: make(chan struct{})}
		p := consumer.NewPrinter(g, lines{})
		done := runAsync(t, context.Background(), src, p, consumer.Options{Count: 300, Lease: 60 * time.Millisecond})
		// The first batch is in the blocked write; two more were taken ahead of it. A
		// third of the lease is 20ms: 150ms is seven rounds of extends.
		after(150 * time.Millisecond)
		n := extendsOf(src)
		if len(n) != 300 {
			t.Errorf("%d of 300 messages taken extended", len(n))
		}
		for h, c := range n {
			if c < 2 {
				t.Errorf("%s extended %d times in 150ms under a 60ms lease", h, c)
			}
		}
		if got := src.Handles(client.Ack); len(got) != 0 {
			t.Fatalf("acked %d before the write went out", len(got))
		}
		close(g.open)
		res := await(t, done, "the run")
		acked := src.Handles(client.Ack)
		slices.Sort(acked)
		want := make([]string, 300)
		for i := range want {
			want[i] = fmt.Sprintf("h%d", i)
		}
		slices.Sort(want)
		if !slices.Equal(acked, want) {
			t.Errorf("acked %d handles, want h0..h299 once each", len(acked))
		}
		if st := res.Stats; st.Acked != 300 || st.LeaseLost != 0 || st.Nacked != 0 || st.Bugs != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestKeepNothingWithNoAck: with NoAck the leases lapse, as asked: nothing is extended.
func TestKeepNothingWithNoAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Add("t", 5)
		g := gate{open: make(chan struct{})}
		done := runAsync(t, context.Background(), src, consumer.NewPrinter(g, lines{}),
			consumer.Options{Count: 5, NoAck: true, Lease: 30 * time.Millisecond})
		after(300 * time.Millisecond) // ten leases
		close(g.open)
		await(t, done, "the run")
		if got := src.Handles(client.Extend); len(got) != 0 {
			t.Errorf("extended %v", got)
		}
	})
}

// TestKeepAsksTheLeaseOnlyWhenNeeded: a run not told the lease asks the node for it
// once a message has been held 200ms, not before, and then keeps it; a run that keeps
// up never asks.
func TestKeepAsksTheLeaseOnlyWhenNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Lease = 600 * time.Millisecond
		src.Add("t", 5)
		g := gate{open: make(chan struct{})}
		done := runAsync(t, context.Background(), src, consumer.NewPrinter(g, lines{}), consumer.Options{Count: 5})
		after(150 * time.Millisecond)
		if n := src.TopicAsks(); n != 0 {
			t.Errorf("the lease was asked for %d times in the first 150ms", n)
		}
		after(100 * time.Millisecond)
		if n := src.TopicAsks(); n != 1 {
			t.Errorf("the lease was asked for %d times by 250ms, want once", n)
		}
		if n := len(extendedOnce(src)); n != 5 {
			t.Errorf("%d of 5 held messages extended once the lease was known", n)
		}
		close(g.open)
		if res := await(t, done, "the run"); res.Stats.Acked != 5 || res.Stats.LeaseLost != 0 {
			t.Errorf("stats %+v", res.Stats)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Lease = 600 * time.Millisecond
		src.Add("t", 5)
		res := await(t, runAsync(t, context.Background(), src, consumer.NewPrinter(io.Discard, lines{}), consumer.Options{Count: 5}), "the run")
		if n := src.TopicAsks(); n != 0 || res.Stats.Acked != 5 {
			t.Errorf("a run that kept up asked for the lease %d times; stats %+v", n, res.Stats)
		}
	})
}

// TestKeepLeaseLost: an extend that finds a held message gone counts it lease_lost;
// the line is still written, and its ack is never sent (nor counted a bug). Held in
// hand behind a paused terminal here, unread in a pipe in TestKeepLeaseLostInAPipe.
func TestKeepLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := gone410("h1")
		g := gate{open: make(chan struct{})}
		done := runAsync(t, context.Background(), src, consumer.NewPrinter(g, lines{}),
			consumer.Options{Count: 2, Lease: 30 * time.Millisecond})
		after(20 * time.Millisecond)
		if s := extendedOnce(src); !s["h0"] || !s["h1"] {
			t.Errorf("extended %v by a lease's two thirds, want both", s)
		}
		close(g.open)
		checkLostH1(t, src, await(t, done, "the run"))
	})
}

// TestKeepLeaseLostInAPipe is TestKeepLeaseLost with the lines unread in a pipe: a
// real one, so in real time.
func TestKeepLeaseLostInAPipe(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only on Linux does narad see into a pipe: elsewhere a line is acked once written")
	}
	src := gone410("h1")
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}),
		consumer.Options{Count: 2, Lease: time.Second})
	waitFor(t, "extends of both", func() bool { s := extendedOnce(src); return s["h0"] && s["h1"] })
	takeLines(t, r, 2)
	checkLostH1(t, src, await(t, done, "the run"))
}

// gone410 is a source of two messages, h0 and h1, whose extends of lost are 410.
func gone410(lost string) *consumertest.Source {
	src := consumertest.New()
	src.Add("t", 2)
	src.Status = func(a client.Action, h string) int {
		if a == client.Extend && h == lost {
			return 410
		}
		return 204
	}
	return src
}

func checkLostH1(t *testing.T, src *consumertest.Source, res consumer.Result) {
	t.Helper()
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0"}) {
		t.Errorf("acked %v, want h0 only", got)
	}
	if st := res.Stats; st.LeaseLost != 1 || st.Acked != 1 || st.Bugs != 0 {
		t.Errorf("stats %+v", st)
	}
	if res.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("outcome %v", res.Outcome())
	}
}

// TestKeepLapse: extends that only fail (503s, a node away) do not keep a lease: a
// whole lease after the last extend that was confirmed (or after the message reached
// us, when none was) it has certainly lapsed, and the delivery is lost as for a 410:
// Lost closes, it counts lease_lost, and its keepHolder's ack sends nothing. Not a moment
// before: the node may still hold it for us.
func TestKeepLapse(t *testing.T) {
	for _, c := range []struct {
		name  string
		fails time.Duration // extends fail from then on
	}{{"no extend confirmed", 0}, {"after the last confirmed extend", 250 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testLapse(t, c.fails) })
		})
	}
}

func testLapse(t *testing.T, fails time.Duration) {
	const lease = 300 * time.Millisecond
	start := time.Now()
	src := consumertest.New()
	src.Add("t", 1)
	var confirmed time.Time // the last extend answered 204, or the start
	var mu sync.Mutex
	src.Status = func(a client.Action, h string) int {
		if a != client.Extend {
			return 204
		}
		mu.Lock()
		defer mu.Unlock()
		if time.Since(start) >= fails {
			return 503
		}
		confirmed = time.Now()
		return 204
	}
	h := newKeepHolder()
	done := runAsync(t, context.Background(), src, h, consumer.Options{Count: 1, Lease: lease})
	synctest.Wait()
	d := h.held()[0]
	lost := d.Lost()
	mu.Lock()
	if confirmed.IsZero() {
		confirmed = start
	}
	mu.Unlock()
	// Until the last confirmed extend is a lease old, held; and lost by then, within the
	// keeper's look every twelfth of the lease.
	for {
		after(time.Millisecond)
		mu.Lock()
		lapse := confirmed.Add(lease)
		mu.Unlock()
		if chans.Closed(lost) {
			if now := time.Now(); now.Before(lapse) || now.After(lapse.Add(lease/12+time.Millisecond)) {
				t.Errorf("lost at %v, the lease lapsed at %v", now.Sub(start), lapse.Sub(start))
			}
			break
		}
		if time.Now().After(lapse.Add(lease)) {
			t.Errorf("not lost at %v, a lease after it lapsed", time.Since(start))
			break
		}
	}
	if fails > 0 && len(extendedOnce(src)) == 0 {
		t.Error("no extend before they failed")
	}
	if why := d.LostWhy(); why != "lease ran out (no extend succeeded for 300ms)" {
		t.Errorf("LostWhy %q", why)
	}
	if _, gone := d.Lease(); !gone {
		t.Error("Lease says not lost")
	}
	if err := d.Ack(); !errors.Is(err, consumer.ErrAlreadySettled) {
		t.Errorf("ack of a lost delivery: %v", err)
	}
	close(h.release)
	res := await(t, done, "the run")
	if got := append(src.Handles(client.Ack), src.Handles(client.Nack)...); len(got) != 0 {
		t.Errorf("settled %v after the lease lapsed", got)
	}
	if st := res.Stats; st.LeaseLost != 1 || st.Bugs != 0 || res.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("stats %+v outcome %v", st, res.Outcome())
	}
}

// TestKeepLostOn410: a 410 on an extend closes Lost at once, with the reason.
func TestKeepLostOn410(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := gone410("h1")
		h := newKeepHolder()
		done := runAsync(t, context.Background(), src, h, consumer.Options{Count: 2, Lease: 300 * time.Millisecond})
		synctest.Wait()
		ds := h.held()
		after(99 * time.Millisecond)
		if chans.Closed(ds[1].Lost()) {
			t.Error("lost before the first extend was due")
		}
		after(10 * time.Millisecond)
		if !chans.Closed(ds[1].Lost()) || chans.Closed(ds[0].Lost()) {
			t.Errorf("after the first extends: h0 lost %v, h1 lost %v; want h1 only",
				chans.Closed(ds[0].Lost()), chans.Closed(ds[1].Lost()))
		}
		if why := ds[1].LostWhy(); why != "lease gone (410 on extend)" {
			t.Errorf("LostWhy %q", why)
		}
		_ = ds[0].Ack()
		_ = ds[1].Ack()
		close(h.release)
		checkLostH1(t, src, await(t, done, "the run"))
	})
}

// TestKeepBatchesDeliveriesThatCameApart: messages handed over at different moments
// share extend requests: once some are due (held a third of the lease), every one
// held at least half that rides along, so the run sends one request per round rather
// than one per batch taken.
func TestKeepBatchesDeliveriesThatCameApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 300 * time.Millisecond
		src := consumertest.New()
		src.Add("t", 3)
		h := newKeepHolder()
		done := runAsync(t, context.Background(), src, h, consumer.Options{Count: 6, Lease: lease, Wait: time.Minute})
		after(40 * time.Millisecond) // two fifths of the 100ms due time
		src.Add("t", 3)
		after(time.Second)
		var requests int
		for _, s := range src.Settles() {
			if s.Action != client.Extend {
				continue
			}
			requests++
			if len(s.Handles) != 6 {
				t.Errorf("an extend of %v, want all six held", s.Handles)
			}
		}
		if requests < 9 {
			t.Errorf("%d extend requests in a second of a 300ms lease", requests)
		}
		for _, d := range h.held() {
			_ = d.Ack()
		}
		close(h.release)
		if res := await(t, done, "the run"); res.Stats.Acked != 6 || res.Stats.LeaseLost != 0 {
			t.Errorf("stats %+v", res.Stats)
		}
	})
}

// TestKeepThroughTheSoftStop: after the soft stop (the first signal) the run takes
// nothing more, but what its handler still works on (exec mode's running commands,
// for --shutdown-grace) keeps its lease until the handler is done with it.
func TestKeepThroughTheSoftStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Add("t", 2)
		h := newKeepHolder()
		stop := make(chan struct{})
		done := runAsync(t, context.Background(), src, h, consumer.Options{Stop: stop, Lease: 300 * time.Millisecond})
		synctest.Wait()
		close(stop)
		after(time.Second)
		n := extendsOf(src)
		if n["h0"] < 9 || n["h1"] < 9 {
			t.Errorf("extends %v in the second after the soft stop, want some ten each", n)
		}
		for _, d := range h.held() {
			_ = d.Ack()
		}
		close(h.release)
		if res := await(t, done, "the run"); res.Stats.Acked != 2 || res.Stats.LeaseLost != 0 {
			t.Errorf("stats %+v", res.Stats)
		}
	})
}

// TestKeepWhileAckRetried: lines written and acked keep their leases while the ack is
// on its way (a 502/503 outage makes the client retry it for up to its budget): every
// one is extended until the ack has its answer, and an extend answered 410 meanwhile
// (the ack landed first) is no lost lease; nor is a lease that lapsed meanwhile.
func TestKeepWhileAckRetried(t *testing.T) {
	for _, extend := range []int{204, 410, 503} {
		t.Run(fmt.Sprintf("extend %d", extend), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := consumertest.New()
				src.Add("t", 150)
				out := &ackOutage{Source: src, over: make(chan struct{}), extends: map[string]int{}}
				src.Status = func(a client.Action, h string) int {
					if a == client.Extend && out.isAcking(h) {
						return extend
					}
					return 204
				}
				done := runAsync(t, context.Background(), out, consumer.NewPrinter(io.Discard, lines{}),
					consumer.Options{Count: 150, Lease: 30 * time.Millisecond})
				// Ten leases: extended every third of one, or once until a 410, and past
				// any lapse.
				after(300 * time.Millisecond)
				want := 20
				if extend == 410 {
					want = 1
				}
				if n := out.extendedWhileAcking(want); n != 150 {
					t.Errorf("%d of 150 lines extended %d times while their ack was on its way", n, want)
				}
				close(out.over)
				res := await(t, done, "the run")
				if st := res.Stats; st.Acked != 150 || st.LeaseLost != 0 || st.AckGone != 0 || st.Nacked != 0 || st.Bugs != 0 {
					t.Errorf("stats %+v", st)
				}
				if res.Outcome() != consumer.OutcomeOK {
					t.Errorf("outcome %v", res.Outcome())
				}
			})
		})
	}
}

// ackOutage is a node whose acks get no answer until over closes, as the client's
// retries through a 503 outage look to the run. It counts the extends of each handle
// sent while its ack was on its way.
type ackOutage struct {
	*consumertest.Source
	over    chan struct{}
	mu      sync.Mutex
	extends map[string]int // by handle, once its ack was asked for
}

func (o *ackOutage) Settle(ctx context.Context, topic string, a client.Action, handles []string) ([]client.SettleResult, error) {
	o.mu.Lock()
	for _, h := range handles {
		switch _, acking := o.extends[h]; {
		case a == client.Ack && !acking:
			o.extends[h] = 0
		case a == client.Extend && acking:
			o.extends[h]++
		}
	}
	o.mu.Unlock()
	if a == client.Ack {
		<-o.over
	}
	return o.Source.Settle(ctx, topic, a, handles)
}

func (o *ackOutage) isAcking(h string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.extends[h]
	return ok
}

// extendedWhileAcking is how many handles were extended at least n times while
// their ack was on its way.
func (o *ackOutage) extendedWhileAcking(n int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := 0
	for _, c := range o.extends {
		if c >= n {
			k++
		}
	}
	return k
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4 * time.Second: "4s", time.Minute: "1m", 90 * time.Second: "1m30s", 40 * time.Millisecond: "40ms",
		time.Hour: "1h0m", // rare enough to leave as Go writes it
	} {
		if got := consumer.ShortDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
