package client

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A node that answers 503 or 429 with Retry-After is given at least that long before
// the retry (API.md), on every path that retries: consume, produce, a single and a
// batch settlement. The backoff alone would come back after 50-100 ms.
func TestRetryAfterIsWaitedAtLeast(t *testing.T) {
	busy := func(status int, after string, then func(w http.ResponseWriter)) handler {
		return func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
			if n == 0 {
				w.Header().Set("Retry-After", after)
				writeJSON(w, status, `{"error":"busy"}`)
				return
			}
			then(w)
		}
	}
	cases := []struct {
		name  string
		h     handler
		call  func(c *Client) error
		least time.Duration
	}{
		{"consume 429", busy(http.StatusTooManyRequests, "3", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }),
			func(c *Client) error {
				_, err := c.Consume(context.Background(), "orders", ConsumeOptions{})
				return err
			}, 3 * time.Second},
		{"produce 503", busy(http.StatusServiceUnavailable, "2", func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }),
			func(c *Client) error { return c.Produce(context.Background(), "orders", []byte("x"), ProduceOptions{}) },
			2 * time.Second},
		{"ack 503", busy(http.StatusServiceUnavailable, "4", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }),
			func(c *Client) error { return c.Ack(context.Background(), "orders", "0:1:2") }, 4 * time.Second},
		{"batch ack 503, an HTTP date", busy(http.StatusServiceUnavailable,
			time.Now().Add(10*time.Second).UTC().Format(http.TimeFormat),
			func(w http.ResponseWriter) {
				writeJSON(w, http.StatusOK, `{"results":[{"status":204},{"status":204}]}`)
			}),
			func(c *Client) error {
				_, err := c.Settle(context.Background(), "orders", Ack, []string{"0:1:2", "0:2:3"})
				return err
			}, 8 * time.Second},
		{"a Retry-After of a day waits a minute", busy(http.StatusServiceUnavailable, "86400",
			func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }),
			func(c *Client) error { return c.Ack(context.Background(), "orders", "0:1:2") }, maxRetryAfter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, tc.h)
			c, sl := newClient(t, n.URL)
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			slept := sl.calls()
			if len(slept) != 1 || slept[0] < tc.least || slept[0] > maxRetryAfter {
				t.Errorf("waited %v before the retry, want at least %v (at most %v)", slept, tc.least, maxRetryAfter)
			}
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"7", 7 * time.Second},
		{" 7 ", 7 * time.Second},
		{"-3", 0},
		{"1.5", 0},
		{"soon", 0},
		{"99999999999", 0},
		{"3600", maxRetryAfter},
		{now.Add(20 * time.Second).Format(http.TimeFormat), 20 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		h := http.Header{}
		if c.v != "" {
			h.Set("Retry-After", c.v)
		}
		if got := retryAfter(h, now); got != c.want {
			t.Errorf("Retry-After %q: %v, want %v", c.v, got, c.want)
		}
	}
}
