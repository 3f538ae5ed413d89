package devbroker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFlow is the full flow over HTTP on loopback: 4 producers (one request a
// message), 2 consumers taking batches of 100 and acking each batch in one request. It
// reports msgs/s, for CLI benchmarks to compare against: if they reach a good share of
// this, the broker is not their bottleneck.
//
//	go test -run '^$' -bench Flow -benchtime 20000x ./internal/devbroker/
func BenchmarkFlow(b *testing.B) {
	br, err := Start(Config{Topics: []TopicSpec{{Name: "bench", Partitions: 8}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	fc := newFlowClient(br)
	payload := []byte(`{"order_id":"ord_123","amount":4999}`)
	total := int64(b.N)
	var produced, acked atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range 4 {
		wg.Go(func() {
			for produced.Add(1) <= total {
				if st, body, err := fc.do("POST", "/v1/topics/bench/produce", payload, false); err != nil || st != 202 {
					b.Errorf("produce: %d %s %v", st, body, err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for acked.Load() < total {
				ms, err := fc.consumeBatch("bench", 100, "100ms")
				if err != nil {
					b.Error(err)
					return
				}
				if len(ms) == 0 {
					continue
				}
				codes, err := fc.settle("bench", "", handles(ms))
				if err != nil {
					b.Error(err)
					return
				}
				for _, c := range codes {
					if c != 204 {
						b.Errorf("ack result %d", c)
						return
					}
				}
				acked.Add(int64(len(ms)))
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkConsumeAck is the consumer side alone: messages produced in advance (through
// the Go API, untimed), one consumer taking batches of 100 and acking each in one request.
//
//	go test -run '^$' -bench ConsumeAck -benchtime 50000x ./internal/devbroker/
func BenchmarkConsumeAck(b *testing.B) {
	br, err := Start(Config{Topics: []TopicSpec{{Name: "bench", Partitions: 8}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	fc := newFlowClient(br)
	payload := []byte(`{"order_id":"ord_123","amount":4999}`)
	for i := 0; i < b.N; i++ {
		if _, _, err := br.Produce("bench", "", payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		ms, err := fc.consumeBatch("bench", 100, "0")
		if err != nil || len(ms) == 0 {
			b.Fatalf("consume: %d messages, %v", len(ms), err)
		}
		if _, err := fc.settle("bench", "", handles(ms)); err != nil {
			b.Fatal(err)
		}
		done += len(ms)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
