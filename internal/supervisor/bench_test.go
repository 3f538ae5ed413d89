package supervisor_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/supervisor"
)

// BenchmarkExecTrue runs `true` for each message, four at a time, against the fake
// Source: what a short command costs on our side besides the process itself (the
// settlements cost nothing here; settles/op counts the requests they would be).
func BenchmarkExecTrue(b *testing.B) {
	if _, err := exec.LookPath("true"); err != nil {
		b.Skip("no true on PATH")
	}
	src := consumertest.New()
	src.Add("t", b.N)
	s, err := supervisor.New(supervisor.Options{Command: []string{"true"}, Concurrency: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := consumer.Run(context.Background(), src, s, consumer.Options{Topic: "t", Drain: true, Lease: 30 * time.Second})
	if err != nil || res.Stats.Acked != int64(b.N) {
		b.Fatal(err, res.Stats)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(src.Settles()))/float64(b.N), "settles/op")
	b.ReportMetric(float64(len(src.Consumes()))/float64(b.N), "consumes/op")
}
