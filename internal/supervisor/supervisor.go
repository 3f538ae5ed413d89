// Package supervisor is exec mode of `narad sub TOPIC -- COMMAND`: a consumer.Handler
// that runs the command once per message, keeps the message's lease alive while it
// runs, and turns the way it ended into exactly one settlement. It owns the child
// processes: their process groups are stopped (SIGTERM, then SIGKILL) and waited for,
// so no child outlives the run.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
)

// Options configure a Supervisor. Zero durations take the defaults shown.
type Options struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Concurrency is how many commands may run at once (default 1).
	Concurrency int
	// Lease is the topic's visibility timeout (or the --lease override); the lease is
	// extended every Lease/3. Required.
	Lease time.Duration
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
	// nack, so it is not offered again sooner; 0 nacks at once.
	RetryDelay time.Duration
	// AckExitCodes are exit codes that ack besides 0.
	AckExitCodes []int
	// Topic is NARAD_TOPIC for a message that does not name its topic.
	Topic string
	// Addr is NARAD_ADDR for the command.
	Addr string
	// Prefix puts "[p4 @0] " before each line the command writes.
	Prefix bool
	// Stdout and Stderr receive the commands' output, whole lines at a time (nil
	// discards).
	Stdout, Stderr io.Writer
	// Env is the environment the NARAD_* variables are added to; nil means os.Environ().
	Env []string
	// Decode turns a message into the command's stdin; nil means
	// (*client.Message).PayloadBytes.
	Decode func(*client.Message) ([]byte, error)
}

// Supervisor runs a command per delivery. It serves one consumer.Run.
type Supervisor struct {
	o    Options
	acks map[int]bool
	env  []string
	out  *output

	sem chan struct{} // a token per running command

	mu      sync.Mutex
	running int // commands started and not yet ended
	held    int // leases held with no command running: waiting for a slot, or in RetryDelay
	changed chan struct{}

	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopping  chan struct{} // soft stop: give back what has not started
	graceOver chan struct{} // ShutdownGrace has passed since the soft stop
}

// New checks o and returns a Supervisor.
func New(o Options) (*Supervisor, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, errors.New("supervisor: no command")
	}
	if o.Lease <= 0 {
		return nil, errors.New("supervisor: the lease duration is required")
	}
	if o.Concurrency < 0 {
		return nil, errors.New("supervisor: concurrency must be at least 1")
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.MaxProcessingTime <= 0 {
		o.MaxProcessingTime = 5 * time.Minute
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 10 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 30 * time.Second
	}
	if o.RetryDelay < 0 {
		return nil, errors.New("supervisor: retry delay must not be negative")
	}
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
	return &Supervisor{
		o:    o,
		acks: acks,
		env:  baseEnv(env),
		out: &output{lock: make(chan struct{}, 1), quit: stopping,
			stdout: orDiscard(o.Stdout), stderr: orDiscard(o.Stderr)},
		sem:       make(chan struct{}, o.Concurrency),
		changed:   make(chan struct{}, 1),
		stopping:  stopping,
		graceOver: make(chan struct{}),
	}, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Slots waits until fewer than Concurrency leases are in use (running or held) and
// says how many more can be taken.
func (s *Supervisor) Slots(ctx context.Context) (int, error) {
	for {
		s.mu.Lock()
		free := s.o.Concurrency - s.running - s.held
		s.mu.Unlock()
		if free > 0 {
			return free, nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Handle starts handling each delivery in its own goroutine and returns at once.
func (s *Supervisor) Handle(ctx context.Context, ds []consumer.Delivery) error {
	for _, d := range ds {
		s.update(func() { s.held++ })
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
	leaseLost               // a 410 on extend
	timedOut                // MaxProcessingTime
	stopped                 // the shutdown grace ran out, or the hard stop
)

// process carries one delivery from lease to settlement.
func (s *Supervisor) process(ctx context.Context, d consumer.Delivery) {
	defer s.wg.Done()
	lease := s.keep(d)
	defer lease.stop()

	// Wait for a run slot. Normally one is free at once: the loop asks for no more
	// than there are. A stop first means the message is given back, not started.
	select {
	case s.sem <- struct{}{}:
		if isClosed(s.stopping) || ctx.Err() != nil {
			<-s.sem
			s.giveBack(d, lease)
			return
		}
	case <-lease.lost:
		s.giveBack(d, lease)
		return
	case <-s.stopping:
		s.giveBack(d, lease)
		return
	case <-ctx.Done():
		s.giveBack(d, lease)
		return
	}
	s.update(func() { s.held--; s.running++ })
	end, code := s.run(ctx, d, lease)

	retry := end == exited && !s.acks[code] && s.o.RetryDelay > 0 && !isClosed(s.stopping) && ctx.Err() == nil
	<-s.sem
	s.update(func() {
		// A message waiting out RetryDelay still holds a lease, so it keeps its slot.
		s.running--
		if retry {
			s.held++
		}
	})
	if retry {
		s.waitRetry(ctx, lease)
		defer s.update(func() { s.held-- })
	}

	// Extends stop before the settlement, so none can land after it.
	lease.stop()
	switch {
	case end == leaseLost || lease.isLost():
		_ = d.LeaseLost()
	case end == exited && s.acks[code]:
		_ = d.Ack()
	case end == exited, end == stopped:
		_ = d.Nack(consumer.Declined)
	case end == notRun:
		_ = d.Nack(consumer.Failed)
	case end == timedOut:
		_ = d.Nack(consumer.TimedOut)
	}
}

// giveBack settles a delivery that never ran.
func (s *Supervisor) giveBack(d consumer.Delivery, lease *leaseKeeper) {
	lease.stop()
	if lease.isLost() {
		_ = d.LeaseLost()
	} else {
		_ = d.Nack(consumer.GiveBack)
	}
	s.update(func() { s.held-- })
}

// waitRetry holds the lease for RetryDelay, or less at a stop or a lost lease.
func (s *Supervisor) waitRetry(ctx context.Context, lease *leaseKeeper) {
	t := time.NewTimer(s.o.RetryDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-lease.lost:
	case <-s.stopping:
	case <-ctx.Done():
	}
}

// run runs the command for d and waits for it to end one way or another.
func (s *Supervisor) run(ctx context.Context, d consumer.Delivery, lease *leaseKeeper) (ending, int) {
	m := d.Message()
	stdin, err := s.o.Decode(m)
	if err != nil {
		s.out.notice(ctx, m, fmt.Sprintf("cannot decode the payload: %v", err))
		return notRun, 0
	}
	c, err := s.start(m, stdin)
	if err != nil {
		s.out.notice(ctx, m, fmt.Sprintf("cannot start %s: %v", s.o.Command[0], err))
		return notRun, 0
	}
	limit := time.NewTimer(s.o.MaxProcessingTime)
	defer limit.Stop()
	select {
	case <-c.done:
		return exited, c.exitCode()
	case <-lease.lost:
		c.terminate(ctx, s.o.KillGrace)
		return leaseLost, 0
	case <-limit.C:
		c.terminate(ctx, s.o.KillGrace)
		return timedOut, 0
	case <-s.graceOver:
		c.terminate(ctx, s.o.KillGrace)
		return stopped, 0
	case <-ctx.Done():
		c.kill()
		return stopped, 0
	}
}

// leaseKeeper extends one delivery's lease every Lease/3 until stopped or lost.
type leaseKeeper struct {
	lost     chan struct{} // closed on a 410
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func (s *Supervisor) keep(d consumer.Delivery) *leaseKeeper {
	// Extends go on through the soft stop (running commands keep their leases during
	// the grace), so they are not tied to the run's context; stop ends them.
	ctx, cancel := context.WithCancel(context.Background())
	k := &leaseKeeper{lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	every := s.o.Lease / 3
	go func() {
		defer close(k.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// An extend that takes a whole lease is too late to matter.
			ectx, cancel := context.WithTimeout(ctx, s.o.Lease)
			err := d.Extend(ectx)
			cancel()
			if errors.Is(err, consumer.ErrLeaseGone) {
				close(k.lost)
				return
			}
			// Any other failure (the client already retried 502/503) is tried again
			// at the next tick; if the lease lapses meanwhile, that extend says 410.
		}
	}()
	return k
}

// stop ends the extends and waits for one in flight, so that no extend can reach
// the broker after the settlement that follows.
func (k *leaseKeeper) stop() {
	k.stopOnce.Do(func() {
		k.cancel()
		<-k.done
	})
}

func (k *leaseKeeper) isLost() bool { return isClosed(k.lost) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
