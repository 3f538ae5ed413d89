package iostreams

import (
	"bytes"
	"errors"
	"io"
	"os"
	"time"
)

// ErrReaderStuck is what a write to stderr returns once the stop came and its reader
// still takes nothing.
var ErrReaderStuck = errors.New("its reader stopped reading")

// stuckWait is how long, once the stop came, a write waits more for a reader that
// takes nothing before it is given up; after that, writes do not wait at all while
// that one is still stuck. Short: the stop it serves is the second Ctrl-C.
const stuckWait = 200 * time.Millisecond

// StderrGivesUpAt makes writes to stderr stop waiting for its reader once stop is
// closed. A stderr that is a pipe nobody reads (`2> >(sleep 60)`), or a terminal
// sent ^S, blocks every write once it is full; the last lines of a run (its
// counters, the handles to paste) would then hold the process for as long as that
// reader pleases, past the second Ctrl-C. A stderr that never blocks (a file,
// /dev/null) is left as it is.
func (s *IOStreams) StderrGivesUpAt(stop <-chan struct{}) {
	if s.errFile == nil || NeverBlocks(s.errFile) {
		return
	}
	s.ErrOut = newGiveUpWriter(s.ErrOut, stop)
}

// StdoutGivesUpAt is StderrGivesUpAt for stdout: a command whose output waits on a
// pipe nobody reads (`| sleep 60` sent no signal of its own, a reader that stopped)
// must still end at the second signal. Whoever asks what stdout is (a pipe to probe,
// a terminal to size) asks Unwrap(Out).
func (s *IOStreams) StdoutGivesUpAt(stop <-chan struct{}) {
	if s.outFile == nil || NeverBlocks(s.outFile) {
		return
	}
	s.Out = newGiveUpWriter(s.Out, stop)
}

// Unwrap is the writer underneath w: through every writer that says what it wraps
// (an Unwrap method, as a stream made to give up on a stuck reader has), else w. What
// probes a pipe's reader or a terminal's size, or asks whether two streams are one
// file, needs the file itself.
func Unwrap(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// GiveUpAt is w, or, when w is a file whose writes may wait for a reader (a pipe, a
// terminal), w made to stop waiting for that reader once stop is closed, as stderr
// does at the hard stop (StderrGivesUpAt): a command that writes what it reads to a
// stdout nobody reads must still end at a signal.
func GiveUpAt(w io.Writer, stop <-chan struct{}) io.Writer {
	w = Unwrap(w) // a stop of its own, sooner than the stream's
	if _, ok := w.(*os.File); !ok || NeverBlocks(w) {
		return w
	}
	return newGiveUpWriter(w, stop)
}

// NeverBlocks reports whether writes to w finish without waiting for a reader: a
// regular file or /dev/null. A write to anything else (a pipe, a terminal that was
// sent ^S, a socket) may block for as long as its reader pleases.
func NeverBlocks(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	if st.Mode().IsRegular() {
		return true
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && (os.SameFile(st, null) || sameDevice(st, null))
}

// giveUpWriter passes writes on to w, one at a time, until stop is closed; from then
// on a write that waits for w's reader is given up after stuckWait, and while it is
// still on its way the writes after it are dropped at once.
type giveUpWriter struct {
	w    io.Writer
	stop <-chan struct{}
	// free holds a token while no write is on its way: a write that was given up
	// keeps it until w took it, and nothing else is written before then.
	free chan struct{}
}

func newGiveUpWriter(w io.Writer, stop <-chan struct{}) *giveUpWriter {
	g := &giveUpWriter{w: w, stop: stop, free: make(chan struct{}, 1)}
	g.free <- struct{}{}
	return g
}

// Unwrap is the writer underneath, for those who ask what file stderr is (whether it
// is stdout's).
func (g *giveUpWriter) Unwrap() io.Writer { return g.w }

type written struct {
	n   int
	err error
}

func (g *giveUpWriter) Write(p []byte) (int, error) {
	select {
	case <-g.free:
	case <-g.stop:
		select {
		case <-g.free:
		default:
			return 0, ErrReaderStuck
		}
	}
	// A copy: a write given up returns while w may still be reading from it, and
	// the caller may use p again.
	buf := bytes.Clone(p)
	done := make(chan written, 1)
	go func() {
		n, err := g.w.Write(buf)
		g.free <- struct{}{}
		done <- written{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-g.stop:
	}
	t := time.NewTimer(stuckWait)
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
		return 0, ErrReaderStuck
	}
}
