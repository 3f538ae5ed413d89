package devbroker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A lease hides the message for visibility_timeout_ms; expiry makes it
// available again, even with no request touching the topic, and the old handle is 410.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	// Long enough that the second consume, right after the first, comes inside the
	// lease on a loaded machine too.
	h := startTopic(t, TopicSpec{VisibilityTimeout: 2 * time.Second})
	h.mustProduce("orders", "", "m")
	start := time.Now()
	first := one(t, h.consume("orders", ""))
	wantEmpty(t, h.consume("orders", ""), 204)
	// The lease runs out on its own: Stats sees it without a consume in between.
	eventually(t, 5*time.Second, "the lease to run out", func() bool { return h.stats("orders").Available() == 1 })
	if el := time.Since(start); el < 2*time.Second {
		t.Fatalf("lease ran out after %v, before 2s", el)
	}
	if st := h.stats("orders"); st.Lapsed() != 1 || st.Delivered() != 1 {
		t.Fatalf("after one lease ran out: lapsed %d, delivered %d; want 1 and 1", st.Lapsed(), st.Delivered())
	}
	wantError(t, h.ack("orders", first.ReceiptHandle, ""), 410, textGone)
	wantError(t, h.ack("orders", first.ReceiptHandle, "true"), 410, textGone)
	second := one(t, h.consume("orders", ""))
	if second.ReceiptHandle == first.ReceiptHandle {
		t.Fatal("redelivery reused the handle")
	}
	wantEmpty(t, h.ack("orders", second.ReceiptHandle, ""), 204)
	// A settled lease never counts as lapsed, however long ago it was taken.
	if st := h.stats("orders"); st.Lapsed() != 1 || st.Delivered() != 2 {
		t.Fatalf("after the redelivery was acked: lapsed %d, delivered %d; want 1 and 2", st.Lapsed(), st.Delivered())
	}
}

// The topic's visibility has millisecond precision, as info reports it.
func TestLeaseMillisecondPrecision(t *testing.T) {
	t.Parallel()
	h := start(t, Config{})
	r := h.do("POST", "/v1/topics", []byte(`{"name":"orders","visibility_timeout_ms":750}`))
	if r.status != 201 || !strings.Contains(string(r.body), `"visibility_timeout_ms":750,`) {
		t.Fatalf("create: %v", r)
	}
	h.mustProduce("orders", "", "m")
	start := time.Now()
	one(t, h.consume("orders", ""))
	one(t, h.consume("orders", "wait=10s"))
	if el := time.Since(start); el < 750*time.Millisecond || el > 6*time.Second {
		t.Fatalf("a 750ms lease ran out after %v", el)
	}
}

// An extend renews a full visibility timeout from now, and the same handle stays
// valid. The broker's clock is moved by hand, so the check always runs.
func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{{Name: "orders", VisibilityTimeout: 800 * time.Millisecond}}})
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	clock.Advance(400 * time.Millisecond)
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "true"), 204)
	// Past the original end (800ms after the consume), the lease still holds...
	clock.Advance(500 * time.Millisecond)
	wantEmpty(t, h.consume("orders", ""), 204)
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "1"), 204)
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 410, textGone)
	if st := h.stats("orders"); st.Acked() != 1 || st.InFlight() != 0 {
		t.Fatalf("after ack: %+v", st.Partitions)
	}
	// ...and an extend that came too late is 410: the lease ran out 800ms after it.
	h.mustProduce("orders", "", "n")
	n := one(t, h.consume("orders", ""))
	wantEmpty(t, h.ack("orders", n.ReceiptHandle, "true"), 204)
	clock.Advance(801 * time.Millisecond)
	wantError(t, h.ack("orders", n.ReceiptHandle, "true"), 410, textGone)
}

// Handles carry a random 64-bit nonce: a fresh one per delivery, not guessable
// from another, and a handle from a previous broker never matches.
func TestHandleNonce(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "partition=0", "m")
	seen := map[string]bool{}
	var nonces []uint64
	var last msg
	for i := 0; i < 20; i++ {
		last = one(t, h.consume("orders", ""))
		if seen[last.ReceiptHandle] {
			t.Fatalf("handle %q given twice", last.ReceiptHandle)
		}
		seen[last.ReceiptHandle] = true
		parts := strings.Split(last.ReceiptHandle, ":")
		n, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || parts[0] != "0" || parts[1] != "0" {
			t.Fatalf("handle %q", last.ReceiptHandle)
		}
		nonces = append(nonces, n)
		if i < 19 {
			wantEmpty(t, h.ack("orders", last.ReceiptHandle, "0"), 204)
		}
	}
	// Not a counter: neighbours of the live nonce do not match it.
	for _, d := range []uint64{1, ^uint64(0)} {
		wantError(t, h.ack("orders", fmt.Sprintf("0:0:%d", nonces[19]+d), ""), 410, textGone)
	}
	high := 0
	for _, n := range nonces {
		if n > 1<<40 {
			high++
		}
	}
	if high < 15 {
		t.Fatalf("nonces do not look random over 64 bits: %v", nonces)
	}
	// A restart (a new broker with the same message in the same place) does not honour it.
	h2 := startTopic(t, TopicSpec{})
	h2.mustProduce("orders", "partition=0", "m")
	fresh := one(t, h2.consume("orders", ""))
	wantError(t, h2.ack("orders", last.ReceiptHandle, ""), 410, textGone)
	wantEmpty(t, h2.ack("orders", fresh.ReceiptHandle, ""), 204)
}
