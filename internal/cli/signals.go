package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/narad/narad/internal/chans"
)

// Signals turns SIGINT/SIGTERM into two stages: the first closes Soft (stop taking
// work, give back what is held, let running work finish) and the second cancels the
// hard context (stop everything now). Commands with nothing to finish treat the first
// signal as hard (see Factory.Context).
type Signals struct {
	Soft chan struct{}
	Hard context.Context

	mu     sync.Mutex
	first  syscall.Signal
	cancel context.CancelFunc
	count  int
	// softAt is when the first signal came; grace is how long the running command
	// gives what still settles after it (Grace), 0 when it gives none.
	softAt time.Time
	grace  time.Duration
	// timedOut is when the run's own timeout came (GraceOr), before any signal: its
	// grace counts from there.
	timedOut time.Time

	// streams is closed when writes to a stdout or stderr nobody reads are given up
	// (Streams): at the second signal, or at the first once the running command said
	// it holds nothing the first signal lets finish (FirstEnds).
	streams       chan struct{}
	streamsClosed bool
	firstEnds     bool

	// process says Listen wires the process's signals (Main); unwire undoes it.
	process bool
	listen  sync.Once
	unwire  func()
}

// NewSignals returns Signals not yet wired to the process (tests call Trigger).
func NewSignals() *Signals {
	ctx, cancel := context.WithCancel(context.Background())
	return &Signals{Soft: make(chan struct{}), Hard: ctx, cancel: cancel, streams: make(chan struct{})}
}

// Streams is closed when a write to a stdout or stderr whose reader takes nothing is
// to be given up (iostreams' StdoutGivesUpAt): at the second signal, or at the first
// for a command that holds nothing (FirstEnds).
func (s *Signals) Streams() <-chan struct{} { return s.streams }

// FirstEnds says the running command holds nothing the first signal would let finish
// (no message leased, no produce on its way: a listing, a read, an admin call), so
// the first signal ends it, even while its output waits on a reader that went away.
// A command that holds work (sub, produce, bench) keeps the two stages: its output
// waits for its reader until the second signal, as the work it finishes is reported.
func (s *Signals) FirstEnds() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.firstEnds = true
	if s.count > 0 {
		s.closeStreams()
	}
}

// closeStreams closes streams once; s.mu is held.
func (s *Signals) closeStreams() {
	if !s.streamsClosed {
		s.streamsClosed = true
		close(s.streams)
	}
}

// Trigger records one signal.
func (s *Signals) Trigger(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	switch s.count {
	case 1:
		s.first, s.softAt = sig, time.Now()
		close(s.Soft)
		if s.firstEnds {
			s.closeStreams()
		}
	default:
		s.cancel()
		s.closeStreams()
	}
}

// Grace is SoftThen for the grace a command gives what still settles after the first
// signal (--shutdown-grace): closed once it is over, and known to the retry notice,
// whose lines then say the sooner of it and the retry budget.
func (s *Signals) Grace(d time.Duration, done <-chan struct{}) <-chan struct{} {
	s.mu.Lock()
	s.grace = d
	s.mu.Unlock()
	return s.SoftThen(d, done)
}

// GraceOr is Grace for a run that also stops by itself after timeout (--timeout; 0:
// never): the grace starts at the first signal or at the timeout, whichever comes
// first, as both stops let what still settles go on for d and no longer.
func (s *Signals) GraceOr(timeout, d time.Duration, done <-chan struct{}) <-chan struct{} {
	if timeout <= 0 {
		return s.Grace(d, done)
	}
	s.mu.Lock()
	s.grace = d
	s.mu.Unlock()
	return afterOr(s.StopOr(timeout, done), d, s.Hard.Done(), done)
}

// StopOr is closed at the first signal or after timeout (0: never), whichever comes
// first: the soft stop of a run that also stops by itself. A timeout that comes first
// is when the grace counts from (graceEnd). done releases it when neither is coming
// any more.
func (s *Signals) StopOr(timeout time.Duration, done <-chan struct{}) <-chan struct{} {
	if timeout <= 0 {
		return s.Soft
	}
	stopped := make(chan struct{})
	go func() {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-s.Soft:
		case <-t.C:
			s.mu.Lock()
			if s.count == 0 && s.timedOut.IsZero() {
				s.timedOut = time.Now()
			}
			s.mu.Unlock()
		case <-done:
			return
		}
		close(stopped)
	}()
	return stopped
}

// graceEnd is when the grace after the first signal (or the run's timeout) ends; the
// zero time before either, or when the command gives none.
func (s *Signals) graceEnd() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.grace <= 0:
		return time.Time{}
	case s.count > 0:
		return s.softAt.Add(s.grace)
	case !s.timedOut.IsZero():
		return s.timedOut.Add(s.grace)
	}
	return time.Time{}
}

// ClearForCleanStop forgets the signal, for servers whose clean stop on SIGINT/SIGTERM
// is success (narad dev exits 0).
func (s *Signals) ClearForCleanStop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.first = 0
}

// Received is the first signal seen, 0 when none.
func (s *Signals) Received() syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// Notify wires the process's SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh
// session, which must not kill us with messages held) to s until stop is called. SIGPIPE
// is caught too, so a write to a closed stdout returns EPIPE instead of killing us
// before held messages are given back (a caught, unlike an ignored, signal is reset
// to the default in the commands the supervisor starts).
func (s *Signals) Notify() (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if sig == syscall.SIGPIPE {
					continue
				}
				s.Trigger(sig.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// ProcessSignals returns Signals for the process: SIGPIPE is ignored at once (a write
// to a closed stdout returns EPIPE), and the rest is wired by Listen, when a command
// that runs asks. An instant command (version, help) never does: registering the
// handlers starts the runtime's signal thread, a tenth of its start-up.
func ProcessSignals() *Signals {
	signal.Ignore(syscall.SIGPIPE)
	s := NewSignals()
	s.process = true
	return s
}

// Listen wires the process's signals to s (see Notify), once; nothing for Signals
// that are not the process's (tests call Trigger).
func (s *Signals) Listen() {
	if s.process {
		s.listen.Do(func() { s.unwire = s.Notify() })
	}
}

// Close undoes Listen.
func (s *Signals) Close() {
	s.listen.Do(func() {}) // no Listen from now on
	if s.unwire != nil {
		s.unwire()
	}
}

// SoftThen is closed d after the first signal, or at the second, whichever comes
// first; done releases it when neither is coming any more.
func (s *Signals) SoftThen(d time.Duration, done <-chan struct{}) <-chan struct{} {
	return afterOr(s.Soft, d, s.Hard.Done(), done)
}

// afterOr is closed d after start is, or as soon as early is (a nil early never is);
// done releases it when neither is coming any more.
func afterOr(start <-chan struct{}, d time.Duration, early, done <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-start:
		case <-early:
			close(ch)
			return
		case <-done:
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			close(ch)
		case <-early:
			close(ch)
		case <-done:
		}
	}()
	return ch
}

// softContext is cancelled at the first signal.
func (s *Signals) softContext() (context.Context, context.CancelFunc) {
	return chans.Context(s.Hard, s.Soft)
}

// withTimeout is ctx bounded by d (a --timeout), or ctx itself, with nothing to
// cancel, when d is 0 (none given).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
