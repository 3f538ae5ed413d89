package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// silentNode accepts connections and reads requests but never answers: the node of
// "it connects, then nothing". It returns its URL.
func silentNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		ln.Close()
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
			go func() {
				<-done
				conn.Close()
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A node that takes the request and never answers is not "unreachable": the error
// says no answer came, and every transport error event says the request went out.
func TestNoAnswerIsNotUnreachable(t *testing.T) {
	u := silentNode(t)
	var log EventLog
	c, _ := newClient(t, u, func(c *Config) { c.Timeout = 20 * time.Millisecond; c.Hooks = []Hook{&log} })
	err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{})
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Sent || te.After != 20*time.Millisecond {
		t.Fatalf("err %v (%T), want a TimeoutError after 20ms with the request sent", err, err)
	}
	if got, want := err.Error(), "produce: no answer within 20ms"; got != want {
		t.Errorf("err %q, want %q", got, want)
	}
	got := log.Snapshot()
	if len(got.Errors) != DefaultBoundedAttempts {
		t.Fatalf("events:\n%s", log.String())
	}
	for _, e := range got.Errors {
		if !e.Sent {
			t.Errorf("transport error without Sent: %+v", e)
		}
	}
	for _, e := range got.Retries {
		if !errors.As(e.Err, &te) {
			t.Errorf("retry event for %v, want the timeout", e.Err)
		}
	}

	// A consume's wait comes on top of the timeout.
	_, err = c.Consume(ctxT(t), "orders", ConsumeOptions{Wait: 30 * time.Millisecond})
	if !errors.As(err, &te) || te.After != 50*time.Millisecond {
		t.Errorf("consume: %v, want no answer within 50ms", err)
	}
}

// A connection closed after the request went out: the node may have done it.
func TestConnectionLostBeforeTheAnswer(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { hangUp(t, w) })
	c, _ := newClient(t, n.URL)
	err := c.Produce(ctxT(t), "orders", []byte("x"), ProduceOptions{})
	var na *NoAnswerError
	if !errors.As(err, &na) || !strings.HasPrefix(err.Error(), "produce: connection lost before an answer: ") {
		t.Errorf("err %v (%T), want a NoAnswerError", err, err)
	}
	if len(n.requests()) != DefaultBoundedAttempts {
		t.Errorf("%d attempts, want %d", len(n.requests()), DefaultBoundedAttempts)
	}
}

// The 502 of a relaying node, in plain text, retried on consume: each retry is an
// event with the status, the attempt and the budget, until the budget is spent.
func TestRetryEventsForABusyNode(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) { writeText(w, 502, "Bad Gateway\n") })
	var log EventLog
	c, sl := newClient(t, n.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	_, err := c.Consume(ctxT(t), "orders", ConsumeOptions{Max: 10})
	if StatusOf(err) != 502 {
		t.Fatalf("err %v, want the 502 once the budget is spent", err)
	}
	got := log.Snapshot()
	if len(got.Retries) == 0 || len(got.Retries) != len(n.requests())-1 || len(got.Retries) != len(sl.calls()) {
		t.Fatalf("%d retries for %d requests and %d sleeps", len(got.Retries), len(n.requests()), len(sl.calls()))
	}
	var elapsed time.Duration
	for i, e := range got.Retries {
		var ae *Error
		if e.Op != OpConsume || e.Status != 502 || !errors.As(e.Err, &ae) || ae.Message != "Bad Gateway" ||
			e.Attempt != i+2 || e.MaxAttempts != 0 || e.Budget != DefaultRetryBudget || e.Wait != sl.calls()[i] ||
			e.Elapsed < elapsed+e.Wait {
			t.Fatalf("retry %d: %+v", i, e)
		}
		elapsed = e.Elapsed
	}
	if last := got.Retries[len(got.Retries)-1]; last.Elapsed > DefaultRetryBudget+DefaultRetryMax {
		t.Errorf("elapsed %s past the budget", last.Elapsed)
	}
}

// Settlements announce their retries too, with how many handles are still open.
func TestRetryEventsForSettlements(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		if i < 2 {
			writeText(w, 503, "owner unavailable")
			return
		}
		writeJSON(w, 200, `{"results":[{"status":204},{"status":204},{"status":204}]}`)
	})
	var log EventLog
	c, _ := newClient(t, n.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	if _, err := c.Settle(ctxT(t), "orders", Ack, handles(3)); err != nil {
		t.Fatal(err)
	}
	got := log.Snapshot()
	if len(got.Retries) != 2 {
		t.Fatalf("events:\n%s", log.String())
	}
	for i, e := range got.Retries {
		if e.Op != OpAck || e.Status != 503 || e.Handles != 3 || e.Attempt != i+2 || e.Budget != DefaultRetryBudget {
			t.Errorf("retry %d: %+v", i, e)
		}
	}
	for i, r := range got.Requests {
		if r.Attempt != i+1 {
			t.Errorf("request %d is attempt %d", i, r.Attempt)
		}
	}
}

// The caller's own cancellation stays what it is, not a timeout of ours.
func TestCallerCancellationIsNotATimeout(t *testing.T) {
	u := silentNode(t)
	c, _ := newClient(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := c.Produce(ctx, "orders", []byte("x"), ProduceOptions{})
	var te *TimeoutError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
		t.Errorf("err %v, want the caller's deadline", err)
	}
}
