// Package supervisor is exec mode of `narad sub TOPIC -- COMMAND`: a consumer.Handler
// that runs the command once per message and turns the way it ended into exactly one
// settlement. The run's lease keeper (package consumer) keeps every message's lease
// while its command runs, in batches; a lease it finds lost (Delivery.Lost) stops the
// command. It owns the child processes: their process groups are stopped (SIGTERM,
// then SIGKILL) and waited for, so no child outlives the run.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
)

// Producer is the part of *client.Client a dead-letter topic needs.
type Producer interface {
	Produce(ctx context.Context, topic string, body []byte, o client.ProduceOptions) error
}

// Options configure a Supervisor. Zero durations take the defaults shown.
type Options struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Concurrency is how many commands may run at once (default 1). As many failed
	// messages again may be held waiting out their retry delay.
	Concurrency int
	// MaxProcessingTime stops a command that runs longer and nacks its message
	// (default 5m).
	MaxProcessingTime time.Duration
	// KillGrace is how long a stopped command has between SIGTERM and SIGKILL
	// (default 10s).
	KillGrace time.Duration
	// ShutdownGrace is how long running commands may finish after the soft stop
	// before they are stopped and nacked (default 30s).
	ShutdownGrace time.Duration
	// RetryDelay holds a failed message's lease (still extended) this long before the
	// nack, so it is not offered again sooner; 0 nacks a first failure at once.
	RetryDelay time.Duration
	// RetryBackoff is the base of the hold for a message that fails again in this
	// run: its n-th failure holds it RetryBackoff·2^(n-1) (default 1s, so the second
	// failure holds 2s, the third 4s), capped at RetryDelayMax (default 1m).
	RetryBackoff, RetryDelayMax time.Duration
	// MaxAttempts, with DeadLetter, is how many failures of one message this process
	// allows: the last one produces the payload (same key) to DeadLetter through
	// Producer and acks the original. 0 means no limit.
	MaxAttempts int
	DeadLetter  string
	Producer    Producer
	// DeadLetterFormat is FormatRaw (the default: the payload as it was) or
	// FormatEnvelope (see Envelope); envelope keeps the end of every command's stderr.
	DeadLetterFormat string
	// AckWindow is how long the ack of a finished command waits for the acks of
	// others to share one request (default 5ms; the run's keeper keeps the lease
	// meanwhile); a negative window acks each on its own.
	AckWindow time.Duration
	// HoldFailuresToEnd (--drain) holds a message whose command failed, its lease
	// kept, until the run ends, and then gives it back, unless MaxAttempts will try it
	// again: a drain ends once nothing else is ready, where a failure given back
	// was ready again at once and the drain never ended.
	HoldFailuresToEnd bool
	// AckExitCodes are exit codes that ack besides 0.
	AckExitCodes []int
	// CountMessages makes the Supervisor count the messages it finishes for the
	// consumer's Count (see consumer.Pipelining's Counted, and tally): a message retried
	// under MaxAttempts is one message, however many attempts it takes.
	CountMessages bool
	// Topic is NARAD_TOPIC for a message that does not name its topic.
	Topic string
	// Addr is NARAD_ADDR for the command.
	Addr string
	// Prefix puts "[p4 @0] " before each line the command writes.
	Prefix bool
	// Verbose adds the last lines a failed command wrote on stderr to its failure line.
	Verbose bool
	// Stdout and Stderr receive the commands' output, whole lines at a time (nil
	// discards); Stderr also gets a line per failure.
	Stdout, Stderr io.Writer
	// Env is the environment the NARAD_* variables are added to; nil means os.Environ().
	Env []string
	// Decode turns a message into the command's stdin; nil means
	// (*client.Message).PayloadBytes.
	Decode func(*client.Message) ([]byte, error)
	// OnCommand, when set, is told how long each command that started ran, however it
	// ended (the metrics' duration histogram). It is called from many goroutines.
	OnCommand func(took time.Duration)
}

// Supervisor runs a command per delivery. It serves one consumer.Run.
type Supervisor struct {
	o        Options
	envelope bool   // DeadLetterFormat is FormatEnvelope
	path     string // the command's program, looked up once; "" to look it up per start
	acks     map[int]bool
	env      []string
	out      *output
	attempts *attempts
	runs     *runs
	// drainClock times the output drain after a command exits (see child.reap).
	drainClock drainClock
	tally      *tally // nil unless CountMessages
	acker      *consumer.Acker
	failures   atomic.Int64 // commands that failed (not timed out)

	sem chan struct{} // a token per running command

	mu      sync.Mutex
	waiting int // leases held waiting for a run slot
	running int // commands started and not yet ended
	holding int // leases held after a failure, waiting out the retry delay
	changed chan struct{}

	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopping  chan struct{} // soft stop: give back what has not started
	graceOver chan struct{} // ShutdownGrace has passed since the soft stop

	// The commands' output going nowhere: closed is EPIPE (the reader of stdout went
	// away, closing outGone once), outErr any other write error, or the command that
	// cannot be run at all (see cannotRun). Either ends the run: nothing is taken for
	// output that cannot be written, or for a command that cannot start.
	outOnce sync.Once
	outGone chan struct{}
	outErr  error // guarded by mu
}

// New checks o and returns a Supervisor.
func New(o Options) (*Supervisor, error) {
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return nil, errors.New("supervisor: no command")
	case o.Concurrency < 0:
		return nil, errors.New("supervisor: concurrency must be at least 1")
	case o.RetryDelay < 0 || o.RetryBackoff < 0 || o.RetryDelayMax < 0:
		return nil, errors.New("supervisor: retry delays must not be negative")
	case o.MaxAttempts < 0:
		return nil, errors.New("supervisor: max attempts must not be negative")
	case (o.MaxAttempts > 0) != (o.DeadLetter != ""):
		return nil, errors.New("supervisor: max attempts and a dead-letter topic go together")
	case o.DeadLetter != "" && o.Producer == nil:
		return nil, errors.New("supervisor: a dead-letter topic needs a producer")
	case o.DeadLetterFormat != "" && o.DeadLetterFormat != FormatRaw && o.DeadLetterFormat != FormatEnvelope:
		return nil, fmt.Errorf("supervisor: unknown dead-letter format %q", o.DeadLetterFormat)
	}
	o.Concurrency = orDefault(o.Concurrency, 1)
	o.MaxProcessingTime = orDefault(o.MaxProcessingTime, 5*time.Minute)
	o.KillGrace = orDefault(o.KillGrace, 10*time.Second)
	o.ShutdownGrace = orDefault(o.ShutdownGrace, 30*time.Second)
	o.RetryBackoff = orDefault(o.RetryBackoff, time.Second)
	o.RetryDelayMax = orDefault(o.RetryDelayMax, time.Minute)
	o.AckWindow = orDefault(o.AckWindow, defaultAckWindow)
	if o.Decode == nil {
		o.Decode = (*client.Message).PayloadBytes
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	acks := map[int]bool{0: true}
	for _, c := range o.AckExitCodes {
		acks[c] = true
	}
	stopping := make(chan struct{})
	// A search of PATH per message cost more than the rest of a start; a program
	// that is not found now is looked for again at each start, which reports why.
	path, err := exec.LookPath(o.Command[0])
	if err != nil {
		path = ""
	}
	var t *tally
	if o.CountMessages {
		t = newTally()
	}
	return &Supervisor{
		o:          o,
		envelope:   o.DeadLetterFormat == FormatEnvelope,
		tally:      t,
		path:       path,
		acks:       acks,
		env:        baseEnv(env),
		attempts:   newAttempts(),
		runs:       newRuns(),
		drainClock: drainClock{afterFunc: time.AfterFunc, sleep: time.Sleep},
		acker:      consumer.NewAcker(consumer.AckerOptions{Window: o.AckWindow}),
		out:        newOutput(o.Stdout, o.Stderr, stopping),
		sem:        make(chan struct{}, o.Concurrency),
		changed:    make(chan struct{}, 1),
		stopping:   stopping,
		graceOver:  make(chan struct{}),
		outGone:    make(chan struct{}),
	}, nil
}

// defaultAckWindow gathers the acks of short commands run in parallel into a few
// requests while adding no delay a person or a lease would notice.
const defaultAckWindow = 5 * time.Millisecond

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Slots waits until a run slot is free and says how many more messages can be
// taken: at most Concurrency waiting or running, and at most twice that in all
// counting the messages held after a failure, so a poison message waiting out its
// backoff does not stop the others while failures cannot pile up leases.
func (s *Supervisor) Slots(ctx context.Context) (int, error) {
	for {
		if chans.Closed(s.outGone) {
			// The run stops at once for it (see OutputGone), cancelling ctx.
			<-ctx.Done()
			return 0, ctx.Err()
		}
		if err := s.outputError(); err != nil {
			return 0, err
		}
		s.mu.Lock()
		busy := s.waiting + s.running
		free := min(s.o.Concurrency-busy, 2*s.o.Concurrency-busy-s.holding)
		s.mu.Unlock()
		if free > 0 {
			return free, nil
		}
		select {
		case <-s.changed:
		case <-s.outGone:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Running is how many commands are running now.
func (s *Supervisor) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Failures is how many commands failed (a code that does not ack, or could not be
// started) in this run; timed-out commands are counted by the consumer's timed_out.
func (s *Supervisor) Failures() int64 { return s.failures.Load() }

// Say writes a line of narad's own on stderr, between the commands' lines.
func (s *Supervisor) Say(line string) { s.out.line(context.Background(), line) }

// OutputGone is closed once a command's stdout found its reader gone (EPIPE: `| head`
// exited): the run then stops taking, gives back what has not started, and exits as
// print mode does at a closed output (not a failure).
func (s *Supervisor) OutputGone() <-chan struct{} { return s.outGone }

// ReaderGone says the reader of the commands' stdout went away while nothing was
// written (a pipe whose reader exited while the run waits for messages): the run ends
// as at a write that found it gone (OutputGone).
func (s *Supervisor) ReaderGone() { s.outOnce.Do(func() { close(s.outGone) }) }

// outputFailed notes a failed write of a command's output.
func (s *Supervisor) outputFailed(err error) {
	if consumer.IsClosedOutput(err) {
		s.outOnce.Do(func() { close(s.outGone) })
		return
	}
	s.update(func() {
		if s.outErr == nil {
			s.outErr = fmt.Errorf("cannot write the commands' output: %w", err)
		}
	})
}

// outputError is why nothing more can be taken: an ErrOutputClosed once the
// commands' output is gone, the first other write error, or a command that cannot be
// run at all.
func (s *Supervisor) outputError() error {
	if chans.Closed(s.outGone) {
		return fmt.Errorf("%w: the reader of stdout went away", consumer.ErrOutputClosed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outErr
}

// Pipelining: exec mode takes nothing ahead of free slots (that would hold leases it
// promises not to hold), keeps every P (its commands' fork, exec and wait are system
// calls that hold one), stops the run when a command's stdout found its reader gone,
// and with Options.CountMessages counts Count itself, in messages finished.
func (s *Supervisor) Pipelining() consumer.Pipelining {
	pl := consumer.Pipelining{OutputGone: s.outGone}
	if s.tally != nil {
		pl.Counted = s.tally.counted
	}
	return pl
}

// Handle starts handling each delivery in its own goroutine and returns at once; once
// the output is gone (see OutputGone, outputError) it gives them back instead.
func (s *Supervisor) Handle(ctx context.Context, ds []consumer.Delivery) error {
	if err := s.outputError(); err != nil {
		_ = consumer.NackAll(ds, consumer.GiveBack)
		return err
	}
	for _, d := range ds {
		if s.tally != nil {
			// Before Handle returns, so the loop never takes more than Count needs.
			s.tally.take(keyOf(d.Message()))
		}
		s.update(func() { s.waiting++ })
		s.wg.Add(1)
		go s.process(ctx, d)
	}
	return nil
}

// Finish waits for every delivery to be settled. When stopping closes it gives back
// what has not started and lets running commands finish for ShutdownGrace; ctx's
// cancellation stops them at once.
func (s *Supervisor) Finish(ctx context.Context, stopping <-chan struct{}) error {
	all := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(all)
	}()
	defer s.acker.Close() // every ack was answered: its ackers end
	select {
	case <-all:
		return nil
	case <-stopping:
	case <-ctx.Done():
	}
	s.stop()
	t := time.AfterFunc(s.o.ShutdownGrace, func() { close(s.graceOver) })
	defer t.Stop()
	<-all
	return nil
}

func (s *Supervisor) stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// update changes the slot counts under the lock and wakes Slots.
func (s *Supervisor) update(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// ending is how a command's run ended.
type ending int

const (
	exited    ending = iota // on its own; see the exit code
	notRun                  // could not be started
	leaseLost               // the keeper found its lease lost (Delivery.Lost)
	timedOut                // MaxProcessingTime
	stopped                 // the shutdown grace ran out, or the hard stop
)

// result is one run of the command.
type result struct {
	end  ending
	code int           // the exit code when exited, -1 for a signal
	how  string        // what ended it, for a failure line: "exit 1", "signal: killed", ...
	took time.Duration // from start to end
	tail string        // the last lines of its stderr, with Verbose
	// stderr is the end of its stderr as written, for an envelope.
	stderr []byte
	// outErr is the first write of its stdout that failed: what it printed was lost.
	outErr error
	// startErr is why the command could not be started, when that was the end.
	startErr error
}

// process carries one delivery from lease to settlement.
func (s *Supervisor) process(ctx context.Context, d consumer.Delivery) {
	defer s.wg.Done()
	finished := notFinished
	if s.tally != nil {
		defer func() { s.tally.end(keyOf(d.Message()), finished) }()
	}
	// The run's keeper extends the lease until the settlement, and closes lost if it
	// finds it gone or certainly lapsed.
	lost := d.Lost()

	// Wait for a run slot. Normally one is free at once: the loop asks for no more
	// than there are. A stop first means the message is given back, not started.
	started := false
	select {
	case s.sem <- struct{}{}:
		// Nothing starts once the run is ending for the output or a command that
		// cannot run (see outputError): it is given back.
		started = !chans.Closed(s.stopping) && ctx.Err() == nil && s.outputError() == nil
		if !started {
			<-s.sem
		}
	case <-lost:
	case <-s.stopping:
	case <-ctx.Done():
	}
	if !started {
		s.update(func() { s.waiting-- })
		finished = s.giveBack(ctx, d)
		return
	}
	s.update(func() { s.waiting--; s.running++ })
	r := s.run(ctx, d.Message(), lost)
	<-s.sem
	if s.o.OnCommand != nil && r.end != notRun {
		s.o.OnCommand(r.took)
	}
	finished = s.settle(ctx, d, r)
}

// isLost reports whether the keeper found d's lease lost (and settled it so).
func isLost(d consumer.Delivery) bool { return chans.Closed(d.Lost()) }

// settle turns a run's result into the delivery's one settlement; a failure may
// first hold the message (its lease kept) for the retry delay. It says how the message
// ended for the tally: finished, or given back to be tried again.
func (s *Supervisor) settle(ctx context.Context, d consumer.Delivery, r result) finish {
	switch {
	case r.end == notRun && r.startErr != nil:
		return s.notStarted(ctx, d, r)
	case r.end == exited && r.outErr != nil:
		return s.outputLost(ctx, d, r)
	case r.end == exited && s.acks[r.code]:
		// The work is done: ack it. (Had the keeper found the lease lost meanwhile, it
		// settled it as lease_lost, and this sends nothing the node would refuse.) The
		// lease is kept until the ack has its answer: an ack retried through a 502/503
		// outage must not let the node deliver the message again meanwhile.
		s.ended()
		s.attempts.forget(keyOf(d.Message()))
		s.acker.AckWait(d)
		return finishedOK
	case r.end == leaseLost || isLost(d):
		s.ended()
		s.letGo(ctx, d, r)
		return finishedLost
	case r.end == stopped:
		s.ended()
		// Said before the node confirmed it, so as what is being done: a nack that
		// never gets an answer ends in the paste block of unconfirmed handles.
		s.out.notice(ctx, d.Message(), r.describe()+": giving it back")
		_ = d.Nack(consumer.Declined)
		return notFinished
	}
	return s.failed(ctx, d, r)
}

// ended frees the running command's count (not its slot: see process).
func (s *Supervisor) ended() { s.update(func() { s.running-- }) }

// outputLost settles a command whose output could not be written (all of it: read
// r.outErr once done): never acked, whatever it did.
func (s *Supervisor) outputLost(ctx context.Context, d consumer.Delivery, r result) finish {
	s.ended()
	if consumer.IsClosedOutput(r.outErr) {
		// Its output went nowhere (the reader of stdout is gone): not handled, so
		// given back, as print mode gives back a line it could not write.
		_ = d.Nack(consumer.GiveBack)
		return notFinished
	}
	// What it wrote was lost (a full disk).
	s.out.notice(ctx, d.Message(), fmt.Sprintf("%s, but its output could not be written (%v): nacked", r.describe(), r.outErr))
	_ = d.Nack(consumer.Failed)
	return notFinished
}

// notStarted settles a delivery whose command could not be started: the message was
// not tried, so it is never dead-lettered for it, whatever --max-attempts says; it is
// given back (held first, as a failure is, when it comes again). A command that cannot
// be run at all has ended the run (see cannotRun): its messages are given back at once.
func (s *Supervisor) notStarted(ctx context.Context, d consumer.Delivery, r result) finish {
	s.failures.Add(1)
	if cannotEverRun(r.startErr) {
		s.ended()
		s.out.notice(ctx, d.Message(), r.describe()+": given back")
		_ = d.Nack(consumer.Failed)
		return notFinished
	}
	f := failure{why: consumer.Failed, n: s.attempts.add(keyOf(d.Message()), time.Now())}
	f.attempt = fmt.Sprintf("attempt %d", f.n)
	return s.retryLater(ctx, d, r, f, "nacked")
}

// cannotRun ends the run when err says the command cannot be run at all (a script
// without a #! line, a program removed or made not executable since the start): it
// would fail every message, each given back and taken again, or with --max-attempts
// dead-letter them all.
func (s *Supervisor) cannotRun(err error) {
	if !cannotEverRun(err) {
		return
	}
	why := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		why = pe.Err
	}
	hint := ""
	if errors.Is(err, syscall.ENOEXEC) {
		hint = " (a script needs a first line such as #!/bin/sh)"
	}
	s.update(func() {
		if s.outErr == nil {
			s.outErr = fmt.Errorf("cannot run %s: %v%s", s.o.Command[0], why, hint)
		}
	})
}

// cannotEverRun reports whether a start failed for a reason no retry mends: the
// program, or the interpreter its #! line names, is not there or not runnable.
// Running out of processes, memory or file descriptors is not such a reason.
func cannotEverRun(err error) bool {
	if errors.Is(err, exec.ErrNotFound) {
		return true
	}
	for _, e := range []error{syscall.ENOEXEC, syscall.ENOENT, syscall.EACCES, syscall.EPERM,
		syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// failed settles a failure: a code that does not ack, a message that could not be
// passed to the command, or one that ran too long. The last allowed attempt is dead-lettered; any other is
// nacked, after holding the message for its retry delay.
func (s *Supervisor) failed(ctx context.Context, d consumer.Delivery, r result) finish {
	why := consumer.Failed
	if r.end == timedOut {
		why = consumer.TimedOut
	} else {
		s.failures.Add(1)
	}
	f := failure{why: why, n: s.attempts.add(keyOf(d.Message()), time.Now())}
	f.attempt = fmt.Sprintf("attempt %d", f.n)
	if s.o.MaxAttempts > 0 && f.n <= s.o.MaxAttempts {
		f.attempt = fmt.Sprintf("attempt %d of %d", f.n, s.o.MaxAttempts)
	}
	verdict := "nacked"
	if s.o.MaxAttempts > 0 && f.n >= s.o.MaxAttempts {
		how, err := s.deadLetter(ctx, d.Message(), f.n, r)
		if err == nil {
			return s.deadLettered(ctx, d, r, f, how)
		}
		verdict = fmt.Sprintf("cannot produce to %s (%v): nacked", s.o.DeadLetter, err)
	}
	return s.retryLater(ctx, d, r, f, verdict)
}

// failure is one failed attempt of a message: how its settlement counts it, and which
// attempt of the message it was (n, and in words for its line on stderr).
type failure struct {
	why     consumer.Cause
	n       int
	attempt string
}

// deadLettered acks a message copied to the dead-letter topic after its last attempt.
// how is what the line adds on the letter's form ("" for the form asked for).
func (s *Supervisor) deadLettered(ctx context.Context, d consumer.Delivery, r result, f failure, how string) finish {
	s.ended()
	if isLost(d) {
		// The copy is made but the original may come again (and be copied again).
		s.letGo(ctx, d, r)
		return finishedLost
	}
	s.attempts.forget(keyOf(d.Message()))
	s.out.notice(ctx, d.Message(), fmt.Sprintf("%s: produced to %s%s and acked (%s)%s", r.describe(), s.o.DeadLetter, how, f.attempt, r.tailText()))
	// As for an ack, the lease is kept while this one is retried.
	_ = d.DeadLettered(f.why)
	return finishedOK
}

// retryLater nacks a message after its failure f; the message is first held, its
// lease kept, for the retry delay (none at a stop or once the lease is lost). verdict
// is what is done with it, for its line on stderr.
func (s *Supervisor) retryLater(ctx context.Context, d consumer.Delivery, r result, f failure, verdict string) finish {
	hold := s.holdFor(f.n)
	park := s.o.HoldFailuresToEnd && s.o.MaxAttempts == 0
	if chans.Closed(s.stopping) || ctx.Err() != nil || isLost(d) {
		hold, park = 0, false
	}
	if park {
		// Held until the run ends: not among the holds that bound the slots, since
		// the drain takes no message twice and so cannot pile them up.
		hold = 0
		verdict += " at the end of the drain"
	}
	// A held message keeps its lease but not its run slot: see Slots.
	s.update(func() {
		s.running--
		if hold > 0 {
			s.holding++
		}
	})
	if hold > 0 {
		verdict += ", next try in " + consumer.ShortDuration(hold)
	}
	s.out.notice(ctx, d.Message(), fmt.Sprintf("%s: %s (%s)%s", r.describe(), verdict, f.attempt, r.tailText()))
	if hold > 0 {
		s.waitHold(ctx, d.Lost(), hold)
		defer s.update(func() { s.holding-- })
	}
	if park {
		d.Park()
		s.waitHold(ctx, d.Lost(), -1)
	}
	if isLost(d) {
		s.letGo(ctx, d, r)
		return finishedLost
	}
	_ = d.Nack(f.why)
	if s.o.MaxAttempts > 0 {
		return notFinished // its next attempts are to come, and at the last it is dead-lettered
	}
	return finishedError
}

// giveBack settles a delivery that never ran; finished when its lease was lost (the
// run gives it up), not when it went back.
func (s *Supervisor) giveBack(ctx context.Context, d consumer.Delivery) finish {
	if isLost(d) {
		s.out.notice(ctx, d.Message(), fmt.Sprintf("not started: %s; nothing settled, it may be delivered again", d.LostWhy()))
		return finishedLost
	}
	_ = d.Nack(consumer.GiveBack)
	return notFinished
}

// letGo settles nothing for a delivery whose lease is gone: the keeper settled it as
// lost, since the message may be with another consumer already, and any settlement of
// ours would be refused (410).
func (s *Supervisor) letGo(ctx context.Context, d consumer.Delivery, r result) {
	what := r.describe()
	if r.end == leaseLost {
		what = fmt.Sprintf("stopped after %.2fs", r.took.Seconds())
	}
	s.out.notice(ctx, d.Message(), fmt.Sprintf("%s: %s; nothing settled, it may be delivered again", what, d.LostWhy()))
}

// waitHold holds the lease for d (a negative d: until the stop), or less at a stop or
// once lost closes.
func (s *Supervisor) waitHold(ctx context.Context, lost <-chan struct{}, d time.Duration) {
	var over <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		over = t.C
	}
	select {
	case <-over:
	case <-lost:
	case <-s.stopping:
	case <-ctx.Done():
	}
}

// deadLetter produces m's payload, or its envelope after n failures ending in r, with
// its key, to the dead-letter topic; how says when the letter is not in the form asked
// for (an envelope too big for the node goes as the payload alone).
func (s *Supervisor) deadLetter(ctx context.Context, m *client.Message, n int, r result) (how string, err error) {
	body, err := s.o.Decode(m)
	if err != nil {
		// Not decodable as the node described it: keep what the node sent.
		body = m.Payload
	}
	if s.envelope {
		f := Failure{Attempts: n, Stderr: r.stderr}
		if r.end == exited && r.code >= 0 {
			code := r.code
			f.ExitCode = &code
		}
		var replaced int
		if body, replaced, err = EnvelopeOrPayload(m, s.o.Topic, f, body); err != nil {
			return "", err
		}
		if replaced > 0 {
			how = payloadAlone(replaced)
		}
	}
	return how, s.o.Producer.Produce(ctx, s.o.DeadLetter, body, client.ProduceOptions{Key: m.ForwardKey()})
}

// run runs the command for m and waits for it to end one way or another; lost closing
// (its lease is gone; nil for a canary, which holds none) stops it.
func (s *Supervisor) run(ctx context.Context, m *client.Message, lost <-chan struct{}) result {
	stdin, err := s.o.Decode(m)
	if err != nil {
		return result{end: notRun, how: fmt.Sprintf("cannot decode the payload (%v)", err)}
	}
	if why := unpassable(m); why != "" {
		return result{end: notRun, how: why}
	}
	began := time.Now()
	c, err := s.start(m, stdin)
	if err != nil {
		s.cannotRun(err)
		return result{end: notRun, how: fmt.Sprintf("cannot start %s (%v)", s.o.Command[0], err), startErr: err}
	}
	limit := time.NewTimer(s.o.MaxProcessingTime)
	defer limit.Stop()
	r := result{end: exited}
	select {
	case <-c.done:
	case <-lost:
		r.end = leaseLost
		c.terminate(ctx, s.o.KillGrace)
	case <-limit.C:
		r.end = timedOut
		c.terminate(ctx, s.o.KillGrace)
	case <-s.graceOver:
		r.end = stopped
		c.terminate(ctx, s.o.KillGrace)
	case <-ctx.Done():
		r.end = stopped
		c.kill(ctx)
	}
	r.took = time.Since(began)
	if r.end == exited {
		// Its output is all passed on, or failed, once done is closed.
		<-c.done
	}
	r.outErr = c.writeError()
	r.code = c.exitCode()
	r.how = c.how()
	if s.o.Verbose {
		r.tail = c.tail.String()
	}
	if s.envelope {
		r.stderr = c.tail.bytes()
	}
	return r
}

// StopNotice is the line for the first signal when commands are running: what the
// soft stop waits for and how to cut it short (again); "" when none runs.
func (s *Supervisor) StopNotice(again string) string {
	n := s.Running()
	if n == 0 {
		return ""
	}
	what := "1 running command"
	if n > 1 {
		what = fmt.Sprintf("%d running commands", n)
	}
	return fmt.Sprintf("waiting for %s (up to %s); %s", what, consumer.ShortDuration(s.o.ShutdownGrace), again)
}
