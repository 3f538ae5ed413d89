package supervisor

import (
	"sync"
	"time"
)

// ackBatchMax is the most acks one request carries: the API's batch limit.
const ackBatchMax = 100

// acker gathers the acks of commands that finish close together into one batch
// settlement: with many short commands, one ack request per message cost the node
// and us more than the commands did. The first ack of a batch waits at most window
// for others; a full batch goes at once. The caller's lease is still kept (and window
// is a small part of it, see New), until the batch has its answer.
// T is consumer.Delivery; a test uses its own.
type acker[T any] struct {
	window time.Duration
	send   func([]T)                   // consumer.AckAll, or a test's stand-in
	after  func(time.Duration, func()) // time.AfterFunc, or a test's clock

	mu  sync.Mutex
	cur *ackBatch[T] // the batch still taking acks; nil when none is
}

type ackBatch[T any] struct {
	items []T
	done  chan struct{} // closed once the batch was settled
}

func newAcker[T any](window time.Duration, send func([]T)) *acker[T] {
	return &acker[T]{window: window, send: send, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// ack acks d with whatever other acks come within the window, and returns once the
// batch carrying it was settled (the answer, as for a single ack, is in the
// consumer's counts).
func (a *acker[T]) ack(d T) {
	if a.window <= 0 {
		a.send([]T{d})
		return
	}
	a.mu.Lock()
	b := a.cur
	if b == nil {
		b = &ackBatch[T]{done: make(chan struct{})}
		a.cur = b
		a.after(a.window, func() { a.flush(b) })
	}
	b.items = append(b.items, d)
	full := len(b.items) >= ackBatchMax
	if full {
		a.cur = nil
	}
	a.mu.Unlock()
	if full {
		a.settle(b)
	}
	<-b.done
}

// flush sends b when its window ends, unless it went already because it was full.
func (a *acker[T]) flush(b *ackBatch[T]) {
	a.mu.Lock()
	if a.cur != b {
		a.mu.Unlock()
		return
	}
	a.cur = nil
	a.mu.Unlock()
	a.settle(b)
}

func (a *acker[T]) settle(b *ackBatch[T]) {
	a.send(b.items)
	close(b.done)
}
