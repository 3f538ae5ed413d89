package supervisor

import (
	"sync"

	"github.com/narad/narad/internal/consumer"
)

// tally counts the messages a run has finished, for --count. A message is finished
// once its command succeeded (and it was acked), once it was dead-lettered, or once
// the run gave it up for good: its lease was lost (it is someone else's now), or its
// command failed with no --max-attempts to try it again under. A failure that
// --max-attempts will retry is not an end. A message that comes back after it was
// counted is not counted again (the key is the message, not the delivery), though how
// it ended the last time is what counts. Memory is bounded by --count.
type tally struct {
	mu       sync.Mutex
	finished map[msgKey]finish
	failed   int            // finished messages whose last end was a failure
	inHand   map[msgKey]int // deliveries held of messages not finished yet
	changed  chan struct{}  // closed and replaced at every change
}

// finish is how a delivery ended, for the tally.
type finish int

const (
	notFinished   finish = iota // given back, to be tried again
	finishedOK                  // acked after success, or dead-lettered
	finishedLost                // given up: the lease was lost
	finishedError               // given up: it failed, and nothing will retry it
)

func newTally() *tally {
	return &tally{finished: make(map[msgKey]finish), inHand: make(map[msgKey]int), changed: make(chan struct{})}
}

// take notes a delivery of k in hand.
func (t *tally) take(k msgKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, done := t.finished[k]; done {
		return
	}
	t.inHand[k]++
	t.wake()
}

// end notes how a delivery of k ended.
func (t *tally) end(k msgKey, how finish) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.inHand[k]; n > 1 {
		t.inHand[k] = n - 1
	} else {
		delete(t.inHand, k)
	}
	if how != notFinished {
		was, counted := t.finished[k]
		if counted && was == finishedError {
			t.failed--
		}
		t.finished[k] = how
		if how == finishedError {
			t.failed++
		}
		// Another delivery of it still held (its lease had lapsed and it came back) is
		// now a redelivery of a counted message.
		delete(t.inHand, k)
	}
	t.wake()
}

func (t *tally) wake() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tally) counted() (consumer.MessageCount, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return consumer.MessageCount{Finished: len(t.finished), Failed: t.failed, InHand: len(t.inHand)}, t.changed
}
