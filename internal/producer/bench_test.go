package producer

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/narad/narad/internal/client"
)

// nopClient accepts everything at once, encoding each batch as ProduceBatch would, so
// the benchmark is what a message costs on our side of the wire.
type nopClient struct{}

func (c *nopClient) ProduceBatch(ctx context.Context, topic string, msgs []client.ProduceMessage) error {
	_ = client.AppendProduceBatch(make([]byte, 0, 8<<10), msgs)
	return nil
}

func (c *nopClient) Produce(context.Context, string, []byte, client.ProduceOptions) error { return nil }

// BenchmarkEngineLines is --lines through the engine (read, batch, encode) with -j 8.
func BenchmarkEngineLines(b *testing.B) {
	var in bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&in, "order-%06d,customer-%d,4999\n", i, i%50)
	}
	b.ReportAllocs()
	b.SetBytes(int64(in.Len()))
	for b.Loop() {
		res := Run(context.Background(), &nopClient{}, Lines(bytes.NewReader(in.Bytes())), Options{Topic: "t", Concurrency: 8})
		if res.Produced != 100_000 {
			b.Fatal(res)
		}
	}
}
