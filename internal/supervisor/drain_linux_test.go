package supervisor

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// gatedWriter holds its first write until open is closed, and counts what it took.
type gatedWriter struct {
	open chan struct{}
	n    atomic.Int64
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.open
	g.n.Add(int64(len(p)))
	return len(p), nil
}

// A command that exited 0 with its output still behind a slow reader of narad's stdout
// (in its pipe, and in the pump's hands) is acked only once that output is passed on:
// the drain after its exit waits for what it wrote, where it used to cut the pipe and
// ack a message whose output was lost.
func TestOutputWrittenBeforeExitIsPassedOnBeforeTheAck(t *testing.T) {
	head, err := exec.LookPath("head")
	if err != nil {
		t.Skip("no head")
	}
	const size = 100_000 // more than narad holds (one line buffer), less than that and the pipe
	out := &gatedWriter{open: make(chan struct{})}
	s, err := New(Options{Command: []string{head, "-c", "100000", "/dev/zero"}, Env: os.Environ(),
		KillGrace: time.Second, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	drains := make(chan func(), 1)
	s.drainClock.afterFunc = func(_ time.Duration, f func()) *time.Timer {
		drains <- f // the command exited: its drain is due
		return time.NewTimer(time.Hour)
	}
	release := sync.OnceFunc(func() { close(out.open) })
	s.drainClock.sleep = func(time.Duration) {
		// The drain waits for the reader: let it read now.
		release()
		time.Sleep(time.Millisecond)
	}
	src := consumertest.New()
	src.Push(client.Message{Topic: "t", Partition: 1, Offset: 2, Payload: []byte(`"x"`), ReceiptHandle: "h"})
	type ran struct {
		res consumer.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := consumer.Run(context.Background(), src, s, consumer.Options{Topic: "t", Count: 1, Lease: time.Minute})
		done <- ran{res, err}
	}()
	drain := <-drains
	drain() // the drain's time has come, with the writer still stuck
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := out.n.Load(); got != size {
		t.Errorf("passed on %d bytes of %d, and then acked %v", got, size, src.Handles(client.Ack))
	}
	if r.res.Stats.Acked != 1 {
		t.Errorf("stats %+v", r.res.Stats)
	}
}
