package consumer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/render"
)

// BenchmarkLoopOverhead is the loop and the printer alone, against the fake Source:
// what a message costs on our side of the wire.
func BenchmarkLoopOverhead(b *testing.B) {
	r, _ := render.New(render.Options{Format: render.Raw})
	src := consumertest.New()
	src.Add("t", b.N)
	b.ReportAllocs()
	b.ResetTimer()
	res, err := consumer.Run(context.Background(), src, consumer.NewPrinter(io.Discard, r), consumer.Options{Topic: "t", Drain: true})
	if err != nil || res.Stats.Acked != int64(b.N) {
		b.Fatal(err, res.Stats)
	}
}

// BenchmarkPrintDrainDevbroker is `narad sub --drain -o raw > /dev/null` end to end
// against devbroker over loopback HTTP.
func BenchmarkPrintDrainDevbroker(b *testing.B) {
	const n = 20000
	br, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3,
		MaxInFlightPerPartition: 100000, MaxAckedAheadPerPartition: 100000}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c, _ := client.New(client.Config{BaseURL: br.URL(), HTTPClient: &http.Client{Transport: tr}})
	r, _ := render.New(render.Options{Format: render.Raw})
	payload := []byte(`{"order_id":"ord_123","amount":4999}`)
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		b.StopTimer()
		for i := range n {
			if _, _, err := br.Produce("t", fmt.Sprint(i%50), payload); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(io.Discard, r), consumer.Options{Topic: "t", Drain: true})
		total += time.Since(start)
		if err != nil || res.Stats.Acked != n {
			b.Fatal(err, res.Stats)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "msgs/s")
}
