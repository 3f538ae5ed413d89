package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/hold"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// validateHold checks the flags hold mode does not take: it shows one message at a
// time on the terminal, and a person settles each.
func (opts *SubOptions) validateHold(changed func(string) bool) error {
	switch {
	case opts.Command != nil:
		return usageErrorf("-i cannot run a command (the keys decide each message)")
	case opts.NoAck:
		return usageErrorf("--no-ack does not apply to -i (the keys decide each message)")
	case opts.DeadLetter == opts.Topic:
		return usageErrorf("--dead-letter must be another topic than %s (a dead letter there would be taken again: %s-dlq, say)",
			render.Escape(opts.Topic), render.Escape(opts.Topic))
	case opts.Peek && opts.DeadLetter != "":
		return usageErrorf("--dead-letter does not apply to --peek -i (it takes nothing)")
	}
	// --rate paces a stream; the keys pace hold mode. --shutdown-grace applies: after a
	// signal it bounds the acks still being retried, as in plain sub.
	for _, name := range append([]string{"max", "drain", "rate"}, outputFlagNames...) {
		if name != "utc" && changed(name) {
			return usageErrorf("--%s does not apply to -i (one message at a time, on the screen)", name)
		}
	}
	if opts.DeadLetter != "" {
		return validateTopicName(opts.DeadLetter)
	}
	return nil
}

// holdRun is `sub -i`: the consume loop feeds a full-screen program one message at a
// time (package hold), with the leases kept as plain sub keeps them.
func holdRun(opts *SubOptions) error {
	if !opts.IO.IsStdinTTY() || !opts.IO.IsStdoutTTY() {
		// Checked before anything is asked of the node: nothing is taken.
		return usageErrorf("sub -i needs a terminal (stdin and stdout)")
	}
	c, lines, err := holdClient(opts)
	if err != nil {
		return err
	}
	defer lines.flush(opts.IO.ErrOut)
	// The lease, which the screen counts down: topic info also says at once that the
	// topic is not there, before the screen opens. Nothing is taken yet: the first
	// signal ends the look.
	sctx, cancelS := opts.Context()
	ctx, cancel := context.WithTimeout(sctx, lookBound)
	t, err := c.Topic(ctx, opts.Topic)
	err = withinBound(ctx, err)
	cancel()
	cancelS()
	if err != nil {
		return opts.apiFatal(c, err, opts.Topic)
	}
	lease := t.VisibilityTimeout()
	if p := opts.Partition; p != nil && t.Partitions > 0 && *p >= t.Partitions {
		// Said before the screen opens, as a topic that is not there is: the node's
		// 400 (or replay's check) came only once the screen was up, after a summary of
		// a run that never started.
		return usageErrorf("%v: topic %s has partitions 0..%d, not %d (leave --partition out for all of them)",
			replay.ErrNoSuchPartition, render.Escape(opts.Topic), t.Partitions-1, *p)
	}
	if err := opts.checkDeadLetter(c, opts.DeadLetter); err != nil {
		return err
	}
	s := openHoldScreen(c, opts, lease, lines)
	var res consumer.Result
	if opts.Peek {
		err = holdPeek(c, opts, s.feed, s.ended)
	} else {
		res, err = holdConsume(c, opts, lease, s)
	}
	if cerr := s.close(opts, lines); cerr != nil {
		return cerr
	}
	if opts.Peek {
		return err
	}
	if opts.Stats != "" {
		// The screen's summary line is the terminal's; the counters only when asked for.
		opts.printStats(opts.Stats, res.Stats, err != nil && res.Reason == consumer.StopFailed)
	}
	opts.writeRunLeftovers(opts.Topic, res)
	if res.Reason == consumer.StopInterrupted && opts.Signals.Received() == 0 {
		// q is how hold mode ends, not an interruption: what happened to the messages
		// decides the exit code (4 for a lease that was gone).
		res.Reason = consumer.StopDrained
	}
	return subExit(c, opts, res, err, nil)
}

// holdClient is the client of hold mode. The connection's warnings go to the
// terminal before the screen opens; what the client says later (retry notices, -v,
// --curl) goes to the screen's note line, and is written out once the screen is gone.
func holdClient(opts *SubOptions) (*client.Client, *screenLines, error) {
	if _, err := opts.Connection(); err != nil {
		return nil, nil, err
	}
	lines := &screenLines{before: opts.IO.ErrOut}
	c, err := opts.ScreenClient(lines)
	if err != nil {
		return nil, nil, err
	}
	return c, lines, nil
}

// screenClient is f's client with what the client says itself (retry notices, -v,
// --curl) written to w instead of stderr: hold mode's SubOptions.ScreenClient.
func (f *Factory) screenClient(w io.Writer) (*client.Client, error) {
	on := *f
	ios := *f.IO
	ios.ErrOut = w
	on.IO = &ios
	return on.Client()
}

// holdScreen is hold mode's full-screen program, running.
type holdScreen struct {
	p    *tea.Program
	feed *hold.Feed
	// quitting is closed once the screen waits for settlements to quit (a q or
	// Ctrl-C key, which raw mode turns into a key, not a signal).
	quitting     chan struct{}
	quittingOnce sync.Once
	// ended is closed once the program is gone; stop at the first signal, or then.
	ended, stop chan struct{}
	// givenUp is closed once what is still on its way is given up (the grace after a
	// quitting key or a signal is over, or the screen is gone): a dead-letter produce
	// then ends too, as the settlements do, so the quitting line's countdown holds.
	givenUp chan struct{}
	out     *screenOutput // nil when the screen is not on a file
	final   tea.Model
	err     error
}

// openHoldScreen starts the program on the terminal.
func openHoldScreen(c *client.Client, opts *SubOptions, lease time.Duration, lines *screenLines) *holdScreen {
	color := opts.IO.ColorEnabled()
	profile := colorprofile.Ascii
	if color {
		profile = colorprofile.ANSI
	}
	s := &holdScreen{ended: make(chan struct{}), stop: make(chan struct{}), quitting: make(chan struct{}),
		givenUp: make(chan struct{})}
	s.feed = hold.NewFeed(func(m tea.Msg) { s.p.Send(m) }, s.ended)
	model := hold.New(hold.Options{
		Topic: opts.Topic, Lease: lease, Peek: opts.Peek, DeadLetter: opts.DeadLetter,
		Produce: func(ctx context.Context, topic string, body []byte, key *string) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-s.givenUp:
					cancel()
				case <-ctx.Done():
				}
			}()
			return c.Produce(ctx, topic, body, client.ProduceOptions{Key: key})
		},
		Letter: holdLetter(opts),
		Styles: render.NewStyles(opts.IO.Out, color), UTC: opts.Output.UTC,
		Ready: s.feed.Ready, Done: s.feed.Done,
		Quitting:      func() { s.quittingOnce.Do(func() { close(s.quitting) }) },
		ShutdownGrace: opts.ShutdownGrace,
	})
	// The first signal stops the run as it stops plain sub (what is held goes back);
	// the keys' own Ctrl-C is the model's. The second signal is the hard stop, which
	// ends the program too.
	out, screenOut := newScreenOutput(iostreams.Unwrap(opts.IO.Out))
	s.out = screenOut
	s.p = tea.NewProgram(model, tea.WithInput(opts.IO.In), tea.WithOutput(out),
		tea.WithoutSignalHandler(), tea.WithColorProfile(profile), tea.WithContext(opts.Signals.Hard))
	lines.start(s.p.Send, s.ended)
	go func() {
		defer close(s.ended)
		s.final, s.err = s.p.Run()
	}()
	go func() {
		select {
		case <-opts.Signals.Soft:
		case <-s.ended:
		}
		close(s.stop)
	}()
	return s
}

// close ends the program once the run is over (whatever is held goes back, the
// screen closes), writes out what was said meanwhile, and the screen's summary.
func (s *holdScreen) close(opts *SubOptions, lines *screenLines) error {
	s.out.close()
	s.p.Send(hold.Stop{})
	<-s.ended
	lines.flush(opts.IO.ErrOut)
	if s.err != nil && !errors.Is(s.err, tea.ErrProgramKilled) {
		return exitWith(ExitFailed, fmt.Errorf("terminal: %v", s.err))
	}
	if m, ok := s.final.(hold.Model); ok {
		fmt.Fprintln(opts.IO.ErrOut, m.Summary())
	}
	return nil
}

// holdConsume takes one message at a time for the screen.
func holdConsume(c *client.Client, opts *SubOptions, lease time.Duration, s *holdScreen) (consumer.Result, error) {
	// After the first signal, or a first q or Ctrl-C key (the screen's own first
	// signal), an ack still retried gets --shutdown-grace, as in plain sub, not the
	// client's whole retry budget: a person may have walked away, a service manager
	// has no key to press.
	ran := make(chan struct{})
	defer close(ran)
	signalled := opts.Signals.Grace(opts.ShutdownGrace, ran)
	keyed := afterOr(s.quitting, opts.ShutdownGrace, nil, ran)
	abandon := either(s.ended, signalled, keyed)
	go func() {
		<-abandon // closed at the latest once the screen is gone
		close(s.givenUp)
	}()
	co := consumer.Options{
		Topic: opts.Topic, Partition: opts.Partition, Wait: opts.Wait, Max: 1,
		Count: opts.Count, Timeout: opts.Timeout, Stop: s.stop,
		// Once the screen is gone (a second q) or the grace is over, nobody waits for
		// an ack still retried: it is given up at once, and named to send again
		// (Result.Unconfirmed).
		Abandon: abandon,
		// The same keeper as plain sub's: a message on screen is extended at a third
		// of its lease for as long as it is there.
		Lease: lease,
		OnNodeLost: func(err error) {
			s.p.Send(hold.NodeLost{Err: errors.New(describeErr(err))})
		},
		OnNodeBack: func() { s.p.Send(hold.NodeBack{}) },
	}
	return consumer.Run(opts.Signals.Hard, c, s.feed, co)
}

// either is closed once ended, a or b is. Its goroutine ends with the run: ended is
// the screen's end, which every run reaches.
func either(ended, a, b <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		select {
		case <-ended:
		case <-a:
		case <-b:
		}
	}()
	return ch
}

// holdPeek feeds the screen from replay reads of the partitions' tails: nothing is
// taken. It ends when the screen is gone, at a signal, or at --timeout.
func holdPeek(c *client.Client, opts *SubOptions, feed *hold.Feed, ended <-chan struct{}) error {
	ro := peekReplay(opts)
	sctx, cancel := opts.Context()
	defer cancel()
	ctx, cancelT := withTimeout(sctx, opts.Timeout)
	defer cancelT()
	go func() {
		<-ended
		cancel()
	}()
	n, err := replay.Run(ctx, c, ro, feed.Peek(ctx, replay.ErrStop))
	if err == nil {
		// The reads ended (--count, --until): the last message stays on screen until
		// the person moves past it or quits.
		feed.MovedOn(ctx)
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && ro.Count > 0 && n < ro.Count:
		// --timeout before --count, as sub --peek says it (a q or a signal cancels
		// the context instead, and is no timeout).
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", opts.Timeout, n, ro.Count))
	case ctx.Err() != nil, errors.Is(err, replay.ErrStop):
		return nil
	case errors.Is(err, replay.ErrNoSuchPartition):
		return usageErrorf("%v", err)
	case err != nil:
		return opts.apiFatal(c, err, opts.Topic)
	}
	return nil
}

// screenLines takes what would be written on stderr while the screen owns the
// terminal: each line goes to the screen, and all of them (up to screenLinesMax) are
// written out once it is gone. Before the screen opens (start) it goes to before, the
// terminal's stderr, at once: a node that does not answer the first look must not
// keep the run silent until it ends.
type screenLines struct {
	before io.Writer
	mu     sync.Mutex
	send   func(tea.Msg)
	ended  <-chan struct{}
	part   []byte
	kept   bytes.Buffer
}

const screenLinesMax = 1 << 20

func (s *screenLines) start(send func(tea.Msg), ended <-chan struct{}) {
	s.mu.Lock()
	s.send, s.ended = send, ended
	s.mu.Unlock()
}

func (s *screenLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.send == nil && s.before != nil {
		defer s.mu.Unlock() // held, so that the screen opens after this line
		return s.before.Write(p)
	}
	if s.kept.Len() < screenLinesMax {
		s.kept.Write(p)
	}
	s.part = append(s.part, p...)
	var done []string
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		done = append(done, string(s.part[:i]))
		s.part = s.part[i+1:]
	}
	send, ended := s.send, s.ended
	s.mu.Unlock()
	if send != nil {
		for _, l := range done {
			select {
			case <-ended:
			default:
				send(hold.Notice{Text: l})
			}
		}
	}
	return len(p), nil
}

// flush writes what was kept to w, once.
func (s *screenLines) flush(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = w.Write(s.kept.Bytes())
	s.kept.Reset()
}

// holdLetter is d's dead letter with --dead-letter-format envelope, nil for the raw
// payload. A person decided, so no command ran: attempts is how many times this run
// showed the message, exit_code null, stderr_tail empty. An envelope over the node's
// limit goes as the payload alone, as in exec mode: the node would refuse it (413)
// every time, and the message could never be dead-lettered.
func holdLetter(opts *SubOptions) func(*client.Message, []byte, int) ([]byte, int, error) {
	if opts.DeadLetterFormat != supervisor.FormatEnvelope {
		return nil
	}
	return func(m *client.Message, payload []byte, seen int) ([]byte, int, error) {
		return supervisor.EnvelopeOrPayload(m, opts.Topic, supervisor.Failure{Attempts: seen}, payload)
	}
}
