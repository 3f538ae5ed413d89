package devbroker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var handleRE = regexp.MustCompile(`^[0-9]+:[0-9]+:[0-9]+$`)

// Point 3: a single consume answers the seed's shape, byte for byte, and leases it.
func TestConsumeSingle(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "key=customer-42", `{"order_id": "ord_123", "amount": 4999}`)
	r := h.consume("orders", "wait=10s")
	m := one(t, r)
	want := fmt.Sprintf(`{"topic":"orders","partition":%d,"offset":0,"key":"customer-42",`+
		`"payload":{"order_id": "ord_123", "amount": 4999},"timestamp":%d,"receipt_handle":"%s"}`+"\n",
		fnv1a("customer-42")%3, m.Timestamp, m.ReceiptHandle)
	wantBody(t, r, 200, want)
	if now := time.Now().Unix(); m.Timestamp < now-60 || m.Timestamp > now+1 {
		t.Fatalf("timestamp %d is not unix seconds near %d", m.Timestamp, now)
	}
	if !handleRE.MatchString(m.ReceiptHandle) || !strings.HasPrefix(m.ReceiptHandle, fmt.Sprintf("%d:0:", m.Partition)) {
		t.Fatalf("handle %q", m.ReceiptHandle)
	}
	if r.header.Get("X-Narad-Wait-Clamped") != "" {
		t.Fatal("clamp header on a wait within the cap")
	}
	st := h.stats("orders")
	if st.InFlight() != 1 || st.Available() != 0 {
		t.Fatalf("after consume: %+v", st.Partitions)
	}
	// Leased: nobody else gets it.
	wantEmpty(t, h.consume("orders", ""), 204)
}

// Point 3: without wait the answer is immediate; with wait it comes at wait.
func TestConsumeEmpty(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{})
	start := time.Now()
	wantEmpty(t, h.consume("orders", ""), 204)
	wantEmpty(t, h.consume("orders", "wait=0"), 204)
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("an immediate consume took %v", el)
	}
	start = time.Now()
	r := h.consume("orders", "wait=300ms")
	wantEmpty(t, r, 204)
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("wait=300ms answered after %v", el)
	}
}

// Point 3: a long poll is woken at once by a produce.
func TestConsumeWokenByProduce(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{})
	start := time.Now()
	got := async(func() resp { return h.consume("orders", "wait=10s") })
	h.waitForWaiters(1)
	h.mustProduce("orders", "", "wake")
	m := one(t, <-got)
	if string(m.Payload) != `"wake"` {
		t.Fatalf("got %+v", m)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("woken after %v", el)
	}
}

// Point 3: woken by a nack, with a new handle.
func TestConsumeWokenByNack(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	first := one(t, h.consume("orders", ""))
	start := time.Now()
	got := async(func() resp { return h.consume("orders", "wait=10s") })
	h.waitForWaiters(1)
	wantEmpty(t, h.ack("orders", first.ReceiptHandle, "0"), 204)
	second := one(t, <-got)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("woken after %v", el)
	}
	if second.Offset != first.Offset || second.Partition != first.Partition || second.ReceiptHandle == first.ReceiptHandle {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

// Woken by a lease expiry, never before the lease ends.
func TestConsumeWokenByExpiry(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{VisibilityTimeout: 500 * time.Millisecond})
	h.mustProduce("orders", "", "m")
	start := time.Now()
	first := one(t, h.consume("orders", ""))
	second := one(t, h.consume("orders", "wait=10s"))
	el := time.Since(start)
	if el < 500*time.Millisecond {
		t.Fatalf("redelivered after %v, before the 500ms lease ran out", el)
	}
	if el > 5*time.Second {
		t.Fatalf("redelivered only after %v", el)
	}
	if second.Offset != first.Offset || second.ReceiptHandle == first.ReceiptHandle {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

// Point 3: a bad wait is 400; "1" has no unit.
func TestConsumeBadWait(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	for _, w := range []string{"1", "10", "abc", "-1s", "1x"} {
		wantError(t, h.consume("orders", "wait="+w), 400, fmt.Sprintf("wait %q must be a duration with a unit, such as 500ms or 10s", w))
	}
	if h.stats("orders").InFlight() != 0 {
		t.Fatal("a refused consume leased a message")
	}
}

// Point 3: wait is capped, with X-Narad-Wait-Clamped.
func TestConsumeWaitClamped(t *testing.T) {
	t.Parallel()
	h := start(t, Config{MaxConsumeWait: 300 * time.Millisecond, Topics: []TopicSpec{{Name: "orders"}}})
	start := time.Now()
	r := h.consume("orders", "wait=1h")
	el := time.Since(start)
	wantEmpty(t, r, 204)
	if got := r.header.Get("X-Narad-Wait-Clamped"); got != "300ms" {
		t.Fatalf("X-Narad-Wait-Clamped %q, want 300ms", got)
	}
	if el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("clamped wait answered after %v", el)
	}
	// A clamped request that finds a message carries the header too.
	h.mustProduce("orders", "", "m")
	r = h.batch("orders", "wait=20s&max=5")
	if len(many(t, r)) != 1 || r.header.Get("X-Narad-Wait-Clamped") != "300ms" {
		t.Fatalf("batch %v %v", r, r.header)
	}
	if r := h.consume("orders", "wait=300ms"); r.header.Get("X-Narad-Wait-Clamped") != "" {
		t.Fatal("clamp header on a wait at the cap")
	}
	// The default cap is 10s.
	h2 := startTopic(t, TopicSpec{})
	h2.mustProduce("orders", "", "m")
	if r := h2.consume("orders", "wait=11s"); r.status != 200 || r.header.Get("X-Narad-Wait-Clamped") != "10s" {
		t.Fatalf("default cap: %v %v", r, r.header)
	}
}

// Point 3: partition=N takes only from N; a bad one is 400.
func TestConsumePartition(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for p := 0; p < 3; p++ {
		h.mustProduce("orders", fmt.Sprintf("partition=%d", p), fmt.Sprint(p))
	}
	m := one(t, h.consume("orders", "partition=2"))
	if m.Partition != 2 || string(m.Payload) != "2" {
		t.Fatalf("got %+v", m)
	}
	wantEmpty(t, h.consume("orders", "partition=2"), 204)
	for _, q := range []string{"partition=3", "partition=-1", "partition=a"} {
		wantError(t, h.consume("orders", q), 400, "partition must be an integer from 0 to 2")
	}
	wantError(t, h.consume("nope", ""), 404, `topic "nope" not found`)
}

// Point 3: a batch answers {"messages":[…]} of single-consume objects, each leased.
func TestConsumeBatch(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for i := 0; i < 5; i++ {
		h.mustProduce("orders", "key=k"+fmt.Sprint(i), fmt.Sprintf(`{"n":%d}`, i))
	}
	r := h.batch("orders", "max=10")
	ms := many(t, r)
	if len(ms) != 5 {
		t.Fatalf("got %d messages, want the 5 ready (never held to fill max)", len(ms))
	}
	var want bytes.Buffer
	want.WriteString(`{"messages":[`)
	seen := map[string]bool{}
	for i, m := range ms {
		if i > 0 {
			want.WriteByte(',')
		}
		fmt.Fprintf(&want, `{"topic":"orders","partition":%d,"offset":%d,"key":%q,"payload":%s,"timestamp":%d,"receipt_handle":%q}`,
			m.Partition, m.Offset, *m.Key, m.Payload, m.Timestamp, m.ReceiptHandle)
		if seen[m.ReceiptHandle] || !handleRE.MatchString(m.ReceiptHandle) {
			t.Fatalf("handle %q", m.ReceiptHandle)
		}
		seen[m.ReceiptHandle] = true
	}
	want.WriteString("]}\n")
	wantBody(t, r, 200, want.String())
	if h.stats("orders").InFlight() != 5 {
		t.Fatal("batch did not lease every message")
	}
	wantEmpty(t, h.batch("orders", "max=10"), 204)

	// max=1 still answers the batch shape.
	h.mustProduce("orders", "", "x")
	h.mustProduce("orders", "", "y")
	r = h.batch("orders", "max=1")
	if ms := many(t, r); len(ms) != 1 || !strings.HasPrefix(string(r.body), `{"messages":[{"topic":"orders",`) {
		t.Fatalf("max=1: %v", r)
	}
	// max with partition.
	h.mustProduce("orders", "partition=1", "p1")
	for _, m := range many(t, h.batch("orders", "max=100&partition=1")) {
		if m.Partition != 1 {
			t.Fatalf("partition=1 batch gave %+v", m)
		}
	}
}

// Point 3: the batch's refusals.
func TestConsumeBatchErrors(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	wantError(t, h.consume("orders", "max=10"), 400, "a batch consume needs the X-Narad-Client header")
	for _, q := range []string{"max=0", "max=101", "max=-1", "max=x"} {
		wantError(t, h.batch("orders", q), 400, "max must be an integer from 1 to 100")
	}
	wantError(t, h.batch("orders", "max=5&partition=0&offset=0"), 400, "max cannot be combined with offset")
	if h.stats("orders").InFlight() != 0 {
		t.Fatal("a refused batch leased a message")
	}
	// An empty value is any value.
	if r := h.do("GET", "/v1/topics/orders/consume?max=2", nil, "X-Narad-Client", ""); r.status != 200 {
		t.Fatalf("empty X-Narad-Client: %v", r)
	}
}

// Point 3: an empty batch long-polls like a single consume and is woken by a produce.
func TestConsumeBatchLongPoll(t *testing.T) {
	t.Parallel()
	h := startTopic(t, TopicSpec{})
	start := time.Now()
	wantEmpty(t, h.batch("orders", "max=10&wait=200ms"), 204)
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("empty batch answered after %v, before wait", el)
	}
	got := async(func() resp { return h.batch("orders", "max=10&wait=10s") })
	h.waitForWaiters(1)
	h.mustProduce("orders", "", "m")
	if ms := many(t, <-got); len(ms) != 1 {
		t.Fatalf("woken batch got %d", len(ms))
	}
}

// Point 3: a batch stops near 4 MiB, never passes 8 MiB, and the first message always goes.
func TestConsumeBatchSizeLimit(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	big := `"` + strings.Repeat("a", MaxMessageBytes-2) + `"` // 1 MiB of JSON
	for i := 0; i < 6; i++ {
		h.mustProduce("orders", "partition=0", big)
	}
	r := h.batch("orders", "max=100")
	if ms := many(t, r); len(ms) != 4 || len(r.body) > 8<<20 {
		t.Fatalf("first batch: %d messages, %d bytes; want 4 (stopping at about 4 MiB)", len(ms), len(r.body))
	}
	if ms := many(t, h.batch("orders", "max=100")); len(ms) != 2 {
		t.Fatalf("second batch: %d messages, want the other 2", len(ms))
	}
	if h.stats("orders").InFlight() != 6 || h.stats("orders").Available() != 0 {
		t.Fatal("messages cut from a batch were leased or lost")
	}
	// The first message goes whatever its size: 1 MiB of binary is about 1.4 MiB of base64.
	bin := bytes.Repeat([]byte{0xff}, MaxMessageBytes)
	if r := h.do("POST", "/v1/topics/orders/produce", bin); r.status != 202 {
		t.Fatal(r)
	}
	r = h.batch("orders", "max=1")
	if ms := many(t, r); len(ms) != 1 || ms[0].PayloadEncoding != "base64" || len(r.body) < 1<<20 {
		t.Fatalf("big binary batch: %d bytes", len(r.body))
	}
}

// Point 3: replay by partition and offset: no lease, no handle.
func TestReplay(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "partition=1&key=k", `{"a": 1}`)
	h.mustProduce("orders", "partition=1", `second`)
	r := h.consume("orders", "partition=1&offset=0")
	m := one(t, r)
	wantBody(t, r, 200, fmt.Sprintf(`{"topic":"orders","partition":1,"offset":0,"key":"k","payload":{"a": 1},"timestamp":%d}`+"\n", m.Timestamp))
	if st := h.stats("orders"); st.InFlight() != 0 || st.Available() != 2 {
		t.Fatalf("replay changed state: %+v", st.Partitions)
	}
	// An in-flight message replays too, and replaying does not release it.
	leased := one(t, h.consume("orders", "partition=1"))
	if m := one(t, h.consume("orders", fmt.Sprintf("partition=1&offset=%d", leased.Offset))); m.ReceiptHandle != "" {
		t.Fatal("replay carried a handle")
	}
	wantEmpty(t, h.ack("orders", leased.ReceiptHandle, ""), 204)
	// At or past the high watermark: 204 at once, wait ignored.
	start := time.Now()
	wantEmpty(t, h.consume("orders", "partition=1&offset=2&wait=10s"), 204)
	wantEmpty(t, h.consume("orders", "partition=0&offset=0&wait=10s"), 204)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("replay past the tail waited %v", el)
	}
	wantError(t, h.consume("orders", "offset=0"), 400, "offset requires partition")
	for _, o := range []string{"-1", "x", "1.5"} {
		wantError(t, h.consume("orders", "partition=1&offset="+o), 400, "offset must be a non-negative integer")
	}
	if h.b.Requests(OpReplay) < 4 {
		t.Fatalf("Requests(replay) = %d", h.b.Requests(OpReplay))
	}
}

// The payload of a batch element and of a single consume are the same object.
func TestBatchElementEqualsSingle(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "partition=0&key=%FF", "\x00\x01binary")
	single := one(t, h.consume("orders", "partition=0&offset=0"))
	b := many(t, h.batch("orders", "max=1"))[0]
	b.ReceiptHandle = ""
	x, _ := json.Marshal(single)
	y, _ := json.Marshal(b)
	if !bytes.Equal(x, y) {
		t.Fatalf("single %s\nbatch  %s", x, y)
	}
}

// Point 3: "at most 8 MiB a response" holds for what goes on the wire, whatever makes a
// message large in JSON: a key of control characters is six bytes a byte once escaped.
func TestConsumeBatchHardCapCountsEncodedKey(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	key := strings.Repeat("\x01", 400_000) // 2.4 MB as a JSON string
	const n = 8
	for i := 0; i < n; i++ {
		if _, _, err := h.b.Produce("orders", key, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < n {
		r := h.batch("orders", "max=100")
		ms := many(t, r)
		if len(r.body) > 8<<20 {
			t.Fatalf("a batch of %d messages is %d bytes, over 8 MiB", len(ms), len(r.body))
		}
		got += len(ms)
	}
}
