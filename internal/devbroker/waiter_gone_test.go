package devbroker

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serveLocal answers one request through the broker's handler in this goroutine,
// with ctx as the request's context: a client that went away is a ctx cancelled.
func serveLocal(ctx context.Context, b *Broker, method, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec
}

// A message given back (a nack, or a lease running out) goes to a consume still
// waiting for one, never to a long poll whose client has gone: leased to nobody, it
// would wait out its whole lease before anyone could have it. The topic's lock is held
// while the message is given back and the client goes, so the waiter, woken by the
// message, can only look once its client is gone.
func TestGivenBackMessageSkipsAWaiterWhoseClientWentAway(t *testing.T) {
	for _, how := range []string{"nack", "lease expiry"} {
		t.Run(how, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(Config{Now: clock.Now, Topics: []TopicSpec{{Name: "orders", Partitions: 3, VisibilityTimeout: 30 * time.Second}}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			bg := context.Background()
			if r := serveLocal(bg, b, "POST", "/v1/topics/orders/produce", "m"); r.Code != 202 {
				t.Fatalf("produce: %d %s", r.Code, r.Body)
			}
			r := serveLocal(bg, b, "GET", "/v1/topics/orders/consume?wait=0s", "")
			var m struct {
				ReceiptHandle string `json:"receipt_handle"`
			}
			if err := json.Unmarshal(r.Body.Bytes(), &m); r.Code != 200 || err != nil {
				t.Fatalf("consume: %d %s", r.Code, r.Body)
			}
			h, ok := parseHandle(m.ReceiptHandle)
			if !ok {
				t.Fatalf("handle %q", m.ReceiptHandle)
			}

			// A long poll waiting for a message, whose client then goes away.
			ctx, gone := context.WithCancel(bg)
			answered := make(chan *httptest.ResponseRecorder, 1)
			go func() { answered <- serveLocal(ctx, b, "GET", "/v1/topics/orders/consume?wait=10s", "") }()
			for b.waiters.Load() == 0 {
				runtime.Gosched()
			}
			top := b.topic("orders")
			top.mu.Lock()
			switch how {
			case "nack":
				if st, _ := top.settleLocked(h, actNack, false, clock.Now()); st != 204 {
					t.Errorf("nack: %d", st)
				}
			case "lease expiry":
				clock.Advance(31 * time.Second)
				top.expireLocked(clock.Now())
			}
			gone()
			top.mu.Unlock()
			if got := <-answered; got.Code != 204 {
				t.Errorf("the gone client was answered %d %q, want 204 (nothing taken)", got.Code, got.Body)
			}
			st, err := b.Stats("orders")
			if err != nil {
				t.Fatal(err)
			}
			if st.Available() != 1 || st.InFlight() != 0 {
				t.Fatalf("after the %s: available %d, in flight %d; want the message ready for the next consumer",
					how, st.Available(), st.InFlight())
			}
			if r := serveLocal(bg, b, "GET", "/v1/topics/orders/consume?wait=0s", ""); r.Code != 200 {
				t.Fatalf("the next consumer got %d %s, want the message", r.Code, r.Body)
			}
		})
	}
}
