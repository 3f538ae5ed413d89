package devbroker

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// Point 2: 202 with an empty body; the message is there.
func TestProduceAccepted(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	r := h.produce("orders", "", "hello")
	wantEmpty(t, r, 202)
	if ct := r.header.Get("Content-Type"); ct != "" {
		t.Fatalf("202 carries Content-Type %q", ct)
	}
	if n := h.stats("orders").Messages(); n != 1 {
		t.Fatalf("%d messages after one produce", n)
	}
	if h.b.Requests(OpProduce) != 1 {
		t.Fatalf("Requests(produce) = %d", h.b.Requests(OpProduce))
	}
}

// Point 2: 1 byte to 1 MiB; empty is 400, over is 413, with or without Content-Length.
func TestProduceSizes(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	wantEmpty(t, h.produce("orders", "", "x"), 202)
	wantEmpty(t, h.do("POST", "/v1/topics/orders/produce", bytes.Repeat([]byte("a"), MaxMessageBytes)), 202)
	wantError(t, h.produce("orders", "", ""), 400, "message required")
	wantError(t, h.do("POST", "/v1/topics/orders/produce", nil), 400, "message required")
	over := bytes.Repeat([]byte("a"), MaxMessageBytes+1)
	wantError(t, h.do("POST", "/v1/topics/orders/produce", over), 413, "message over 1048576 bytes")

	// Chunked: no Content-Length, so the size is only known while reading.
	req, _ := http.NewRequest("POST", h.b.URL()+"/v1/topics/orders/produce", io.MultiReader(bytes.NewReader(over)))
	req.ContentLength = -1
	res, err := h.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantError(t, resp{res.StatusCode, res.Header, body}, 413, "message over 1048576 bytes")

	if n := h.stats("orders").Messages(); n != 2 {
		t.Fatalf("%d messages stored, want the 2 accepted ones", n)
	}
}

// fnv1a is FNV-1a 32 written out, so the test does not just repeat the implementation.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Point 2: a key goes to FNV-1a(key) mod partitions, always the same one.
func TestProduceKeyPartition(t *testing.T) {
	h := startTopic(t, TopicSpec{Partitions: 7})
	want := make([]int64, 7)
	for i := 0; i < 40; i++ {
		key := fmt.Sprintf("customer-%d", i%10)
		p := int(fnv1a(key) % 7)
		if got := PartitionForKey(key, 7); got != p {
			t.Fatalf("PartitionForKey(%q) = %d, want %d", key, got, p)
		}
		h.mustProduce("orders", "key="+key, "m")
		want[p]++
	}
	for _, p := range h.stats("orders").Partitions {
		if p.NextOffset != want[p.Index] {
			t.Fatalf("partition %d holds %d messages, want %d", p.Index, p.NextOffset, want[p.Index])
		}
	}
	// And a consume from that partition finds the keyed message.
	h2 := startTopic(t, TopicSpec{})
	h2.mustProduce("orders", "key=customer-42", "m")
	m := one(t, h2.consume("orders", fmt.Sprintf("partition=%d", fnv1a("customer-42")%3)))
	if m.Key == nil || *m.Key != "customer-42" {
		t.Fatalf("consumed %+v", m)
	}
}

// Point 2: without a key, round robin.
func TestProduceRoundRobin(t *testing.T) {
	h := startTopic(t, TopicSpec{Partitions: 4})
	for i := 0; i < 12; i++ {
		h.mustProduce("orders", "", "m")
	}
	for _, p := range h.stats("orders").Partitions {
		if p.NextOffset != 3 {
			t.Fatalf("partition %d holds %d messages, want 3 each", p.Index, p.NextOffset)
		}
	}
}

// Point 2: partition pins, over a key; a bad one is 400 and stores nothing.
func TestProducePartitionPin(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	key := "customer-42"
	pin := (int(fnv1a(key)%3) + 1) % 3
	h.mustProduce("orders", fmt.Sprintf("partition=%d&key=%s", pin, key), "m")
	if n := h.stats("orders").Partitions[pin].NextOffset; n != 1 {
		t.Fatalf("pinned partition %d holds %d", pin, n)
	}
	for _, q := range []string{"partition=3", "partition=-1", "partition=x", "partition=1.0"} {
		wantError(t, h.produce("orders", q, "m"), 400, "partition must be an integer from 0 to 2")
	}
	if n := h.stats("orders").Messages(); n != 1 {
		t.Fatalf("bad produces stored messages: %d", n)
	}
}

func TestProduceUnknownTopic(t *testing.T) {
	h := start(t, Config{})
	wantError(t, h.produce("nope", "", "m"), 404, `topic "nope" not found`)
	if h.b.Requests(OpProduce) != 1 {
		t.Fatal("a 404 produce was not counted")
	}
}

// The Go API produces like HTTP does.
func TestProduceGoAPI(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	p, off, err := h.b.Produce("orders", "customer-42", []byte(`{"a":1}`))
	if err != nil || p != int(fnv1a("customer-42")%3) || off != 0 {
		t.Fatalf("Produce = %d, %d, %v", p, off, err)
	}
	m := one(t, h.consume("orders", ""))
	if string(m.Payload) != `{"a":1}` || *m.Key != "customer-42" {
		t.Fatalf("consumed %+v", m)
	}
	if _, _, err := h.b.Produce("orders", "", nil); err == nil {
		t.Fatal("empty payload accepted")
	}
	if _, _, err := h.b.Produce("nope", "", []byte("x")); err == nil {
		t.Fatal("unknown topic accepted")
	}
}
