package consumer_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/devbroker"
)

// fastClient is a client for url that retries fast, with its own transport rt
// (nil: a fresh one).
func fastClient(t *testing.T, url string, rt http.RoundTripper) *client.Client {
	t.Helper()
	if rt == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	}
	c, err := client.New(client.Config{BaseURL: url, HTTPClient: &http.Client{Transport: rt},
		Retry: client.RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// heldAnswer lets the broker answer a leasing consume, then holds the answer back
// until release is closed: the answer is "on the wire" meanwhile. A request whose
// context ends first loses the answer, as a cut request does.
type heldAnswer struct {
	rt       http.RoundTripper
	arrived  chan struct{}
	release  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	answered int
}

func (h *heldAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/consume") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	h.once.Do(func() { close(h.arrived) })
	select {
	case <-h.release:
		return resp, nil
	case <-req.Context().Done():
		resp.Body.Close()
		return nil, req.Context().Err()
	}
}

// A signal while a leased batch is on its way to narad: the batch arrives and is
// given back at once, instead of staying leased until its lease runs out.
func TestIntegrationSignalWhileABatchIsOnTheWayGivesItBack(t *testing.T) {
	b, _ := broker(t)
	produce(t, b, 0, 3)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	h := &heldAnswer{rt: tr, arrived: make(chan struct{}), release: make(chan struct{})}
	c := fastClient(t, b.URL(), h)
	stop := make(chan struct{})
	done := runAsync(t, context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Stop: stop, Wait: time.Second})
	<-h.arrived
	if st := stats(t, b); st.InFlight() != 3 {
		t.Fatalf("in flight %d, want the batch of 3 leased", st.InFlight())
	}
	// The stop comes first, the answer after it: it is given back whenever the run's
	// watcher gets round to the stop (a sleep here stood in for that, and a loaded
	// machine could outlast it).
	close(stop)
	close(h.release)
	res := await(t, done, "the signal")
	if st := stats(t, b); st.InFlight() != 0 || st.Available() != 3 {
		t.Errorf("broker: %d in flight, %d available: want the batch given back at once", st.InFlight(), st.Available())
	}
	if res.Stats.Nacked != 3 || res.AnswerLost {
		t.Errorf("result %+v, want 3 given back", res)
	}
}

// A topic whose partitions each allow one message in flight: --drain takes all of
// them, not just the first of each partition (the next consume is empty until narad's
// own ack lands).
func TestIntegrationDrainThroughAnInFlightCap(t *testing.T) {
	b, c := broker(t)
	if err := b.CreateTopic(devbroker.TopicSpec{Name: "capped", Partitions: 3, MaxInFlightPerPartition: 1}); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, _, err := b.Produce("capped", "", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&out, rawRenderer(t)),
		consumer.Options{Topic: "capped", Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Stats("capped")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != consumer.StopDrained || res.Stats.Acked != 300 || st.Acked() != 300 || st.Available() != 0 {
		t.Errorf("result %+v, broker acked %d available %d: want all 300", res, st.Acked(), st.Available())
	}
}

// The node goes away and comes back on the same address (a restart): a consumer that
// had reached it waits, says so once each way, and goes on.
func TestIntegrationNodeRestartIsWaitedOut(t *testing.T) {
	cfg := devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}}
	b1, err := devbroker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b1.Close() })
	if _, _, err := b1.Produce("t", "", []byte("before")); err != nil {
		t.Fatal(err)
	}
	c := fastClient(t, b1.URL(), nil)
	got := make(chan string, 10)
	h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
		err := consumer.AckAll(ds)
		for _, d := range ds {
			got <- string(d.Message().Payload)
		}
		return err
	}}
	lost, back := make(chan error, 10), make(chan struct{}, 10)
	done := runAsync(t, context.Background(), c, h, consumer.Options{Count: 2, Wait: 50 * time.Millisecond,
		ReconnectMax: 20 * time.Millisecond,
		OnNodeLost:   func(err error) { lost <- err },
		OnNodeBack:   func() { back <- struct{}{} }})
	if p := <-got; p != `"before"` {
		t.Fatalf("got %s", p)
	}
	b1.Close()
	select {
	case err = <-lost:
	case res := <-done:
		t.Fatalf("the run ended when the node went away: %+v", res)
	}
	if !client.IsUnreachable(err) {
		t.Errorf("lost with %v, want a connection error", err)
	}
	cfg.Addr = b1.Addr()
	b2, err := devbroker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b2.Close() })
	if _, _, err := b2.Produce("t", "", []byte("after")); err != nil {
		t.Fatal(err)
	}
	res := await(t, done, "the node came back")
	if p := <-got; p != `"after"` {
		t.Errorf("got %s", p)
	}
	if len(lost) != 0 || len(back) != 1 {
		t.Errorf("%d more lost and %d back notices, want one of each in all", len(lost), len(back))
	}
	if res.Outcome() != consumer.OutcomeOK || res.Stats.Acked != 2 {
		t.Errorf("result %+v", res)
	}
}

// A node never reached is a wrong address, not a restart: the run fails at once.
func TestIntegrationNodeNeverReachedFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := fastClient(t, "http://"+addr, nil)
	lost := false
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Topic: "t", Wait: 50 * time.Millisecond, OnNodeLost: func(error) { lost = true }})
	if !client.IsUnreachable(err) || res.Reason != consumer.StopFailed || lost {
		t.Errorf("err %v reason %v lost %v: want a fast failure", err, res.Reason, lost)
	}
}

// unreachable is a real client's error for a node that cannot be reached.
func unreachable(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = fastClient(t, "http://"+addr, nil).Consume(context.Background(), "t", client.ConsumeOptions{})
	if !client.IsUnreachable(err) {
		t.Fatalf("consume from a closed port: %v", err)
	}
	return err
}

// goneAfterOne hands out its messages once, then cannot be reached.
type goneAfterOne struct {
	*consumertest.Source
	down  error
	mu    sync.Mutex
	calls int
}

func (g *goneAfterOne) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	if first {
		return g.Source.Consume(ctx, topic, o)
	}
	return nil, g.down
}

// While the node is gone, a signal ends the run as interrupted, and the timeout as a
// failure (the node was still gone), not as a clean end.
func TestNodeGoneUntilTheEnd(t *testing.T) {
	down := unreachable(t)
	for _, how := range []string{"signal", "timeout"} {
		t.Run(how, func(t *testing.T) {
			g := &goneAfterOne{Source: consumertest.New(), down: down}
			g.Add("t", 1)
			lost := make(chan error, 1)
			stop := make(chan struct{})
			o := consumer.Options{Topic: "t", Stop: stop, ReconnectMax: time.Millisecond,
				OnNodeLost: func(err error) { lost <- err }}
			if how == "timeout" {
				o.Timeout = 50 * time.Millisecond
			}
			type out struct {
				res consumer.Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := consumer.Run(context.Background(), g, consumer.NewPrinter(&bytes.Buffer{}, lines{}), o)
				done <- out{res, err}
			}()
			select {
			case err := <-lost:
				if err != down {
					t.Errorf("lost with %v", err)
				}
			case r := <-done:
				t.Fatalf("the run ended when the node went away: %+v, %v", r.res, r.err)
			}
			if how == "signal" {
				close(stop)
			}
			r := <-done
			switch {
			case how == "signal" && (r.err != nil || r.res.Reason != consumer.StopInterrupted):
				t.Errorf("%+v, %v: want interrupted", r.res, r.err)
			case how == "timeout" && (r.err != down || r.res.Reason != consumer.StopFailed):
				t.Errorf("%+v, %v: want the connection error", r.res, r.err)
			}
			if r.res.Stats.Acked != 1 {
				t.Errorf("stats %+v", r.res.Stats)
			}
		})
	}
}

// A node that keeps answering 503 past the client's retry budget (a partition owner
// down or moving) once a consume had answered is waited out as a restart is, said
// once each way: a long-running consumer must not end on it (it ended with the 503).
// Only --drain, which must end, still ends on it.
func TestIntegrationBusyNodeIsWaitedOut(t *testing.T) {
	b, _ := broker(t)
	c, err := client.New(client.Config{BaseURL: b.URL(),
		Retry: client.RetryPolicy{Initial: time.Millisecond, Max: 2 * time.Millisecond, Budget: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, b, 0, 1)
	got := make(chan string, 10)
	h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
		if len(got) == 0 {
			// The node answered; from the next consume on it answers only 503 for a while.
			b.FailNextPlain("consume", 30, http.StatusServiceUnavailable)
		}
		err := consumer.AckAll(ds)
		for _, d := range ds {
			got <- string(d.Message().Payload)
		}
		return err
	}}
	lost, back := make(chan error, 10), make(chan struct{}, 10)
	done := runAsync(t, context.Background(), c, h, consumer.Options{Count: 2, Wait: 50 * time.Millisecond,
		ReconnectMax: time.Millisecond,
		OnNodeLost:   func(err error) { lost <- err },
		OnNodeBack:   func() { back <- struct{}{} }})
	select {
	case err = <-lost:
	case res := <-done:
		t.Fatalf("the run ended when the node answered only 503: %+v", res)
	}
	if client.StatusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("lost with %v, want the 503", err)
	}
	produce(t, b, 1, 1)
	res := await(t, done, "the node served again")
	if res.Outcome() != consumer.OutcomeOK || res.Stats.Acked != 2 || len(got) != 2 {
		t.Errorf("result %+v, %d handled: want both messages", res, len(got))
	}
	if len(lost) != 0 || len(back) != 1 {
		t.Errorf("%d more lost and %d back notices, want one of each in all", len(lost), len(back))
	}

	b.FailNextPlain("consume", 30, http.StatusServiceUnavailable)
	res, err = consumer.Run(context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Topic: "t", Drain: true, ReconnectMax: time.Millisecond})
	if client.StatusOf(err) != http.StatusServiceUnavailable || res.Reason != consumer.StopFailed {
		t.Errorf("--drain: result %+v, %v: want it to end with the 503", res, err)
	}
	b.ClearFaults()
}
