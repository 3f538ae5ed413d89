package supervisor

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stuckWriter is a stdout nobody reads: a write blocks until release is closed.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// A command's line blocked on a stdout nobody reads does not hold up narad's own lines
// on a stderr of its own: at a stop they used to wait a second each for the one lock
// and were then dropped, so the user saw nothing and the second Ctrl-C took seconds.
func TestStuckStdoutDoesNotHoldUpStderr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stdout := stuckWriter{release: make(chan struct{})}
		var stderr bytes.Buffer
		quit := make(chan struct{})
		o := newOutput(stdout, &stderr, quit)
		var pumps sync.WaitGroup
		pumps.Go(func() {
			o.pump(strings.NewReader("a line of the command's\n"), o.stdout, o.outLock, "", false, nil, nil, nil)
		})
		synctest.Wait() // the pump is stuck in its write, holding stdout's lock
		close(quit)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		o.line(ctx, "[p0 @1] interrupted: given back")
		if got := stderr.String(); got != "[p0 @1] interrupted: given back\n" {
			t.Errorf("stderr %q", got)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the line waited %v for a lock stdout held", waited)
		}
		close(stdout.release)
		pumps.Wait()
	})
}

// Where stdout and stderr are one file (a terminal, 2>&1), one lock keeps their lines
// whole; once a line of narad's own gave up on it at a stop, the next does not wait
// again, so a stop with several lines to say is not held up a second for each.
func TestOneStuckFileHoldsUpAStopOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := stuckWriter{release: make(chan struct{})}
		quit := make(chan struct{})
		o := newOutput(w, w, quit)
		if o.outLock != o.errLock {
			t.Fatal("one writer for both got two locks")
		}
		var pumps sync.WaitGroup
		pumps.Go(func() { o.pump(strings.NewReader("x\n"), o.stdout, o.outLock, "", false, nil, nil, nil) })
		synctest.Wait()
		close(quit)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		o.line(ctx, "first")
		o.line(ctx, "second")
		if waited := time.Since(start); waited != outputDrain {
			t.Errorf("two lines at a stop waited %v, want one outputDrain (%v)", waited, outputDrain)
		}
		close(w.release)
		pumps.Wait()
	})
}

// Two opens of one file share a lock; two files do not.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, a2, b := open("a"), open("a"), open("b")
	var buf bytes.Buffer
	for _, c := range []struct {
		name string
		x, y any
		want bool
	}{
		{"two opens of one file", a, a2, true},
		{"two files", a, b, false},
		{"one buffer", &buf, &buf, true},
		{"a file and a buffer", a, &buf, false},
		{"a file and a wrapper of it", a, wrapper{a2}, true},
		{"a wrapper of another file", wrapper{b}, a, false},
	} {
		x, y := c.x.(interface{ Write([]byte) (int, error) }), c.y.(interface{ Write([]byte) (int, error) })
		if got := sameFile(x, y); got != c.want {
			t.Errorf("%s: sameFile %v, want %v", c.name, got, c.want)
		}
	}
}

// wrapper is a writer that says what it wraps, as stderr does once it gives up on a
// stuck reader at the hard stop.
type wrapper struct{ w io.Writer }

func (w wrapper) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w wrapper) Unwrap() io.Writer           { return w.w }

// At the hard stop (ctx's end) the drain of a killed command's output does not wait
// for a reader that stopped reading: the second Ctrl-C took a second more per command.
func TestHardStopDoesNotWaitForOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exited := make(chan struct{})
		close(exited)
		c := &child{exited: exited, done: make(chan struct{})} // its output never ends
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		c.drain(ctx)
		if waited := time.Since(start); waited != outputDrain {
			t.Errorf("before the stop the drain waited %v, want outputDrain (%v)", waited, outputDrain)
		}
		cancel()
		start = time.Now()
		c.drain(ctx)
		if waited := time.Since(start); waited != 0 {
			t.Errorf("after the hard stop the drain waited %v", waited)
		}
	})
}

// A line longer than maxLine goes out in pieces; another command's line written
// between two pieces used to continue it ("[p0 @0] xxx…[p1 @1] short" and then the
// rest of the x's on a line with no prefix). Now it ends the open line first, and the
// next piece starts a line with its own prefix, so no line is ever two commands'.
func TestALongLineIsNeverContinuedByAnothers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		o := newOutput(&out, io.Discard, make(chan struct{}))
		long, longW := io.Pipe()
		short, shortW := io.Pipe()
		var pumps sync.WaitGroup
		pumps.Go(func() { o.pump(long, o.stdout, o.outLock, "[p0 @0] ", true, nil, nil, nil) })
		pumps.Go(func() { o.pump(short, o.stdout, o.outLock, "[p1 @1] ", true, nil, nil, nil) })
		x := strings.Repeat("x", maxLine)
		go func() { _, _ = io.WriteString(longW, x) }()
		synctest.Wait() // the first piece is out, its line open
		_, _ = io.WriteString(shortW, "short\n")
		_ = shortW.Close()
		synctest.Wait()
		_, _ = io.WriteString(longW, "yyy\n")
		_ = longW.Close()
		pumps.Wait()
		want := "[p0 @0] " + x + "\n[p1 @1] short\n[p0 @0] yyy\n"
		if got := out.String(); got != want {
			t.Errorf("stdout %.60q…%q, want %.60q…%q", got, got[max(0, len(got)-40):], want, want[len(want)-40:])
		}
	})
}

// A last line without a newline: with commands run side by side (join) the next
// command's output starts a line of its own, where it used to continue it
// ("partialnext"); one at a time, the bytes follow as they came (`-- cat` of
// payloads without newlines writes them back to back). A line of narad's own never
// continues a command's.
func TestALastLineWithoutNewline(t *testing.T) {
	for _, c := range []struct {
		join       bool
		next, want string
	}{
		{true, "partial\nnext\n", "partial\nnext\noops\n[p0 @1] exit 1: nacked\n"},
		{false, "partialnext\n", "partialnext\noops\n[p0 @1] exit 1: nacked\n"},
	} {
		var out bytes.Buffer
		o := newOutput(&out, &out, make(chan struct{}))
		o.pump(strings.NewReader("partial"), o.stdout, o.outLock, "", c.join, nil, nil, nil)
		o.pump(strings.NewReader("next\n"), o.stdout, o.outLock, "", c.join, nil, nil, nil)
		if got := out.String(); got != c.next {
			t.Errorf("join %v: stdout %q, want %q", c.join, got, c.next)
		}
		o.pump(strings.NewReader("oops"), o.stderr, o.errLock, "", c.join, nil, nil, nil)
		o.line(context.Background(), "[p0 @1] exit 1: nacked")
		if got := out.String(); got != c.want {
			t.Errorf("join %v: output %q, want %q", c.join, got, c.want)
		}
	}
}
