package bench

import (
	"slices"
	"sync"

	"github.com/narad/narad/internal/client"
)

// Recorder is the client hook bench's latencies come from (install it with
// client.Config.Hooks): it times every answered request by what it was for, and
// remembers which batch forms the node turned out not to have. Being an observer, it
// measures what the engines really sent, retries and older-node fallbacks included.
type Recorder struct {
	// Produce holds produce and batch produce answers; Consume holds consume and ack
	// answers (acks are half the work of consuming). Other requests are not timed.
	Produce, Consume Histogram

	mu        sync.Mutex
	fallbacks []client.Fallback
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// OnAnswer implements client.HookAnswer.
func (r *Recorder) OnAnswer(e client.AnswerEvent) {
	switch e.Op {
	case client.OpProduce, client.OpProduceBatch:
		r.Produce.Record(e.Latency)
	case client.OpConsume, client.OpAck:
		r.Consume.Record(e.Latency)
	}
}

// OnFallback implements client.HookFallback.
func (r *Recorder) OnFallback(e client.FallbackEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallbacks = append(r.fallbacks, e.Fallback)
}

// Fallbacks lists what the node turned out not to speak, in the order learned.
func (r *Recorder) Fallbacks() []client.Fallback {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]client.Fallback(nil), r.fallbacks...)
}

func (r *Recorder) learned(f client.Fallback) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.fallbacks, f)
}
