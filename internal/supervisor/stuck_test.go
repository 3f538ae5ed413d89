package supervisor_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/supervisor"
)

// stuckWriter is a stdout whose reader stopped reading: every Write blocks until the
// test ends.
type stuckWriter struct {
	once    sync.Once
	blocked chan struct{} // closed at the first Write
	release chan struct{}
}

func newStuckWriter(t *testing.T) *stuckWriter {
	w := &stuckWriter{blocked: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(w.release) })
	return w
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.blocked) })
	<-w.release
	return len(p), nil
}

// A command whose output cannot be passed on (narad's stdout is a pipe nobody reads)
// must not hold a stop up forever: the stop still ends, and the message is settled
// rather than kept leased (its lease extended) for as long as the reader sleeps.
func TestAStopIsNotHeldUpByAStdoutThatStoppedReading(t *testing.T) {
	for _, hard := range []bool{false, true} {
		name := "soft"
		if hard {
			name = "hard"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "log")
			src := consumertest.New()
			src.Push(msg("a", "lines 1 hello sleep 30s"))
			o := opts("log", log, "script")
			o.ShutdownGrace = 200 * time.Millisecond
			o.KillGrace = 200 * time.Millisecond
			out := newStuckWriter(t)
			o.Stdout = out
			stop := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan runResult, 1)
			go func() { done <- runSup(t, ctx, src, o, consumer.Options{Stop: stop, Wait: 5 * time.Second}) }()
			<-out.blocked
			close(stop)
			if hard {
				cancel()
			}
			select {
			case r := <-done:
				if got := src.Handles(client.Nack); !slices.Equal(got, []string{"a"}) {
					t.Errorf("nacked %v, want a", got)
				}
				if r.Reason != consumer.StopInterrupted {
					t.Errorf("reason %v", r.Reason)
				}
				for _, e := range readLog(t, log) {
					if !processGone(e.pid) {
						t.Errorf("pid %d outlived the run", e.pid)
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the stop never ended; nacked so far: %v", src.Handles(client.Nack))
			}
		})
	}
}

// narad's own notice about a message it cannot run waits for the output lock, which a
// command's line blocked on that stdout holds: a stop must still end, with the message
// given back.
func TestANoticeDoesNotHoldUpAStopBehindAStuckStdout(t *testing.T) {
	t.Parallel()
	src := consumertest.New()
	src.Push(msg("a", "lines 1 hello sleep 30s"), msg("bad", ""))
	o := opts("script")
	o.Concurrency = 2
	o.ShutdownGrace = 200 * time.Millisecond
	o.KillGrace = 200 * time.Millisecond
	out := newStuckWriter(t)
	o.Stdout = out
	badRan := make(chan struct{})
	o.Decode = func(m *client.Message) ([]byte, error) {
		if m.ReceiptHandle == "bad" {
			<-out.blocked
			close(badRan)
			return nil, errors.New("not base64")
		}
		return m.PayloadBytes()
	}
	stop := make(chan struct{})
	sup, err := supervisor.New(o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = consumer.Run(context.Background(), src, sup, consumer.Options{Topic: "t", Stop: stop, Wait: 5 * time.Second, Lease: 30 * time.Second}) // too long to lapse on a loaded machine
	}()
	<-badRan
	// "bad" failed (it no longer counts as running) and its notice comes next, which
	// waits for the lock that "a"'s line holds.
	waitFor(t, "bad to fail", func() bool { return sup.Running() == 1 })
	close(stop)
	select {
	case <-done:
		if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"a", "bad"}) {
			t.Errorf("nacked %v, want a and bad", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the stop never ended; nacked so far: %v", src.Handles(client.Nack))
	}
}
