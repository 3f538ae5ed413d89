package replay

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/narad/narad/internal/client"
)

// busyAt answers a replay read of one offset busy (503, as a node relaying to a
// partition owner that is down does, past the client's retry budget) a few times.
type busyAt struct {
	*fakeTopic
	off   int64
	times int
}

func (b *busyAt) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	if off == b.off && b.times > 0 {
		b.times--
		return nil, &client.Error{Op: client.OpReplay, Status: http.StatusServiceUnavailable, Message: "owner of partition 0 unavailable", Plain: true}
	}
	return b.fakeTopic.Replay(ctx, topic, p, off)
}

// A follow whose node keeps answering 503 waits it out as it waits out a restart: said
// once each way, the same offset asked again, nothing skipped. (It ended with the 503.)
func TestFollowWaitsOutABusyNode(t *testing.T) {
	src := &busyAt{fakeTopic: &fakeTopic{parts: [][]string{{"a", "b"}}}, off: 1, times: 2}
	var lost []error
	back := 0
	got, err := collect(t, src, Options{Topic: "t", To: -1, Count: 2, Follow: true,
		OnNodeLost: func(err error) { lost = append(lost, err) }, OnNodeBack: func() { back++ }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := []string{`p0@0="a"`, `p0@1="b"`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(lost) != 1 || client.StatusOf(lost[0]) != http.StatusServiceUnavailable || back != 1 {
		t.Errorf("lost %v, back %d: want the 503 once and back once", lost, back)
	}
}
