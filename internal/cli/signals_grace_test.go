package cli

import (
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// The grace of what still settles starts at the run's own timeout as at a first
// signal: settlements retried after a --timeout were given their whole retry budget
// (minutes, against a node that answers 503) instead of --shutdown-grace.
func TestGraceStartsAtTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSignals()
		done := make(chan struct{})
		defer close(done)
		start := time.Now()
		<-s.GraceOr(5*time.Second, 2*time.Second, done)
		if took := time.Since(start); took != 7*time.Second {
			t.Errorf("the grace ended %v after the start, want the timeout and then the grace (7s)", took)
		}
		if end := s.graceEnd(); !end.Equal(start.Add(7 * time.Second)) {
			t.Errorf("graceEnd %v after the start, want 7s", end.Sub(start))
		}
	})
}

// A signal before the timeout starts the grace then; a second one ends it at once.
func TestGraceStartsAtTheFirstOfSignalAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSignals()
		done := make(chan struct{})
		defer close(done)
		start := time.Now()
		grace := s.GraceOr(time.Hour, 2*time.Second, done)
		time.Sleep(time.Second)
		s.Trigger(syscall.SIGINT)
		<-grace
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("the grace ended %v after the start, want the signal and then the grace (3s)", took)
		}

		s = NewSignals()
		start = time.Now()
		grace = s.GraceOr(time.Hour, time.Minute, done)
		s.Trigger(syscall.SIGINT)
		s.Trigger(syscall.SIGINT)
		<-grace
		if took := time.Since(start); took != 0 {
			t.Errorf("after a second signal the grace ended %v later", took)
		}
	})
}
