package consumer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
)

// settleLog is a Source that records settlements and consumes nothing.
type settleLog struct {
	mu  sync.Mutex
	got map[client.Action][]string
}

func (s *settleLog) Consume(context.Context, string, client.ConsumeOptions) (*client.ConsumeResult, error) {
	return &client.ConsumeResult{}, nil
}

func (s *settleLog) Settle(_ context.Context, _ string, a client.Action, hs []string) ([]client.SettleResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got[a] = append(s.got[a], hs...)
	res := make([]client.SettleResult, len(hs))
	for i := range res {
		res[i].Status = 204
	}
	return res, nil
}

func (s *settleLog) Topic(context.Context, string) (*client.Topic, error) {
	return nil, errors.New("no topic info")
}

func (s *settleLog) handles(a client.Action) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got[a]...)
}

// emptyPipe is a probe of a pipe that always looks empty and whose reader never
// takes or leaves: only whether the line was written can tell taken from not.
type emptyPipe struct{}

func (emptyPipe) unread() (int, error) { return 0, nil }
func (emptyPipe) waitTaken(d time.Duration) (bool, bool, error) {
	time.Sleep(d)
	return false, false, nil
}
func (emptyPipe) readerGone(d time.Duration) (bool, error) { time.Sleep(d); return false, nil }
func (emptyPipe) shrink()                                  {}
func (emptyPipe) restore()                                 {}

// stuckWriter is a write that never returns until released.
type stuckWriter struct{ started, release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	close(w.started)
	<-w.release
	return len(p), nil
}

// A line whose write has not returned is not in the pipe yet, though the pipe looks
// empty: giving the pipe up then gives it back rather than acking it as taken.
func TestPipeLineNotWrittenIsNotTaken(t *testing.T) {
	src := &settleLog{got: map[client.Action][]string{}}
	var c counters
	s, release := newSettler(context.Background(), src, Options{Topic: "t"}.mustDefaults(t), &c)
	defer release()
	w := stuckWriter{started: make(chan struct{}), release: make(chan struct{})}
	defer close(w.release)
	ps := newPipeState(emptyPipe{}, w, func(ds []Delivery) { _ = AckAll(ds) })
	ds := s.wrap([]client.Message{{ReceiptHandle: "h0"}})
	ps.run()
	if !ps.push([]pipeLine{{d: ds[0], b: []byte("h0\n")}}) {
		t.Fatal("push refused")
	}
	<-w.started
	ps.giveBackAll()
	if got := src.handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v: a line still being written was taken for read", got)
	}
	if got := src.handles(client.Nack); len(got) != 1 || got[0] != "h0" {
		t.Errorf("nacked %v, want h0 given back", got)
	}
}

func (o Options) mustDefaults(t *testing.T) Options {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}
