package iostreams

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// blockedWriter is a stderr whose reader stopped reading: a write waits until release
// is closed, then lands in got.
type blockedWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// Before the stop a write waits for its reader, as any write does; at the stop it is
// given up after stuckWait, the writes after it are dropped at once while it is still
// stuck, and once the reader took it, writes pass again.
func TestGiveUpWriterAtTheStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &blockedWriter{release: make(chan struct{})}
		stop := make(chan struct{})
		g := newGiveUpWriter(w, stop)
		var first error
		var wrote sync.WaitGroup
		wrote.Go(func() { _, first = g.Write([]byte("counters\n")) })
		synctest.Wait()
		start := time.Now()
		time.Sleep(time.Hour) // before the stop nothing is given up
		close(stop)
		wrote.Wait()
		if !errors.Is(first, ErrReaderStuck) {
			t.Fatalf("the stuck write returned %v, want ErrReaderStuck", first)
		}
		if waited := time.Since(start) - time.Hour; waited != stuckWait {
			t.Errorf("the stuck write waited %v after the stop, want stuckWait (%v)", waited, stuckWait)
		}
		start = time.Now()
		if _, err := g.Write([]byte("handles\n")); !errors.Is(err, ErrReaderStuck) {
			t.Errorf("a write behind the stuck one returned %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a write behind the stuck one waited %v", waited)
		}
		close(w.release)
		synctest.Wait() // the reader took the stuck write
		if n, err := g.Write([]byte("after\n")); err != nil || n != len("after\n") {
			t.Errorf("a write once the reader read: %d, %v", n, err)
		}
		if got := w.got.String(); got != "counters\nafter\n" {
			t.Errorf("the reader got %q", got)
		}
	})
}

// After the stop, a stderr that takes what it is given loses nothing.
func TestGiveUpWriterWritesAfterTheStop(t *testing.T) {
	var buf bytes.Buffer
	stop := make(chan struct{})
	close(stop)
	g := newGiveUpWriter(&buf, stop)
	for _, l := range []string{"one\n", "two\n"} {
		if _, err := g.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if buf.String() != "one\ntwo\n" {
		t.Errorf("got %q", buf.String())
	}
}

// A stream that never blocks (a file, /dev/null) is not wrapped; a pipe is.
func TestStreamsGiveUpOnlyWhereTheyCanBlock(t *testing.T) {
	file, null, w := filesOfEachKind(t)
	for _, c := range []struct {
		name    string
		f       *os.File
		wrapped bool
	}{{"a file", file, false}, {"/dev/null", null, false}, {"a pipe", w, true}} {
		s := &IOStreams{Out: c.f, outFile: c.f, ErrOut: c.f, errFile: c.f}
		s.StdoutGivesUpAt(make(chan struct{}))
		s.StderrGivesUpAt(make(chan struct{}))
		if _, got := s.ErrOut.(*giveUpWriter); got != c.wrapped {
			t.Errorf("%s: stderr wrapped %v, want %v", c.name, got, c.wrapped)
		}
		if _, got := s.Out.(*giveUpWriter); got != c.wrapped {
			t.Errorf("%s: stdout wrapped %v, want %v", c.name, got, c.wrapped)
		}
		// What probes the pipe or the terminal gets the file itself.
		if Unwrap(s.Out) != c.f || Unwrap(s.ErrOut) != c.f {
			t.Errorf("%s: Unwrap is not the file", c.name)
		}
	}
}
