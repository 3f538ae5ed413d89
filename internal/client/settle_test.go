package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// ackNode is a v3.1 node's ack route: status(handle) decides each handle's answer,
// per handle in a batch and as the answer of a single ack.
func ackNode(t *testing.T, status func(handle string, attempt int) int) *node {
	var mu sync.Mutex
	attempts := map[string]int{}
	next := func(h string) int {
		mu.Lock()
		defer mu.Unlock()
		a := attempts[h]
		attempts[h]++
		return status(h, a)
	}
	return newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/ack") {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if h := r.URL.Query().Get("receipt_handle"); h != "" {
			st := next(h)
			if st == 204 {
				w.WriteHeader(204)
			} else {
				writeJSON(w, st, fmt.Sprintf(`{"error":"status %d"}`, st))
			}
			return
		}
		if r.Header.Get("Content-Type") != "application/json" {
			writeJSON(w, 400, `{"error":"content type"}`)
			return
		}
		var req struct {
			ReceiptHandles []string `json:"receipt_handles"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.ReceiptHandles) == 0 || len(req.ReceiptHandles) > 100 {
			writeJSON(w, 400, `{"error":"malformed body"}`)
			return
		}
		if len(body) > 64<<10 {
			writeJSON(w, 413, `{"error":"body too large"}`)
			return
		}
		type result struct {
			Status int    `json:"status"`
			Error  string `json:"error,omitempty"`
		}
		var ans struct {
			Results []result `json:"results"`
		}
		for _, h := range req.ReceiptHandles {
			st := next(h)
			res := result{Status: st}
			if st != 204 {
				res.Error = fmt.Sprintf("status %d", st)
			}
			ans.Results = append(ans.Results, res)
		}
		b, _ := json.Marshal(ans)
		writeJSON(w, 200, string(b))
	})
}

func handles(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("%d:%d:%d", i%8, i, 1000+i)
	}
	return hs
}

func batchHandles(t *testing.T, r seen) []string {
	t.Helper()
	var req struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}
	if len(r.Body) == 0 {
		if h := r.Query.Get("receipt_handle"); h != "" {
			return []string{h}
		}
		t.Fatalf("request without handles: %+v", r)
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return req.ReceiptHandles
}

func TestSettle150HandlesTwoBatches(t *testing.T) {
	n := ackNode(t, func(string, int) int { return 204 })
	c, _ := newClient(t, n.URL)
	hs := handles(150)
	res, err := c.Settle(ctxT(t), "orders", Ack, hs)
	if err != nil {
		t.Fatal(err)
	}
	reqs := n.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	sizes := []int{len(batchHandles(t, reqs[0])), len(batchHandles(t, reqs[1]))}
	sort.Ints(sizes)
	if sizes[0] != 50 || sizes[1] != 100 {
		t.Errorf("batch sizes %v, want 50 and 100", sizes)
	}
	for _, r := range reqs {
		if r.Query.Has("extend") || r.Query.Has("receipt_handle") || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request query %v, headers %v", r.Query, r.Header)
		}
	}
	if len(res) != 150 {
		t.Fatalf("%d results", len(res))
	}
	for i, r := range res {
		if r.Handle != hs[i] || r.Status != 204 || r.Err != "" || r.Retries != 0 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}

func TestSettleBatchMixedResults(t *testing.T) {
	hs := handles(5)
	n := ackNode(t, func(h string, attempt int) int {
		switch {
		case h == hs[1]:
			return 410
		case h == hs[2] && attempt < 2:
			return 503
		case h == hs[3] && attempt < 1:
			return 502
		case h == hs[4] && attempt < 1:
			return 421
		}
		return 204
	})
	c, sl := newClient(t, n.URL)
	res, err := c.Settle(ctxT(t), "orders", Extend, hs)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := []int{204, 410, 204, 204, 204}
	wantRetries := []int{0, 0, 2, 1, 1}
	for i, r := range res {
		if r.Status != wantStatus[i] || r.Retries != wantRetries[i] {
			t.Errorf("result %d: %+v, want status %d after %d retries", i, r, wantStatus[i], wantRetries[i])
		}
	}
	if res[1].Err != "status 410" {
		t.Errorf("410 explained as %q", res[1].Err)
	}
	reqs := n.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	// Only the handles that got 502/503/421 go again; a lone one as a single request.
	if got := batchHandles(t, reqs[1]); strings.Join(got, " ") != strings.Join(hs[2:5], " ") {
		t.Errorf("second round sent %v", got)
	}
	if got := batchHandles(t, reqs[2]); len(got) != 1 || got[0] != hs[2] || reqs[2].Query.Get("receipt_handle") != hs[2] {
		t.Errorf("third round sent %v", got)
	}
	for _, r := range reqs {
		if r.Query.Get("extend") != "true" {
			t.Errorf("extend sent extend=%q", r.Query.Get("extend"))
		}
	}
	if len(sl.calls()) != 2 {
		t.Errorf("%d backoffs, want 2", len(sl.calls()))
	}
}

// An older node answers a batch with 400 "receipt_handle required": the handles go
// one by one, and the Client does not try a batch on that node again.
func TestSettleLegacyFallback(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		h := r.URL.Query().Get("receipt_handle")
		switch {
		case h == "":
			writeJSON(w, 400, `{"error":"receipt_handle required"}`)
		case h == "1:1:1001":
			writeJSON(w, 410, `{"error":"receipt handle no longer matches an active reservation"}`)
		default:
			w.WriteHeader(204)
		}
	})
	var log EventLog
	c, _ := newClient(t, n.URL, func(c *Config) { c.Hooks = []Hook{&log} })
	ctx := ctxT(t)
	hs := handles(250)
	res, err := c.Settle(ctx, "orders", Nack, hs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := 204
		if i == 1 {
			want = 410
		}
		if r.Status != want || r.Handle != hs[i] || r.Retries != 0 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	reqs := n.requests()
	if len(reqs) != 1+250 {
		t.Errorf("%d requests, want one refused batch and 250 singles", len(reqs))
	}
	got := map[string]bool{}
	for _, r := range reqs[1:] {
		if len(r.Body) != 0 || r.Query.Get("extend") != "0" {
			t.Errorf("single nack with body %q, query %v", r.Body, r.Query)
		}
		got[r.Query.Get("receipt_handle")] = true
	}
	if len(got) != 250 {
		t.Errorf("%d distinct handles sent one by one", len(got))
	}
	// Remembered: the next Settle goes straight to single requests.
	if _, err := c.Settle(ctx, "orders", Ack, handles(3)); err != nil {
		t.Fatal(err)
	}
	for _, r := range n.requests()[len(reqs):] {
		if r.Query.Get("receipt_handle") == "" {
			t.Errorf("a batch was sent again to the older node")
		}
	}
	if got := log.Snapshot().Fallbacks; len(got) != 1 || got[0] != (FallbackEvent{OpNack, FallbackSettleSingles}) {
		t.Errorf("fallbacks %+v, want one", got)
	}
}

func TestSettleSplitsAt64KiB(t *testing.T) {
	n := ackNode(t, func(string, int) int { return 204 })
	c, _ := newClient(t, n.URL)
	hs := make([]string, 100)
	for i := range hs {
		hs[i] = fmt.Sprintf("%d:%s", i, strings.Repeat("h", 1500)) // about 150 KB in all
	}
	res, err := c.Settle(ctxT(t), "orders", Ack, hs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != 204 {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	reqs := n.requests()
	if len(reqs) != 3 {
		t.Errorf("%d requests, want 3", len(reqs))
	}
	total := 0
	for _, r := range reqs {
		if len(r.Body) > 64<<10 {
			t.Errorf("body of %d bytes", len(r.Body))
		}
		total += len(batchHandles(t, r))
	}
	if total != 100 {
		t.Errorf("%d handles sent", total)
	}
}

func TestSettleBudgetExhausted(t *testing.T) {
	n := ackNode(t, func(string, int) int { return 503 })
	c, sl := newClient(t, n.URL, func(c *Config) {
		c.Retry.Initial, c.Retry.Max, c.Retry.Budget = 100*time.Millisecond, time.Second, 10*time.Second
	})
	start := time.Now()
	res, err := c.Settle(ctxT(t), "orders", Ack, handles(3))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("an instant Sleep still took %v", time.Since(start))
	}
	for _, r := range res {
		if r.Status != 503 || r.Err != "status 503" || r.Retries != len(sl.calls()) {
			t.Errorf("result %+v after %d backoffs", r, len(sl.calls()))
		}
	}
	// At least ~10 s of backoff asked for (no more than the budget), then it gives up.
	if tot := sl.total(); tot > 10*time.Second || tot < 5*time.Second {
		t.Errorf("slept %v in all, budget 10s", tot)
	}
	if got, want := len(n.requests()), len(sl.calls())+1; got != want {
		t.Errorf("%d requests for %d backoffs", got, len(sl.calls()))
	}
	// The single-handle wrapper reports the last status.
	if err := c.Ack(ctxT(t), "orders", "x"); StatusOf(err) != 503 {
		t.Errorf("Ack: %v", err)
	}
}

func TestSettleFatal(t *testing.T) {
	for _, status := range []int{401, 403, 404} {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
			writeJSON(w, status, `{"error":"denied"}`)
		})
		c, sl := newClient(t, n.URL, func(c *Config) { c.User, c.Password = "app", "wrong" })
		res, err := c.Settle(ctxT(t), "orders", Ack, handles(450))
		var e *Error
		if !errors.As(err, &e) || e.Status != status || e.Op != OpAck || e.Message != "denied" {
			t.Errorf("%d: err %#v", status, err)
		}
		// One request, never retried: a loop of 401s locks the user out.
		if len(n.requests()) != 1 || len(sl.calls()) != 0 {
			t.Errorf("%d: %d requests, %d backoffs", status, len(n.requests()), len(sl.calls()))
		}
		if len(res) != 450 || res[449].Status != status || res[0].Err != "denied" {
			t.Errorf("%d: results %d, last %+v", status, len(res), res[len(res)-1])
		}
		if err := c.Ack(ctxT(t), "orders", "h"); StatusOf(err) != status {
			t.Errorf("%d: Ack: %v", status, err)
		}
	}
}

func TestSettleConnectionErrorRetried(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		if i < 2 {
			hangUp(t, w)
			return
		}
		w.WriteHeader(204)
	})
	c, _ := newClient(t, n.URL)
	res, err := c.Settle(ctxT(t), "orders", Ack, []string{"a"})
	if err != nil || res[0].Status != 204 || res[0].Retries != 2 {
		t.Errorf("%+v, %v", res, err)
	}
}

func TestSettleWrappers(t *testing.T) {
	n := ackNode(t, func(h string, attempt int) int {
		if h == "gone" {
			return 410
		}
		if h == "bad" {
			return 400
		}
		return 204
	})
	c, _ := newClient(t, n.URL)
	ctx := ctxT(t)
	odd := "4:0:33 27+&=?/%"
	if err := c.Ack(ctx, "orders", odd); err != nil {
		t.Errorf("ack: %v", err)
	}
	if err := c.Extend(ctx, "orders", odd); err != nil {
		t.Errorf("extend: %v", err)
	}
	if err := c.Nack(ctx, "orders", odd); err != nil {
		t.Errorf("nack: %v", err)
	}
	err := c.Ack(ctx, "orders", "gone")
	if !IsGone(err) || err.Error() != "ack: 410 status 410" {
		t.Errorf("ack gone: %v", err)
	}
	if err := c.Extend(ctx, "orders", "bad"); StatusOf(err) != 400 || !strings.HasPrefix(err.Error(), "extend: ") {
		t.Errorf("extend malformed: %v", err)
	}
	reqs := n.requests()
	wantExtend := []string{"", "true", "0"}
	for i, r := range reqs[:3] {
		if r.Query.Get("receipt_handle") != odd || r.Query.Get("extend") != wantExtend[i] || r.Query.Has("extend") != (i > 0) {
			t.Errorf("request %d: query %v", i, r.Query)
		}
	}
	if len(reqs) != 5 {
		t.Errorf("%d requests, want 5 (nothing retried)", len(reqs))
	}
}

// The raw query percent-encodes the handle, so it survives any character.
func TestSettleEncodesHandle(t *testing.T) {
	var raw string
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		raw = r.URL.RawQuery
		w.WriteHeader(204)
	})
	c, _ := newClient(t, n.URL)
	if err := c.Ack(ctxT(t), "orders", "a+b&c=d e"); err != nil {
		t.Fatal(err)
	}
	if raw != "receipt_handle=a%2Bb%26c%3Dd+e" {
		t.Errorf("raw query %q", raw)
	}
}

func TestSettleContext(t *testing.T) {
	n := ackNode(t, func(string, int) int { return 503 })
	c, sl := newClient(t, n.URL)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := c.Settle(ctx, "orders", Ack, handles(3))
	if !errors.Is(err, context.Canceled) || len(res) != 3 || len(n.requests()) != 0 {
		t.Errorf("cancelled before: %v, %+v, %d requests", err, res, len(n.requests()))
	}
	if err := c.Ack(ctx, "orders", "h"); !errors.Is(err, context.Canceled) {
		t.Errorf("Ack cancelled before: %v", err)
	}

	// Cancelled while backing off: what was answered stands, and no error.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	sl.onCall = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	res, err = c.Settle(ctx, "orders", Ack, handles(3))
	if err != nil || res[0].Status != 503 || len(n.requests()) != 3 {
		t.Errorf("cancelled while retrying: %v, %+v, %d requests", err, res, len(n.requests()))
	}
}

func TestSettleEmptyAndUnknownAction(t *testing.T) {
	c, _ := newClient(t, "http://127.0.0.1:1")
	if res, err := c.Settle(ctxT(t), "orders", Ack, nil); err != nil || len(res) != 0 {
		t.Errorf("no handles: %v, %v", res, err)
	}
	if _, err := c.Settle(ctxT(t), "orders", Action(9), []string{"h"}); err == nil {
		t.Errorf("unknown action accepted")
	}
	if Ack.String() != "ack" || Extend.String() != "extend" || Nack.String() != "nack" {
		t.Errorf("action names")
	}
}

func TestSettleUnreadableBatchAnswer(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		writeJSON(w, 200, `{"results":[{"status":204}]}`)
	})
	c, sl := newClient(t, n.URL)
	res, err := c.Settle(ctxT(t), "orders", Ack, handles(2))
	if err != nil || res[0].Status != 0 || !strings.Contains(res[1].Err, "1 results for 2 handles") {
		t.Errorf("%+v, %v", res, err)
	}
	if len(n.requests()) != 1 || len(sl.calls()) != 0 {
		t.Errorf("retried a batch that may have landed")
	}
}

// A result whose status no HTTP answer has (none, 0, -1, 1000) tells nothing of its
// handle: unconfirmed (status 0) and said so, not retried; the others stand. It was
// kept as it came, a failure with an empty reason ("failed (-1 )", "no answer ()").
func TestSettleBatchResultWithoutAStatus(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		writeJSON(w, 200, `{"results":[{},{"status":-1},{"status":204},{"status":1000,"error":"x"}]}`)
	})
	c, sl := newClient(t, n.URL)
	res, err := c.Settle(ctxT(t), "orders", Ack, handles(4))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status int
		err    string
	}{
		{0, "unreadable batch answer: no status for this handle"},
		{0, "unreadable batch answer: status -1 for this handle"},
		{204, ""},
		{0, "unreadable batch answer: status 1000 for this handle"},
	}
	for k, w := range want {
		if res[k].Status != w.status || res[k].Err != w.err || res[k].Unconfirmed() != (w.status == 0) {
			t.Errorf("result %d: %+v, want status %d, error %q", k, res[k], w.status, w.err)
		}
	}
	if len(n.requests()) != 1 || len(sl.calls()) != 0 {
		t.Errorf("retried a batch that may have landed")
	}
}

// A node that never answered anything is a wrong address, not a node to wait out for
// the whole budget: Settle gives up after a few attempts and says so as a whole.
func TestSettleGivesUpSoonOnANodeNeverReached(t *testing.T) {
	c, sl := newClient(t, "http://127.0.0.1:1")
	res, err := c.Settle(ctxT(t), "orders", Ack, []string{"0:0:1", "0:0:2"})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err %v, want the connection error", err)
	}
	if len(res) != 2 || res[0].Status != 0 {
		t.Errorf("results %+v, want one per handle, unanswered", res)
	}
	if got := len(sl.calls()); got != DefaultBoundedAttempts-1 {
		t.Errorf("%d backoffs, want %d", got, DefaultBoundedAttempts-1)
	}
}
