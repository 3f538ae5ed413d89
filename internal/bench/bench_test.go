package bench_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/internal/bench"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
)

// setup starts a dev broker with topic t (3 partitions) and a client whose hooks
// include a fresh Recorder.
func setup(t *testing.T) (*devbroker.Broker, *client.Client, *bench.Recorder) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	rec := bench.NewRecorder()
	c, err := client.New(client.Config{BaseURL: b.URL(), HTTPClient: &http.Client{Transport: tr}, Hooks: []client.Hook{rec},
		Retry: client.RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return b, c, rec
}

func stats(t *testing.T, b *devbroker.Broker) (available, inFlight, acked int) {
	t.Helper()
	st, err := b.Stats("t")
	if err != nil {
		t.Fatal(err)
	}
	return st.Available(), st.InFlight(), st.Acked()
}

func checkLatency(t *testing.T, name string, p bench.Phase) {
	t.Helper()
	l := p.Latency
	if !(l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
		t.Errorf("%s latency %+v: want 0 < max and p50 <= p95 <= p99 <= max", name, l)
	}
}

func TestRunProducesConsumesAndDrains(t *testing.T) {
	b, c, rec := setup(t)
	r, err := bench.New(c, rec, bench.Options{Topic: "t", Count: 500, Size: 100, Concurrency: 4, Consume: true, Keys: 7}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := r.Produce
	if p.Messages != 500 || p.Bytes != 50000 || p.Failed != 0 || p.Unknown != 0 || !p.Batch {
		t.Errorf("produce %+v: want 500 messages, 50000 bytes, batch", p)
	}
	// Every produce request was timed, and batches carried the messages.
	if got := int64(b.Requests("produce")); p.Requests != got || p.Requests < 5 || p.Requests >= 500 {
		t.Errorf("produce requests %d, broker saw %d: want the same, between 5 and 499 (batches)", p.Requests, got)
	}
	checkLatency(t, "produce", p.Phase)
	cr := r.Consume
	if cr == nil {
		t.Fatal("no consume report")
	}
	if cr.Messages != 500 || cr.Acked != 500 || cr.Bytes != 50000 || cr.Left != 0 || !cr.Batch {
		t.Errorf("consume %+v: want 500 consumed and acked, nothing left, batch", *cr)
	}
	if got := int64(b.Requests("consume") + b.Requests("ack")); cr.Requests != got {
		t.Errorf("consume requests %d, broker saw %d consumes and acks", cr.Requests, got)
	}
	checkLatency(t, "consume", cr.Phase)
	if r.Interrupted {
		t.Error("interrupted without a stop")
	}
	if a, f, k := stats(t, b); a != 0 || f != 0 || k != 500 {
		t.Errorf("broker: available=%d inflight=%d acked=%d, want 0 0 500", a, f, k)
	}
}

// An older node has no batch produce, ignores max and refuses batch acks: every
// phase falls back to single forms, still moves every message, and says so.
func TestRunOnAnOlderNode(t *testing.T) {
	b, c, rec := setup(t)
	b.SetLegacy(true)
	r, err := bench.New(c, rec, bench.Options{Topic: "t", Count: 150, Size: 10, Concurrency: 3, Consume: true}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Produce.Messages != 150 || r.Produce.Batch || r.Produce.Requests < 150 {
		t.Errorf("produce %+v: want 150 messages, batch false, a request each", r.Produce)
	}
	if r.Consume.Messages != 150 || r.Consume.Acked != 150 || r.Consume.Batch {
		t.Errorf("consume %+v: want 150 consumed and acked, batch false", *r.Consume)
	}
	if a, f, k := stats(t, b); a != 0 || f != 0 || k != 150 {
		t.Errorf("broker: available=%d inflight=%d acked=%d, want 0 0 150", a, f, k)
	}
}

// stealer is a Client that, at the first consume of the run, has another consumer take
// n messages and keep them.
type stealer struct {
	*client.Client
	n    int
	once sync.Once
}

func (s *stealer) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	s.once.Do(func() {
		for taken := 0; taken < s.n; {
			res, err := s.Client.Consume(ctx, topic, client.ConsumeOptions{Max: s.n - taken})
			if err != nil {
				panic(err)
			}
			taken += len(res.Messages)
		}
	})
	return s.Client.Consume(ctx, topic, o)
}

// Messages another consumer holds are not waited for: the phase ends when nothing is
// left to take and reports them as left.
func TestRunReportsWhatWasLeft(t *testing.T) {
	_, c, rec := setup(t)
	r, err := bench.New(&stealer{Client: c, n: 30}, rec, bench.Options{Topic: "t", Count: 200, Size: 5, Concurrency: 2, Consume: true}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Consume.Messages != 170 || r.Consume.Left != 30 {
		t.Errorf("consume %+v: want 170 consumed, 30 left", *r.Consume)
	}
}

// stopper is a Client that closes stop once the consume phase has taken something.
type stopper struct {
	*client.Client
	stop func()
}

func (s *stopper) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	res, err := s.Client.Consume(ctx, topic, o)
	if err == nil && len(res.Messages) > 0 {
		s.stop()
	}
	return res, err
}

// A stop during the consume phase takes nothing more and leaves nothing leased: what
// was taken is acked or given back, the rest stays available. (Consumes in flight at
// the stop are let finish: one cancelled after the node leased its messages would
// leave them leased for a visibility timeout.)
func TestRunStopDuringConsume(t *testing.T) {
	b, c, rec := setup(t)
	stop := make(chan struct{})
	var once sync.Once
	cl := &stopper{Client: c, stop: func() { once.Do(func() { close(stop) }) }}
	r, err := bench.New(cl, rec, bench.Options{Topic: "t", Count: 1000, Size: 5, Concurrency: 4, Consume: true, Stop: stop}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Consume == nil {
		t.Fatalf("report %+v: want interrupted during consume", r)
	}
	a, f, k := stats(t, b)
	if f != 0 || a+k != 1000 || int64(k) != r.Consume.Acked || r.Consume.Messages >= 1000 {
		t.Errorf("broker: available=%d inflight=%d acked=%d, report acked %d of %d: want nothing in flight, the rest available",
			a, f, k, r.Consume.Acked, r.Consume.Messages)
	}
}

// A stop before the run produces nothing and starts no consume phase.
func TestRunStoppedBeforeStart(t *testing.T) {
	_, c, rec := setup(t)
	stop := make(chan struct{})
	close(stop)
	r, err := bench.New(c, rec, bench.Options{Topic: "t", Count: 100, Size: 5, Consume: true, Stop: stop}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Consume != nil || r.Produce.Messages != 0 {
		t.Errorf("report %+v: want interrupted, nothing produced, no consume phase", r)
	}
}

// A topic that is gone is fatal, with what was measured.
func TestRunFatal(t *testing.T) {
	_, c, rec := setup(t)
	_, err := bench.New(c, rec, bench.Options{Topic: "nope", Count: 10, Size: 5, Consume: true}).Run(context.Background())
	if client.StatusOf(err) != http.StatusNotFound {
		t.Errorf("err %v, want a 404", err)
	}
}

// loser is a Client whose consumes go to a node that is gone (connection refused) once
// the consume phase has taken something; the acks still go through.
type loser struct {
	*client.Client
	dead *client.Client
	gone atomic.Bool
}

func (l *loser) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	if l.gone.Load() {
		return l.dead.Consume(ctx, topic, o)
	}
	res, err := l.Client.Consume(ctx, topic, o)
	if err == nil && len(res.Messages) > 0 {
		l.gone.Store(true)
	}
	return res, err
}

// deadClient is a client of a loopback port nothing listens on.
func deadClient(t *testing.T) *client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.New(client.Config{BaseURL: "http://" + addr,
		Retry: client.RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A node lost during the consume phase is said once, however many loops wait for it,
// and the soft stop ends the wait: bench waited silently, past the first Ctrl-C, until
// the second.
func TestRunStopWhileTheNodeIsLost(t *testing.T) {
	b, c, rec := setup(t)
	stop := make(chan struct{})
	lost := make(chan error, 16)
	done := make(chan error, 1)
	go func() {
		_, err := bench.New(&loser{Client: c, dead: deadClient(t)}, rec, bench.Options{Topic: "t", Count: 1000, Size: 5,
			Concurrency: 4, Consume: true, Stop: stop, OnNodeLost: func(err error) { lost <- err }}).Run(context.Background())
		done <- err
	}()
	select {
	case err := <-lost:
		if !client.IsUnreachable(err) {
			t.Errorf("lost with %v, want the node unreachable", err)
		}
	case err := <-done:
		t.Fatalf("the run ended (%v) without saying the node was lost", err)
	}
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v, want a stopped run", err)
		}
	case <-time.After(20 * time.Second): // bounds a hang only
		t.Fatal("the run did not end at the stop while it waited for the node")
	}
	if n := len(lost); n != 0 {
		t.Errorf("the node was said lost %d more times, want once", n)
	}
	if _, f, _ := stats(t, b); f != 0 {
		t.Errorf("%d messages left in flight, want none", f)
	}
}
