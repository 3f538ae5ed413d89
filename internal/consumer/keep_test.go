package consumer_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// gate is an output whose writes block until it opens: a terminal paused with Ctrl-S.
type gate struct{ open chan struct{} }

func (g gate) Write(b []byte) (int, error) {
	<-g.open
	return len(b), nil
}

// leaseOf is an Options.Lease that tells d.
func leaseOf(d time.Duration) func(context.Context) (time.Duration, error) {
	return func(context.Context) (time.Duration, error) { return d, nil }
}

// extendedOnce reports which handles have had at least one extend.
func extendedOnce(src *consumertest.Source) map[string]bool {
	seen := map[string]bool{}
	for _, h := range src.Handles(client.Extend) {
		seen[h] = true
	}
	return seen
}

// TestKeepHeldBehindABlockedWrite: the batch being written to an output that blocks,
// and the batches taken ahead of it, keep their leases until they are written and
// acked; nothing is lost, nothing settled twice.
func TestKeepHeldBehindABlockedWrite(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 300)
	g := gate{open: make(chan struct{})}
	p := consumer.NewPrinter(g, lines{})
	done := runAsync(t, context.Background(), src, p, consumer.Options{Count: 300, Lease: leaseOf(60 * time.Millisecond)})
	// The first batch is in the blocked write; two more were taken ahead of it.
	waitFor(t, "every message taken extended twice", func() bool {
		n := map[string]int{}
		for _, h := range src.Handles(client.Extend) {
			n[h]++
		}
		if len(n) < 300 {
			return false
		}
		for _, c := range n {
			if c < 2 {
				return false
			}
		}
		return true
	})
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
}

// TestKeepNothingWhenNotAsked: without Options.Lease (exec mode keeps its own) and with
// NoAck (leases lapse, as asked) nothing is extended.
func TestKeepNothingWhenNotAsked(t *testing.T) {
	for _, o := range []consumer.Options{{Count: 5}, {Count: 5, NoAck: true, Lease: leaseOf(30 * time.Millisecond)}} {
		src := consumertest.New()
		src.Add("t", 5)
		g := gate{open: make(chan struct{})}
		done := runAsync(t, context.Background(), src, consumer.NewPrinter(g, lines{}), o)
		time.Sleep(300 * time.Millisecond) // ten thirds of the lease
		close(g.open)
		await(t, done, "the run")
		if got := src.Handles(client.Extend); len(got) != 0 {
			t.Errorf("%+v: extended %v", o, got)
		}
	}
}

// TestKeepLeaseLost: an extend that finds a held message gone counts it lease_lost;
// the line is still written (or read from the pipe), and its ack is never sent (nor
// counted a bug). Held in hand behind a paused terminal, or unread in a pipe.
func TestKeepLeaseLost(t *testing.T) {
	for _, output := range []string{"paused terminal", "pipe"} {
		t.Run(output, func(t *testing.T) {
			src := consumertest.New()
			src.Add("t", 2)
			src.Status = func(a client.Action, h string) int {
				if a == client.Extend && h == "h1" {
					return 410
				}
				return 204
			}
			var w io.Writer
			var release func()
			if output == "pipe" {
				if runtime.GOOS != "linux" {
					t.Skip("only on Linux does narad see into a pipe: elsewhere a line is acked once written")
				}
				r, pw := pipe(t)
				w, release = pw, func() { takeLines(t, r, 2) }
			} else {
				g := gate{open: make(chan struct{})}
				w, release = g, func() { close(g.open) }
			}
			done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 2, Lease: leaseOf(30 * time.Millisecond)})
			waitFor(t, "extends of both", func() bool { s := extendedOnce(src); return s["h0"] && s["h1"] })
			release()
			res := await(t, done, "the run")
			if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0"}) {
				t.Errorf("acked %v, want h0 only", got)
			}
			if st := res.Stats; st.LeaseLost != 1 || st.Acked != 1 || st.Bugs != 0 {
				t.Errorf("stats %+v", st)
			}
			if res.Outcome() != consumer.OutcomeLeaseGone {
				t.Errorf("outcome %v", res.Outcome())
			}
		})
	}
}

// TestKeepWhileAckRetried: lines written and acked keep their leases while the ack is
// on its way (a 502/503 outage makes the client retry it for up to its budget): every
// one is extended until the ack has its answer, and an extend answered 410 meanwhile
// (the ack landed first) is no lost lease.
func TestKeepWhileAckRetried(t *testing.T) {
	for _, extend := range []int{204, 410} {
		t.Run(fmt.Sprintf("extend %d", extend), func(t *testing.T) {
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
				consumer.Options{Count: 150, Lease: leaseOf(30 * time.Millisecond)})
			want := 2
			if extend == 410 {
				want = 1
			}
			waitFor(t, "every line's ack on its way, and every one extended since", func() bool {
				return out.extendedWhileAcking(want) == 150
			})
			close(out.over)
			res := await(t, done, "the run")
			if st := res.Stats; st.Acked != 150 || st.LeaseLost != 0 || st.AckGone != 0 || st.Nacked != 0 || st.Bugs != 0 {
				t.Errorf("stats %+v", st)
			}
			if res.Outcome() != consumer.OutcomeOK {
				t.Errorf("outcome %v", res.Outcome())
			}
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
