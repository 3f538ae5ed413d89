package client

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestProduce(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { w.WriteHeader(202) })
	c, _ := newClient(t, n.URL)
	payload := []byte{0x89, 'P', 'N', 'G', 0, 0xff}
	if err := c.Produce(ctxT(t), "orders", payload, ProduceOptions{Key: strp("customer 42&x=1"), Partition: intp(3)}); err != nil {
		t.Fatal(err)
	}
	r := n.requests()[0]
	if r.Method != "POST" || r.Path != "/v1/topics/orders/produce" || !bytes.Equal(r.Body, payload) {
		t.Errorf("request %s %s %q", r.Method, r.Path, r.Body)
	}
	if r.Query.Get("key") != "customer 42&x=1" || r.Query.Get("partition") != "3" || len(r.Query) != 2 {
		t.Errorf("query %v", r.Query)
	}
}

// 502 and 503 and a dropped connection are retried; the body goes again intact.
func TestProduceRetriesThenSucceeds(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		switch i {
		case 0:
			writeText(w, 502, "upstream connect error")
		case 1:
			hangUp(t, w)
		case 2:
			writeJSON(w, 503, `{"error":"partition owner unavailable"}`)
		default:
			w.WriteHeader(202)
		}
	})
	c, sl := newClient(t, n.URL)
	if err := c.Produce(ctxT(t), "orders", []byte("hello"), ProduceOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := n.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		if string(r.Body) != "hello" {
			t.Errorf("attempt sent %q", r.Body)
		}
	}
	if len(sl.calls()) != 3 {
		t.Errorf("%d backoffs, want 3", len(sl.calls()))
	}
}

func TestProduceGivesUp(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 503, `{"error":"partition owner unavailable"}`)
	})
	c, _ := newClient(t, n.URL, func(c *Config) { c.Retry.BoundedAttempts = 3 })
	err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{})
	if StatusOf(err) != 503 || err.Error() != "produce: 503 partition owner unavailable" {
		t.Errorf("err %v", err)
	}
	if len(n.requests()) != 3 {
		t.Errorf("%d attempts, want 3", len(n.requests()))
	}
}

func TestProduceNeverRetries4xx(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 413, 429} {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
			writeJSON(w, status, `{"error":"no"}`)
		})
		c, _ := newClient(t, n.URL)
		if err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{}); StatusOf(err) != status {
			t.Errorf("%d: err %v", status, err)
		}
		if len(n.requests()) != 1 {
			t.Errorf("%d retried: %d requests", status, len(n.requests()))
		}
	}
}

// A node that takes longer than the request timeout is a timeout, retried like a 503.
// synctest's clock makes the moment exact: the first attempt gives up at the timeout,
// not when the node would have answered.
func TestProduceTimeoutRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, hc := newPipeNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
			if i == 0 {
				select {
				case <-time.After(200 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			w.WriteHeader(202)
		})
		var log EventLog
		c, _ := newClient(t, "http://node.test", func(c *Config) {
			c.Timeout, c.HTTPClient, c.Hooks = 50*time.Millisecond, hc, []Hook{&log}
		})
		r := &request{op: OpProduce, method: "POST", path: "/v1/topics/o/produce", body: []byte("x")}
		start := time.Now()
		resp, err := c.bounded(ctxT(t), r)
		if err != nil || resp.status != 202 || len(n.requests()) != 2 {
			t.Fatalf("resp %+v, err %v, %d requests", resp, err, len(n.requests()))
		}
		if el := time.Since(start); el != 50*time.Millisecond {
			t.Errorf("answered after %v, want the first attempt's 50ms timeout and an instant retry", el)
		}
		var te *TimeoutError
		if got := log.Snapshot(); len(got.Errors) != 1 || !errors.As(got.Errors[0].Err, &te) || te.After != 50*time.Millisecond {
			t.Errorf("events:\n%s", log.String())
		}
	})
}

func TestProduceContextCancelled(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeText(w, 503, "busy") })
	c, sl := newClient(t, n.URL)
	ctx, cancel := context.WithCancel(ctxT(t))
	sl.onCall = func(int) { cancel() }
	err := c.Produce(ctx, "orders", []byte("x"), ProduceOptions{})
	if !errors.Is(err, context.Canceled) || len(n.requests()) != 1 {
		t.Errorf("err %v after %d requests", err, len(n.requests()))
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{Initial: 100 * time.Millisecond, Max: time.Second}.withDefaults()
	for n, base := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		base *= time.Millisecond
		for k := 0; k < 50; k++ {
			if d := p.backoff(n); d < base/2 || d > base {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, base/2, base)
			}
		}
	}
	if d := p.backoff(1000); d > time.Second {
		t.Errorf("backoff(1000) = %v", d)
	}
	def := RetryPolicy{}.withDefaults()
	if def.Initial != DefaultRetryInitial || def.Max != DefaultRetryMax || def.Budget != DefaultRetryBudget ||
		def.BoundedAttempts != DefaultBoundedAttempts || def.Sleep == nil {
		t.Errorf("defaults %+v", def)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := def.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("Sleep ignored a cancelled context: %v", err)
	}
}

// TestProduceStopsRetryingAfterTheStop: once WithRetryStop's channel is closed, a
// produce being retried starts no new attempt, and says what its last one got; a
// stop before the first attempt still lets it go once.
func TestProduceStopsRetryingAfterTheStop(t *testing.T) {
	for _, when := range []string{"during the attempt", "during the wait", "before"} {
		stop := make(chan struct{})
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
			if when == "during the attempt" {
				close(stop)
			}
			writeJSON(w, 503, `{"error":"partition owner unreachable"}`)
		})
		c, sl := newClient(t, n.URL)
		if when == "during the wait" {
			sl.onCall = func(int) { close(stop) }
		}
		if when == "before" {
			close(stop)
		}
		err := c.Produce(WithRetryStop(context.Background(), stop), "t", []byte("x"), ProduceOptions{})
		if !errors.Is(err, ErrStopped) || StatusOf(err) != 503 || !strings.Contains(err.Error(), "not tried again after the stop") {
			t.Errorf("%s: err %v, want ErrStopped wrapping the 503", when, err)
		}
		if got := len(n.requests()); got != 1 {
			t.Errorf("%s: %d attempts, want 1", when, got)
		}
	}
}
