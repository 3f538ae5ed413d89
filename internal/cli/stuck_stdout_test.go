package cli

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// fullPipe is the write end of a pipe that is full and that nobody reads: a stdout
// whose reader stopped reading. The test's end closes the read end first, which ends
// any write still blocked on it (EPIPE).
func fullPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	chunk := make([]byte, 512)
	_ = w.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		if _, err := w.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = w.SetWriteDeadline(time.Time{})
	return w
}

// A read that takes nothing (replay, sub --peek) ends at the first signal even while
// its write waits on a stdout nobody reads: it ignored every signal then, for as long
// as that reader slept.
func TestReadsEndAtASignalWithStdoutStuck(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml"), "NARAD_ADDR": b.URL()}
	if res := runCLI(t, nil, false, "produce", "t", "one", "two", "-s", b.URL()); res.code != 0 {
		t.Fatalf("produce: exit %d: %s", res.code, res.stderr)
	}
	for _, c := range []struct {
		args []string
		sig  syscall.Signal
		code int
	}{
		{[]string{"replay", "t", "--follow"}, syscall.SIGINT, 130},
		{[]string{"sub", "t", "--peek", "--from-beginning"}, syscall.SIGTERM, 143},
		{[]string{"sub", "t", "--peek", "--from-beginning", "--timeout", "300ms"}, 0, 0},
	} {
		ios, _, _, errOut := iostreams.Test()
		ios.Out = fullPipe(t)
		f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
		reads := b.Requests(devbroker.OpReplay)
		done := make(chan int, 1)
		go func() { done <- Run(f, c.args) }()
		// Until it read something to write (the timeout needs no signal to wait for).
		for c.sig != 0 && b.Requests(devbroker.OpReplay) == reads {
			select {
			case code := <-done:
				t.Fatalf("narad %q: exit %d before it read anything; stderr %q", c.args, code, errOut)
			case <-time.After(5 * time.Millisecond):
			}
		}
		if c.sig != 0 {
			f.Signals.Trigger(c.sig)
		}
		select {
		case code := <-done:
			if code != c.code {
				t.Errorf("narad %q: exit %d, want %d; stderr %q", c.args, code, c.code, errOut)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("narad %q: still writing to a stdout nobody reads 30s after the stop", c.args)
		}
	}
}
