package supervisor

import (
	"testing"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/consumer"
)

// TestTallyCountsMessagesNotDeliveries: a message given back is in hand no more and
// not finished; a redelivery of a finished one is neither in hand nor a new message;
// its last end is what counts (a failure later acked is no failure).
func TestTallyCountsMessagesNotDeliveries(t *testing.T) {
	tl := newTally()
	a, b := msgKey{0, 1}, msgKey{1, 1}
	want := func(step string, finished, failed, inHand int) {
		t.Helper()
		got, _ := tl.counted()
		if w := (consumer.MessageCount{Finished: finished, Failed: failed, InHand: inHand}); got != w {
			t.Errorf("%s: %+v, want %+v", step, got, w)
		}
	}
	tl.take(a)
	tl.take(b)
	want("two taken", 0, 0, 2)
	_, changed := tl.counted()
	tl.end(a, notFinished)
	if !chans.Closed(changed) {
		t.Error("an end did not wake the loop")
	}
	want("a given back", 0, 0, 1)
	tl.take(a)
	tl.end(a, finishedError)
	want("a failed for good", 1, 1, 1)
	tl.take(a)
	want("a again: not a new message", 1, 1, 1)
	tl.end(a, finishedOK)
	want("a acked at last", 1, 0, 1)
	tl.end(b, finishedLost)
	want("b lost", 2, 0, 0)
}
