package devbroker

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Point 12: an older node ignores max and answers the single-message shape, with or
// without X-Narad-Client.
func TestLegacyIgnoresMax(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.b.SetLegacy(true)
	for i := 0; i < 3; i++ {
		h.mustProduce("orders", "key=k", "m")
	}
	for _, r := range []resp{h.batch("orders", "max=10"), h.consume("orders", "max=10"), h.consume("orders", "max=junk")} {
		m := one(t, r)
		if strings.HasPrefix(string(r.body), `{"messages"`) || m.ReceiptHandle == "" {
			t.Fatalf("legacy batch: %v", r)
		}
	}
	// max with offset is a plain replay.
	if m := one(t, h.batch("orders", "max=10&partition="+strconv.Itoa(int(fnv1a("k")%3))+"&offset=0")); m.ReceiptHandle != "" {
		t.Fatalf("legacy replay: %+v", m)
	}
	// Switching back restores v3.1.
	h.b.SetLegacy(false)
	if _, _, err := h.b.Produce("orders", "", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if r := h.batch("orders", "max=10"); !strings.HasPrefix(string(r.body), `{"messages":[`) {
		t.Fatalf("after SetLegacy(false): %v", r)
	}
}

// Point 12: a batch ack answers 400 "receipt_handle required"; single acks still work.
func TestLegacyBatchAck(t *testing.T) {
	h := start(t, Config{Legacy: true, Topics: []TopicSpec{{Name: "orders"}}})
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	wantError(t, h.batchAck("orders", "", m.ReceiptHandle), 400, "receipt_handle required")
	wantError(t, h.do("POST", "/v1/topics/orders/ack?receipt_handle=", nil), 400, "receipt_handle required")
	if h.stats("orders").InFlight() != 1 {
		t.Fatal("a refused batch ack settled the message")
	}
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "true"), 204)
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 410, textGone)
}

// Point 12: an older node clamps wait silently.
func TestLegacyNoClampHeader(t *testing.T) {
	t.Parallel()
	h := start(t, Config{Legacy: true, MaxConsumeWait: 200 * time.Millisecond, Topics: []TopicSpec{{Name: "orders"}}})
	start := time.Now()
	r := h.consume("orders", "wait=1m")
	wantEmpty(t, r, 204)
	if r.header.Get("X-Narad-Wait-Clamped") != "" {
		t.Fatal("legacy node sent the clamp header")
	}
	if el := time.Since(start); el < 200*time.Millisecond || el > 5*time.Second {
		t.Fatalf("clamped wait answered after %v", el)
	}
}

// Point 12: no key_encoding: a non-UTF-8 key is Go-quoted, which is not valid JSON; and a
// message produced without a key gets an invented key-<n>.
func TestLegacyKeys(t *testing.T) {
	h := start(t, Config{Legacy: true, Topics: []TopicSpec{{Name: "orders"}}})
	h.mustProduce("orders", "partition=0&key=%FF%01a", "m")
	r := h.consume("orders", "partition=0")
	if !strings.Contains(string(r.body), `,"key":"\xff\x01a","payload":"m",`) || strings.Contains(string(r.body), "key_encoding") {
		t.Fatalf("legacy key: %s", r.body)
	}
	if json.Valid(r.body) {
		t.Fatal("the legacy body is valid JSON; an older node's was not")
	}
	h.mustProduce("orders", "partition=1", "a")
	h.mustProduce("orders", "partition=1", "b")
	h.mustProduce("orders", "partition=1&key=mine", "c")
	for _, want := range []string{"key-1", "key-2", "mine"} {
		m := one(t, h.consume("orders", "partition=1"))
		if m.Key == nil || *m.Key != want {
			t.Fatalf("key %v, want %q", m.Key, want)
		}
	}
	// Valid UTF-8 keys are plain JSON strings as before.
	h.mustProduce("orders", "partition=2&key=caf%C3%A9", "m")
	if r := h.consume("orders", "partition=2"); !json.Valid(r.body) {
		t.Fatalf("legacy UTF-8 key: %s", r.body)
	}
}

// Point 12: an ack past a full acked-ahead window is refused with 503 (and no effect)
// until the oldest unacked message is settled.
func TestLegacyAckedAheadRefused(t *testing.T) {
	h := startTopic(t, TopicSpec{MaxAckedAheadPerPartition: 2})
	h.b.SetLegacy(true)
	for i := 0; i < 4; i++ {
		h.mustProduce("orders", "partition=0", "m")
	}
	byOffset := map[int64]string{}
	for i := 0; i < 4; i++ {
		m := one(t, h.consume("orders", ""))
		byOffset[m.Offset] = m.ReceiptHandle
	}
	wantEmpty(t, h.ack("orders", byOffset[1], ""), 204)
	wantEmpty(t, h.ack("orders", byOffset[2], ""), 204)
	wantError(t, h.ack("orders", byOffset[3], ""), 503, "acked-ahead window is full: retry after the oldest unacked message is settled")
	if st := h.stats("orders").Partitions[0]; st.InFlight != 2 || st.AckedAhead != 2 {
		t.Fatalf("after the refused ack: %+v", st)
	}
	wantEmpty(t, h.ack("orders", byOffset[0], ""), 204)
	wantEmpty(t, h.ack("orders", byOffset[3], ""), 204) // the retry goes through
	if st := h.stats("orders").Partitions[0]; st.Acked != 4 || st.AckedAhead != 0 {
		t.Fatalf("after the retry: %+v", st)
	}
}

// An older node's partition statistics have no status (v3.1 added it).
func TestLegacyPartitionStatsHaveNoStatus(t *testing.T) {
	h := start(t, Config{Legacy: true, Topics: []TopicSpec{{Name: "orders"}}})
	r := h.do("GET", "/v1/topics/orders", nil)
	if r.status != 200 || strings.Contains(string(r.body), `"status"`) || !strings.Contains(string(r.body), `"owner_node":"narad-0"}`) {
		t.Fatalf("legacy info: %v", r)
	}
}
