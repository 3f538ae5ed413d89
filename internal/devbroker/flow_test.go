package devbroker

import (
	"testing"
	"time"
)

// Point 6: at max_in_flight_per_partition a partition hands out nothing more (204) until
// an ack, and a batch counts each message.
func TestFlowMaxInFlight(t *testing.T) {
	h := startTopic(t, TopicSpec{MaxInFlightPerPartition: 2})
	for i := 0; i < 4; i++ {
		h.mustProduce("orders", "partition=0", "m")
	}
	a := one(t, h.consume("orders", ""))
	one(t, h.consume("orders", ""))
	wantEmpty(t, h.consume("orders", ""), 204)
	wantEmpty(t, h.batch("orders", "max=10"), 204)
	wantEmpty(t, h.ack("orders", a.ReceiptHandle, ""), 204)
	if ms := many(t, h.batch("orders", "max=10")); len(ms) != 1 {
		t.Fatalf("after one ack a batch got %d, want 1", len(ms))
	}
	if st := h.stats("orders").Partitions[0]; st.InFlight != 2 || st.Available != 1 {
		t.Fatalf("partition 0: %+v", st)
	}

	h2 := startTopic(t, TopicSpec{MaxInFlightPerPartition: 3})
	for i := 0; i < 10; i++ {
		h2.mustProduce("orders", "partition=1", "m")
	}
	if ms := many(t, h2.batch("orders", "max=10")); len(ms) != 3 {
		t.Fatalf("batch at max_in_flight 3 got %d", len(ms))
	}
}

// Point 6: a consumer waiting at the in-flight limit is woken by the ack that frees room.
func TestFlowMaxInFlightWakesOnAck(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{MaxInFlightPerPartition: 1})
	h.mustProduce("orders", "partition=0", "a")
	h.mustProduce("orders", "partition=0", "b")
	first := one(t, h.consume("orders", ""))
	start := time.Now()
	got := async(func() resp { return h.consume("orders", "wait=10s") })
	h.waitForWaiters(1)
	wantEmpty(t, h.ack("orders", first.ReceiptHandle, ""), 204)
	if m := one(t, <-got); string(m.Payload) != `"b"` {
		t.Fatalf("got %+v", m)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("woken after %v", el)
	}
}

// Point 6: with max_acked_ahead_per_partition acks held past the oldest unacked message,
// only that message is handed out; acks of messages already held are still accepted.
func TestFlowMaxAckedAhead(t *testing.T) {
	h := startTopic(t, TopicSpec{MaxAckedAheadPerPartition: 2})
	for i := 0; i < 6; i++ {
		h.mustProduce("orders", "partition=0", "m")
	}
	ms := many(t, h.batch("orders", "max=6"))
	if len(ms) != 6 {
		t.Fatalf("got %d", len(ms))
	}
	byOffset := map[int64]string{}
	for _, m := range ms {
		byOffset[m.Offset] = m.ReceiptHandle
	}
	wantEmpty(t, h.ack("orders", byOffset[1], ""), 204)
	wantEmpty(t, h.ack("orders", byOffset[2], ""), 204) // window full: 2 acks past offset 0
	wantEmpty(t, h.ack("orders", byOffset[0], "0"), 204)
	wantEmpty(t, h.ack("orders", byOffset[4], "0"), 204)
	if st := h.stats("orders").Partitions[0]; st.AckedAhead != 2 || st.Available != 2 || st.OldestUnacked != 0 {
		t.Fatalf("partition 0: %+v", st)
	}
	// Offsets 0 and 4 are available, but only the oldest unacked goes out.
	oldest := one(t, h.consume("orders", ""))
	if oldest.Offset != 0 {
		t.Fatalf("handed out offset %d with a full acked-ahead window", oldest.Offset)
	}
	wantEmpty(t, h.consume("orders", ""), 204)
	wantEmpty(t, h.batch("orders", "max=10"), 204)
	// An ack of a message already held is accepted past the window.
	wantEmpty(t, h.ack("orders", byOffset[3], ""), 204)
	if st := h.stats("orders").Partitions[0]; st.AckedAhead != 3 {
		t.Fatalf("partition 0: %+v", st)
	}
	// Acking the oldest drains the window and offset 4 goes out again.
	wantEmpty(t, h.ack("orders", oldest.ReceiptHandle, ""), 204)
	if st := h.stats("orders").Partitions[0]; st.AckedAhead != 0 || st.OldestUnacked != 4 {
		t.Fatalf("partition 0 after acking the oldest: %+v", st)
	}
	if m := one(t, h.consume("orders", "")); m.Offset != 4 {
		t.Fatalf("got offset %d", m.Offset)
	}
}

// Point 6: concurrent consumes per identity: 429 past the limit; a batch counts as max;
// a long poll counts while it waits.
func TestFlowConsumesPerIdentity(t *testing.T) {
	t.Parallel()
	h := start(t, Config{MaxConsumesPerIdentity: 3, Topics: []TopicSpec{{Name: "orders"}}})
	const tooMany = "too many concurrent consumes: at most 3 per identity"
	w1 := async(func() resp { return h.consume("orders", "wait=10s") })
	w2 := async(func() resp { return h.consume("orders", "wait=10s") })
	h.waitForWaiters(2)
	refused := h.batch("orders", "max=2")
	wantError(t, refused, 429, tooMany)
	if ra := refused.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1: a slot comes back when a consume ends", ra)
	}
	wantEmpty(t, h.consume("orders", ""), 204) // the third unit is free
	// Wake both waiters; then the units come back.
	h.mustProduce("orders", "", "a")
	h.mustProduce("orders", "", "b")
	for _, w := range []<-chan resp{w1, w2} {
		one(t, <-w)
	}
	// A batch holds max units while it long-polls.
	b := async(func() resp { return h.batch("orders", "max=3&wait=10s") })
	h.waitForWaiters(1)
	wantError(t, h.consume("orders", ""), 429, tooMany)
	h.mustProduce("orders", "", "c")
	if ms := many(t, <-b); len(ms) != 1 {
		t.Fatalf("batch got %d", len(ms))
	}
	// A lone batch larger than the limit counts as the whole limit, so it goes.
	wantEmpty(t, h.batch("orders", "max=100"), 204)
	if h.stats("orders").InFlight() != 3 {
		t.Fatalf("in flight %d", h.stats("orders").InFlight())
	}
}

// Point 6: the limit is per identity: one user at the limit does not stop another.
func TestFlowConsumesPerUser(t *testing.T) {
	t.Parallel()
	h := start(t, Config{MaxConsumesPerIdentity: 1, Topics: []TopicSpec{{Name: "orders"}},
		Users: []User{
			{Name: "a", Password: "pa", Grants: []Grant{{Action: "consume", Patterns: []string{"*"}}}},
			{Name: "b", Password: "pb", Grants: []Grant{{Action: "admin"}}},
		}})
	h.user, h.pass = "a", "pa"
	w := async(func() resp { return h.consume("orders", "wait=10s") })
	h.waitForWaiters(1)
	wantError(t, h.consume("orders", ""), 429, "too many concurrent consumes: at most 1 per identity")
	h.user, h.pass = "b", "pb"
	wantEmpty(t, h.consume("orders", ""), 204)
	h.mustProduce("orders", "", "m")
	one(t, <-w)
}
