package supervisor

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/narad/narad/internal/client"
)

// Canary runs the command once per message it is given, as exec mode does (the same
// start, environment, output, limits and stops), but settles nothing: the messages
// come from replay reads, so there is no lease to keep and nothing to ack or nack,
// and the consumers of the topic never notice. What it counts is how the command did.
type Canary struct {
	s *Supervisor

	mu    sync.Mutex
	stats CanaryStats
	took  []time.Duration // a uniform sample of the durations, at most maxSamples
	seen  int64           // durations offered to the sample
	rng   *rand.Rand
}

// maxSamples bounds the durations kept for the percentiles of a canary that runs
// for weeks: past it, a uniform sample of them (reservoir sampling).
const maxSamples = 1 << 16

// NewCanary checks o as New does; the options that settle (retries, dead-lettering)
// have no meaning for it and must be unset.
func NewCanary(o Options) (*Canary, error) {
	if o.MaxAttempts != 0 || o.DeadLetter != "" || o.RetryDelay != 0 {
		return nil, errors.New("supervisor: a canary takes nothing: no retries or dead letters")
	}
	s, err := New(o)
	if err != nil {
		return nil, err
	}
	return &Canary{s: s, stats: CanaryStats{ExitCodes: map[int]int64{}},
		rng: rand.New(rand.NewPCG(1, 2))}, nil
}

// CanaryStats is what the commands of a canary did.
type CanaryStats struct {
	// Ran is every message the command was run for (or could not be started for):
	// Succeeded + Failed + Stopped.
	Ran, Succeeded, Failed int64
	// Failed in detail, besides the exit codes: stopped after MaxProcessingTime,
	// not started, ended by a signal of their own.
	TimedOut, NotStarted, Signaled int64
	// Stopped is the commands stopped by the shutdown (its grace ran out, or a
	// second signal): neither success nor failure.
	Stopped int64
	// ExitCodes counts each exit status of the commands that exited on their own.
	ExitCodes map[int]int64
	// P50, P95 and Max are the commands' durations, from start to end, of those
	// that started.
	P50, P95, Max time.Duration
}

// Run waits for a run slot, or for read's end (then it returns read's error), and
// runs the command for m in a goroutine of its own, under ctx: ctx's end stops it at
// once. An error means no more can be run: the commands' output is going nowhere
// (consumer.ErrOutputClosed when its reader went away).
func (c *Canary) Run(read, ctx context.Context, m *client.Message) error {
	s := c.s
	if err := s.outputError(); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
		// The command found it cannot run (see cannotRun) while this one waited.
		if err := s.outputError(); err != nil {
			<-s.sem
			return err
		}
	case <-read.Done():
		return read.Err()
	case <-s.outGone:
		return s.outputError()
	}
	s.update(func() { s.running++ })
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r := s.run(ctx, m, nil)
		<-s.sem
		s.update(func() { s.running-- })
		c.note(r)
		if r.end != stopped && !(r.end == exited && s.acks[r.code]) {
			s.out.notice(ctx, m, r.describe()+r.tailText())
		}
	}()
	return nil
}

// note counts r.
func (c *Canary) note(r result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.stats
	st.Ran++
	switch {
	case r.end == stopped:
		st.Stopped++
	case r.end == exited && c.s.acks[r.code]:
		st.Succeeded++
	default:
		st.Failed++
	}
	switch {
	case r.end == notRun:
		st.NotStarted++
	case r.end == timedOut:
		st.TimedOut++
	case r.end == exited && r.code < 0:
		st.Signaled++
	case r.end == exited:
		st.ExitCodes[r.code]++
	}
	if r.end == notRun {
		return
	}
	st.Max = max(st.Max, r.took)
	c.seen++
	if len(c.took) < maxSamples {
		c.took = append(c.took, r.took)
	} else if i := c.rng.Int64N(c.seen); i < maxSamples {
		c.took[i] = r.took
	}
}

// Finish waits for the running commands; once stopping closes they have
// ShutdownGrace to end on their own before they are stopped, and ctx's end stops
// them at once.
func (c *Canary) Finish(ctx context.Context, stopping <-chan struct{}) {
	_ = c.s.Finish(ctx, stopping)
}

// Stats is what the commands did so far.
func (c *Canary) Stats() CanaryStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.ExitCodes = make(map[int]int64, len(c.stats.ExitCodes))
	for k, v := range c.stats.ExitCodes {
		st.ExitCodes[k] = v
	}
	sorted := slices.Clone(c.took)
	slices.Sort(sorted)
	st.P50, st.P95 = percentile(sorted, 50), percentile(sorted, 95)
	return st
}

// percentile is the nearest-rank p-th percentile of sorted, 0 when it is empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// Say writes a line of narad's own on stderr, between the commands' lines.
func (c *Canary) Say(line string) { c.s.Say(line) }

// StopNotice is Supervisor.StopNotice: what the first signal waits for.
func (c *Canary) StopNotice(again string) string { return c.s.StopNotice(again) }

// Running is how many commands run now.
func (c *Canary) Running() int { return c.s.Running() }
