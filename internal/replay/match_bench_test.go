package replay

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

var benchMsg = client.Message{Topic: "orders", Partition: 4, Offset: 7, Key: key("customer-42"),
	Payload: json.RawMessage(`{"order_id": "ord_123", "amount": 4999, "status": "paid"}`), Timestamp: 1790623277}

// A --filter that keeps nothing: what each message read costs before it is dropped.
func BenchmarkMatchFilterNone(b *testing.B) {
	q, err := render.CompileJQ(".payload.amount < 0")
	if err != nil {
		b.Fatal(err)
	}
	mt := &Matcher{Filter: q}
	// A context that can end, as a read's: gojq then checks it at each step.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if mt.Match(ctx, &benchMsg) {
			b.Fatal("matched")
		}
	}
}

func BenchmarkMatchGrepNone(b *testing.B) {
	mt := &Matcher{Grep: regexp.MustCompile(`ord_9\d+`)}
	b.ReportAllocs()
	for b.Loop() {
		if mt.Match(context.Background(), &benchMsg) {
			b.Fatal("matched")
		}
	}
}
