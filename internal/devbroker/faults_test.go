package devbroker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const injected503 = "injected fault"

// Point 10: the next n acks answer 503 with no effect; the handle stays good.
func TestFailNextAck(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	h.b.FailNext(OpAck, 2, 503)
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 503, injected503)
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 503, injected503)
	if h.stats("orders").InFlight() != 1 {
		t.Fatal("a faulted ack settled the message")
	}
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)
	if h.b.Requests(OpAck) != 3 {
		t.Fatalf("Requests(ack) = %d", h.b.Requests(OpAck))
	}
}

// Point 10: each operation's fault leaves state alone.
func TestFailNextOps(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.b.FailNext(OpProduce, 1, 503)
	wantError(t, h.produce("orders", "", "m"), 503, injected503)
	if h.stats("orders").Messages() != 0 {
		t.Fatal("a faulted produce stored the message")
	}
	h.mustProduce("orders", "", "m")

	h.b.FailNext(OpConsume, 1, 502)
	wantError(t, h.consume("orders", "wait=10s"), 502, "injected fault")
	if st := h.stats("orders"); st.InFlight() != 0 || st.Available() != 1 {
		t.Fatal("a faulted consume leased the message")
	}
	m := one(t, h.consume("orders", ""))

	h.b.FailNext(OpExtend, 1, 410)
	wantError(t, h.ack("orders", m.ReceiptHandle, "true"), 410, textGone)
	h.b.FailNext(OpNack, 1, 503)
	wantError(t, h.ack("orders", m.ReceiptHandle, "0"), 503, injected503)
	if h.stats("orders").InFlight() != 1 {
		t.Fatal("a faulted extend or nack changed the lease")
	}
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "true"), 204)

	h.b.FailNext(OpReplay, 1, 421)
	wantError(t, h.consume("orders", "partition=0&offset=0"), 421, "injected fault")

	// Queued faults run in order; n <= 0 clears them.
	h.b.FailNext(OpAck, 1, 502)
	h.b.FailNext(OpAck, 1, 503)
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 502, "injected fault")
	h.b.FailNext(OpAck, 0, 0)
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)

	defer func() {
		if recover() == nil {
			t.Fatal("FailNext of an unknown operation did not panic")
		}
	}()
	h.b.FailNext("akc", 1, 503)
}

// Point 10: in a batch ack each handle is one ack; the fault is that handle's result.
func TestFailNextBatchAck(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for i := 0; i < 3; i++ {
		h.mustProduce("orders", "", "m")
	}
	ms := many(t, h.batch("orders", "max=3"))
	h.b.FailNext(OpAck, 1, 503)
	wantBody(t, h.batchAck("orders", "", handles(ms)...), 200,
		`{"results":[{"status":503,"error":"injected fault"},{"status":204},{"status":204}]}`+"\n")
	// The faulted handle is still held: the retry settles it.
	wantBody(t, h.batchAck("orders", "", ms[0].ReceiptHandle), 200, `{"results":[{"status":204}]}`+"\n")
}

// FailNextPlain answers in text, as a relaying node does; status 0 drops the connection.
func TestFailNextPlainAndReset(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.b.FailNextPlain(OpProduce, 1, 502)
	r := h.produce("orders", "", "m")
	if r.status != 502 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(r.body) != "injected fault\n" {
		t.Fatalf("plain fault: %v %v", r, r.header)
	}
	h.b.FailNext(OpProduce, 1, 0)
	if _, err := h.try("POST", "/v1/topics/orders/produce", []byte("m")); err == nil {
		t.Fatal("a reset fault answered")
	}
	if h.stats("orders").Messages() != 0 {
		t.Fatal("a faulted produce stored the message")
	}
	h.mustProduce("orders", "", "m")
	m := one(t, h.consume("orders", ""))
	h.b.FailNext(OpAck, 1, 0)
	if _, err := h.try("POST", "/v1/topics/orders/ack", []byte(`{"receipt_handles":["`+m.ReceiptHandle+`"]}`), "Content-Type", "application/json"); err == nil {
		t.Fatal("a reset batch ack answered")
	}
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)
}

// Point 10: faults as flags.
func TestFaultRules(t *testing.T) {
	t.Parallel()
	var rules []FaultRule
	for _, s := range []string{"ack=503:1", "latency=60ms"} {
		f, err := ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, f)
	}
	h := start(t, Config{Faults: rules, Topics: []TopicSpec{{Name: "orders"}}})
	start := time.Now()
	h.mustProduce("orders", "", "m")
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Fatalf("latency=60ms, answered after %v", el)
	}
	m := one(t, h.consume("orders", ""))
	wantError(t, h.ack("orders", m.ReceiptHandle, ""), 503, injected503)
	h.b.ClearFaults()
	// Health routes are never faulted: a 5s latency does not touch them.
	if err := h.b.AddFault(FaultRule{Op: OpLatency, Latency: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	wantBody(t, h.do("GET", "/readyz", nil), 200, `{"status":"ready"}`+"\n")
	if el := time.Since(start); el > 2500*time.Millisecond {
		t.Fatalf("readyz took %v", el)
	}
	h.b.ClearFaults()
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204)

	// A probability is a probability: 200 consumes at 0.5 see both answers.
	if err := h.b.AddFault(FaultRule{Op: OpConsume, Status: 503, Probability: 0.5}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for i := 0; i < 200; i++ {
		seen[h.consume("orders", "").status]++
	}
	if seen[503] == 0 || seen[204] == 0 || seen[503]+seen[204] != 200 {
		t.Fatalf("consume=503:0.5 gave %v", seen)
	}
	h.b.ClearFaults()

	// reset=1 drops every API connection.
	if err := h.b.AddFault(FaultRule{Op: OpReset, Probability: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.try("GET", "/v1/topics", nil); err == nil {
		t.Fatal("reset=1 answered")
	}
	wantBody(t, h.do("GET", "/healthz", nil), 200, `{"status":"ok"}`+"\n")
}

func TestParseFault(t *testing.T) {
	for in, want := range map[string]FaultRule{
		"ack=503:0.2":     {Op: "ack", Status: 503, Probability: 0.2},
		"consume=503:0.1": {Op: "consume", Status: 503, Probability: 0.1},
		"extend=410:1":    {Op: "extend", Status: 410, Probability: 1},
		"nack=503:1":      {Op: "nack", Status: 503, Probability: 1},
		"produce=503:0.5": {Op: "produce", Status: 503, Probability: 0.5},
		"replay=502:0.3":  {Op: "replay", Status: 502, Probability: 0.3},
		"ack=429":         {Op: "ack", Status: 429, Probability: 1},
		"latency=5ms":     {Op: "latency", Latency: 5 * time.Millisecond},
		"reset=0.01":      {Op: "reset", Probability: 0.01},
	} {
		got, err := ParseFault(in)
		if err != nil || got != want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if back, err := ParseFault(got.String()); err != nil || back != got {
			t.Errorf("%q: String() %q does not parse back", in, got.String())
		}
	}
	for _, in := range []string{"", "ack", "ack=", "ack=200:1", "ack=600:1", "ack=x:1", "ack=503:0", "ack=503:1.5",
		"ack=503:x", "latency=5", "latency=-1s", "reset=0", "reset=2", "delete=503:1", "latency"} {
		if _, err := ParseFault(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseFault(%q): want an error, got %v", in, err)
		}
	}
	if _, err := New(Config{Faults: []FaultRule{{Op: "ack", Status: 200, Probability: 1}}}); err == nil ||
		!strings.Contains(err.Error(), "status") {
		t.Errorf("a bad rule in Config: %v", err)
	}
}

// Requests counts faulted requests too, reset ones included, under their operation.
func TestRequestsCountResets(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	if err := h.b.AddFault(FaultRule{Op: OpReset, Probability: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/topics/orders/produce"},
		{"GET", "/v1/topics/orders/consume"},
		{"GET", "/v1/topics/orders/consume?partition=0&offset=0"},
		{"POST", "/v1/topics/orders/ack?receipt_handle=0:0:1"},
		{"POST", "/v1/topics/orders/ack?receipt_handle=0:0:1&extend=true"},
		{"POST", "/v1/topics/orders/ack?receipt_handle=0:0:1&extend=0"},
		{"POST", "/v1/topics"},
		{"GET", "/v1/topics"},
		{"GET", "/v1/topics/orders"},
		{"DELETE", "/v1/topics/orders"},
	} {
		if _, err := h.try(c.method, c.path, []byte("m")); err == nil {
			t.Fatalf("%s %s: reset=1 answered", c.method, c.path)
		}
	}
	for _, op := range []string{OpProduce, OpConsume, OpReplay, OpAck, OpExtend, OpNack,
		OpCreateTopic, OpListTopics, OpTopicInfo, OpDeleteTopic} {
		if n := h.b.Requests(op); n != 1 {
			t.Errorf("Requests(%q) = %d after one reset request, want 1", op, n)
		}
	}
}
