package producer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/producer"
)

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "message %d\n", i)
	}
	return b.String()
}

func run(t *testing.T, legacy bool, n, j int) (*devbroker.Broker, producer.Result) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t"}}, Legacy: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := client.New(client.Config{BaseURL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b, producer.Run(ctx, c, producer.Lines(strings.NewReader(lines(n))), producer.Options{Topic: "t", Concurrency: j})
}

// On a v3.1 node 1,000 lines go in a handful of batch requests.
func TestBrokerBatches(t *testing.T) {
	b, res := run(t, false, 1000, 4)
	st, _ := b.Stats("t")
	if res.Produced != 1000 || st.Messages() != 1000 {
		t.Fatalf("produced %d, the node holds %d", res.Produced, st.Messages())
	}
	if n := b.Requests(devbroker.OpProduce); n < 10 || n > 50 {
		t.Errorf("%d requests for 1,000 messages, want batches of up to 100", n)
	}
}

// An older node gets one request per message, after the one batch that found out.
func TestBrokerLegacy(t *testing.T) {
	b, res := run(t, true, 300, 4)
	st, _ := b.Stats("t")
	if res.Produced != 300 || st.Messages() != 300 || b.Requests(devbroker.OpProduce) != 300 {
		t.Fatalf("produced %d, the node holds %d after %d requests", res.Produced, st.Messages(), b.Requests(devbroker.OpProduce))
	}
}

// inFlight wraps a node's handler, counting produce requests (batch ones included)
// and the most that were out at once. Each request is held until j are out, or for
// at most hold, so that requests sent at once are seen at once however slow the
// machine (hold only bounds how long a run without them takes to fail).
type inFlight struct {
	h    http.Handler
	j    int
	hold time.Duration

	mu       sync.Mutex
	out, top int
	requests int
	full     chan struct{}
}

func (c *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/produce") && !strings.HasSuffix(r.URL.Path, "/produce/batch") {
		c.h.ServeHTTP(w, r)
		return
	}
	c.mu.Lock()
	c.requests++
	c.out++
	c.top = max(c.top, c.out)
	if c.out == c.j {
		close(c.full)
		c.full = make(chan struct{})
	}
	full, wait := c.full, c.out < c.j
	c.mu.Unlock()
	if wait {
		t := time.NewTimer(c.hold)
		select {
		case <-full:
		case <-t.C:
		}
		t.Stop()
	}
	c.h.ServeHTTP(w, r)
	c.mu.Lock()
	c.out--
	c.mu.Unlock()
}

func countingNode(t *testing.T, legacy bool, j int) (*inFlight, *client.Client) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t"}}, Legacy: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	counter := &inFlight{h: b.Handler(), j: j, hold: time.Second, full: make(chan struct{})}
	srv := httptest.NewServer(counter)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return counter, c
}

// One message is one request, on a v3.1 node and on an older one.
func TestBrokerLoneMessage(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		counter, c := countingNode(t, legacy, 1)
		res := producer.Run(context.Background(), c, producer.Args([]string{"one message"}), producer.Options{Topic: "t"})
		counter.mu.Lock()
		requests := counter.requests
		counter.mu.Unlock()
		if res.Produced != 1 || requests != 1 {
			t.Errorf("legacy %v: produced %d in %d requests, want 1 in 1", legacy, res.Produced, requests)
		}
	}
}

// On an older node -j 8 keeps 8 requests in flight, whatever the input size: the
// batch that learned the node has none goes message by message, 8 at once.
func TestBrokerLegacyConcurrency(t *testing.T) {
	for _, n := range []int{16, 300} {
		counter, c := countingNode(t, true, 8)
		res := producer.Run(context.Background(), c, producer.Lines(strings.NewReader(lines(n))), producer.Options{Topic: "t", Concurrency: 8})
		counter.mu.Lock()
		top := counter.top
		counter.mu.Unlock()
		if res.Produced != int64(n) || top != 8 {
			t.Errorf("%d lines: produced %d with at most %d requests in flight, want 8", n, res.Produced, top)
		}
	}
}
