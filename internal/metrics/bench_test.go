package metrics

import (
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
)

func BenchmarkOnAnswer(b *testing.B) {
	w := NewWorker("t", false)
	e := client.AnswerEvent{Exchange: client.Exchange{Op: client.OpConsume}, Status: 200, Latency: time.Millisecond}
	for b.Loop() {
		w.OnAnswer(e)
	}
}
