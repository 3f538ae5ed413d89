package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
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

// drainBench produces n messages into a fresh devbroker for each iteration and times
// drain(url) emptying the topic, reporting msgs/s, so the narad loop and a bare
// baseline loop are measured the same way in the same run.
func drainBench(b *testing.B, drain func(b *testing.B, url string, n int)) {
	const n = 20000
	br, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3,
		MaxInFlightPerPartition: 100000, MaxAckedAheadPerPartition: 100000}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
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
		drain(b, br.URL(), n)
		total += time.Since(start)
		if st, _ := br.Stats("t"); st.Available() != 0 || st.InFlight() != 0 {
			b.Fatalf("not drained: %+v", st)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "msgs/s")
}

// BenchmarkPrintDrainDevbroker is `narad sub --drain -o raw > /dev/null` end to end
// against devbroker over loopback HTTP. Compare with BenchmarkBaselineDrainDevbroker.
func BenchmarkPrintDrainDevbroker(b *testing.B) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	r, _ := render.New(render.Options{Format: render.Raw})
	drainBench(b, func(b *testing.B, url string, n int) {
		c, _ := client.New(client.Config{BaseURL: url, HTTPClient: &http.Client{Transport: tr}})
		res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(io.Discard, r), consumer.Options{Topic: "t", Drain: true})
		if err != nil || res.Stats.Acked != int64(n) {
			b.Fatal(err, res.Stats)
		}
	})
}

// BenchmarkBaselineDrainDevbroker is the least a consumer can do over the same API:
// batch consume of 100, write the raw payloads, one batch ack, in sequence, with no
// retries, no exactly-once bookkeeping and no rendering. narad should be close to it.
func BenchmarkBaselineDrainDevbroker(b *testing.B) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	drainBench(b, func(b *testing.B, url string, n int) {
		for {
			req, _ := http.NewRequest("GET", url+"/v1/topics/t/consume?max=100", nil)
			req.Header.Set("X-Narad-Client", "baseline")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode == http.StatusNoContent {
				resp.Body.Close()
				return
			}
			var batch struct {
				Messages []struct {
					Payload       json.RawMessage `json:"payload"`
					ReceiptHandle string          `json:"receipt_handle"`
				} `json:"messages"`
			}
			err = json.NewDecoder(resp.Body).Decode(&batch)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			handles := make([]string, len(batch.Messages))
			for i, m := range batch.Messages {
				io.Discard.Write(m.Payload)
				handles[i] = m.ReceiptHandle
			}
			body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
			ack, _ := http.NewRequest("POST", url+"/v1/topics/t/ack", bytes.NewReader(body))
			ack.Header.Set("Content-Type", "application/json")
			resp, err = hc.Do(ack)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatal(err, resp.StatusCode)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
