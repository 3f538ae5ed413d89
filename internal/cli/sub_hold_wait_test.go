package cli

import (
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// holdOnANodeThatNeverAnswers starts sub -i (terminals on stdin and stdout, the screen
// not open yet) against a node that takes the connection and never answers, and
// returns its Factory, its stderr, and its exit code once it ends.
func holdOnANodeThatNeverAnswers(t *testing.T) (*Factory, <-chan struct{}, *lockedWriter, <-chan int) {
	t.Helper()
	url, took := acceptingNode(t)
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
	ios, _, _, _ := iostreams.Test()
	ios.SetTTY(true, true, true)
	errOut := &lockedWriter{w: &strings.Builder{}}
	ios.ErrOut = errOut
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	done := make(chan int, 1)
	go func() { done <- Run(f, []string{"sub", "t", "-i", "-s", url}) }()
	return f, took, errOut, done
}

// Before its screen opens, sub -i has taken nothing: the first Ctrl-C ends its look
// at the topic, as it ends every command that holds nothing. It waited for the
// look's own 30s, or a second signal.
func TestHoldFirstSignalEndsTheLookBeforeTheScreen(t *testing.T) {
	f, took, errOut, done := holdOnANodeThatNeverAnswers(t)
	<-took
	f.Signals.Trigger(syscall.SIGINT)
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	// Ended by the signal, whose exit code says it: no line of a look that timed out.
	if s := errOut.String(); s != "" {
		t.Errorf("stderr %q, want nothing: the look waited for its own timeout, past the signal", s)
	}
}

// lockedWriter is w for writers on many goroutines (the notices', the run's).
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// Before its screen opens, what sub -i's client says (a node that does not answer)
// is on stderr at once: it was kept for after the screen, so the run said nothing
// until the look gave up.
func TestHoldSaysAtOnceWhatItWaitsForBeforeTheScreen(t *testing.T) {
	f, _, errOut, done := holdOnANodeThatNeverAnswers(t)
	const line = "narad: topic: no answer from "
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(errOut.String(), line) {
		select {
		case code := <-done:
			t.Fatalf("exit %d before a word on stderr of what it waits for; stderr %q", code, errOut)
		case <-tick.C:
		}
	}
	f.Signals.Trigger(syscall.SIGINT)
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	if s := errOut.String(); strings.Count(s, line) != 1 {
		t.Errorf("stderr %q, want the line once", s)
	}
}

// A look with a bound of its own (sub -i's at the topic, with no --timeout given)
// that the node never answers ends saying that bound ran out, not --timeout, which
// the user did not give.
func TestHoldLookSaysItsOwnBound(t *testing.T) {
	was := lookBound
	lookBound = 50 * time.Millisecond
	t.Cleanup(func() { lookBound = was })
	_, _, errOut, done := holdOnANodeThatNeverAnswers(t)
	if code := <-done; code != ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	if s := errOut.String(); !strings.Contains(s, "narad: topic: no answer within "+roundDuration(lookBound)+" (") || strings.Contains(s, "--timeout") {
		t.Errorf("stderr %q: want the look's own bound said, and no --timeout", s)
	}
}
