package hold

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// An ask stands until a message is handed: the consume loop asks the node again
// after an answer that brought nothing, and must find the model still waiting.
func TestFeedAskStandsUntilAMessageIsHanded(t *testing.T) {
	f := NewFeed(func(tea.Msg) {}, make(chan struct{}))
	f.Ready()
	if n, err := f.Slots(context.Background()); n != 1 || err != nil {
		t.Fatalf("Slots after Ready: %d, %v", n, err)
	}
	// The consume found nothing: the next Slots must not wait (a cancelled context
	// would end a wait at once, with an error).
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := f.Slots(done); n != 1 || err != nil {
		t.Fatalf("Slots again before anything was handed: %d, %v (the ask was used up by an empty consume)", n, err)
	}
	if err := f.Handle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Slots(done); n != 1 {
		t.Fatalf("Slots after handing nothing: %d", n)
	}
}
