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
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// validateInteractive checks the flags hold mode does not take: it shows one message
// at a time on the terminal, and a person settles each.
func (opts *SubOptions) validateInteractive(changed func(string) bool) error {
	switch {
	case opts.Command != nil:
		return usageErrorf("-i cannot run a command (the keys decide each message)")
	case opts.NoAck:
		return usageErrorf("--no-ack does not apply to -i (the keys decide each message)")
	case opts.DeadLetter == opts.Topic:
		return usageErrorf("--dead-letter must be another topic than %s", render.Escape(opts.Topic))
	case opts.Peek && opts.DeadLetter != "":
		return usageErrorf("--dead-letter does not apply to --peek -i (it takes nothing)")
	}
	for _, name := range append([]string{"max", "drain"}, outputFlagNames...) {
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
func holdRun(f *Factory, opts *SubOptions) error {
	if !f.IO.IsStdinTTY() || !f.IO.IsStdoutTTY() {
		// Checked before anything is asked of the node: nothing is taken.
		return usageErrorf("sub -i needs a terminal (stdin and stdout)")
	}
	// The connection's warnings go to the terminal before the screen opens; what the
	// client says later (retry notices, -v, --curl) goes to the screen's note line and
	// is written out once the screen is gone.
	if _, err := f.Connection(); err != nil {
		return err
	}
	lines := &screenLines{}
	fs := *f
	ios := *f.IO
	ios.ErrOut = lines
	fs.IO = &ios
	c, err := fs.Client()
	if err != nil {
		return err
	}
	defer lines.flush(f.IO.ErrOut)
	// The lease, which the screen counts down: topic info also says at once that the
	// topic is not there, before the screen opens.
	ctx, cancel := context.WithTimeout(f.Signals.Hard, 30*time.Second)
	t, err := c.Topic(ctx, opts.Topic)
	cancel()
	if err != nil {
		return f.runEnv().apiFatal(c, err, opts.Topic)
	}
	lease := t.VisibilityTimeout()
	if err := checkDeadLetter(f, c, opts.DeadLetter); err != nil {
		return err
	}

	color := f.IO.ColorEnabled()
	profile := colorprofile.Ascii
	if color {
		profile = colorprofile.ANSI
	}
	ended := make(chan struct{})
	var p *tea.Program
	feed := hold.NewFeed(func(m tea.Msg) { p.Send(m) }, ended)
	model := hold.New(hold.Options{
		Topic: opts.Topic, Lease: lease, Peek: opts.Peek, DeadLetter: opts.DeadLetter,
		Produce: func(ctx context.Context, topic string, body []byte, key *string) error {
			return c.Produce(ctx, topic, body, client.ProduceOptions{Key: key})
		},
		Letter: holdLetter(opts),
		Styles: render.NewStyles(f.IO.Out, color), UTC: opts.Output.UTC,
		Ready: feed.Ready, Done: feed.Done,
	})
	// The first signal stops the run as it stops plain sub (what is held goes back);
	// the keys' own Ctrl-C is the model's. The second signal is the hard stop, which
	// ends the program too.
	p = tea.NewProgram(model, tea.WithInput(f.IO.In), tea.WithOutput(f.IO.Out),
		tea.WithoutSignalHandler(), tea.WithColorProfile(profile), tea.WithContext(f.Signals.Hard))
	var final tea.Model
	var perr error
	lines.start(p.Send, ended)
	go func() {
		defer close(ended)
		final, perr = p.Run()
	}()
	stop := make(chan struct{})
	go func() {
		select {
		case <-f.Signals.Soft:
		case <-ended:
		}
		close(stop)
	}()

	var res consumer.Result
	if opts.Peek {
		err = holdPeek(f, c, opts, feed, ended)
	} else {
		co := consumer.Options{
			Topic: opts.Topic, Partition: opts.Partition, Wait: opts.Wait, Max: 1,
			Count: opts.Count, Timeout: opts.Timeout, Stop: stop,
			// The same keeper as plain sub's: a message on screen is extended at a third
			// of its lease for as long as it is there.
			Lease: lease,
			OnNodeLost: func(err error) {
				p.Send(hold.NodeLost{Err: errors.New(describeErr(err))})
			},
			OnNodeBack: func() { p.Send(hold.NodeBack{}) },
		}
		res, err = consumer.Run(f.Signals.Hard, c, feed, co)
	}
	p.Send(hold.Stop{}) // the run is over: whatever is held goes back, the screen closes
	<-ended
	lines.flush(f.IO.ErrOut)
	if perr != nil && !errors.Is(perr, tea.ErrProgramKilled) {
		return exitWith(ExitFailed, fmt.Errorf("terminal: %v", perr))
	}
	if m, ok := final.(hold.Model); ok {
		fmt.Fprintln(f.IO.ErrOut, m.Summary())
	}
	if opts.Peek {
		return err
	}
	if opts.Stats != "" {
		// The summary line above is the terminal's; the counters only when asked for.
		printStats(f, opts.Stats, res.Stats, err != nil && res.Reason == consumer.StopFailed)
	}
	writeRunLeftovers(f, opts.Topic, res)
	if err != nil && res.Reason == consumer.StopFailed {
		return f.runEnv().apiFatal(c, err, opts.Topic)
	}
	if res.Reason == consumer.StopInterrupted && f.Signals.Received() == 0 {
		// q is how hold mode ends, not an interruption: what happened to the messages
		// decides the exit code (4 for a lease that was gone).
		res.Reason = consumer.StopDrained
	}
	switch res.Outcome() {
	case consumer.OutcomeOK, consumer.OutcomeInterrupted:
		return nil
	case consumer.OutcomeCountUnmet:
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", opts.Timeout, res.Stats.Received, opts.Count))
	case consumer.OutcomeLeaseGone:
		return leaseGoneError(res)
	}
	return exitWith(ExitFailed, fmt.Errorf("%s", failureSummary(res, nil)))
}

// holdPeek feeds the screen from replay reads of the partitions' tails: nothing is
// taken. It ends when the screen is gone, at a signal, or at --timeout.
func holdPeek(f *Factory, c *client.Client, opts *SubOptions, feed *hold.Feed, ended <-chan struct{}) error {
	ro := peekReplay(f, opts)
	ctx, cancel := f.Context()
	defer cancel()
	if opts.Timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, opts.Timeout)
		defer cancelT()
	}
	go func() {
		<-ended
		cancel()
	}()
	_, err := replay.Run(ctx, c, ro, feed.Peek(ctx, replay.ErrStop))
	switch {
	case ctx.Err() != nil, errors.Is(err, replay.ErrStop):
		return nil
	case errors.Is(err, replay.ErrNoSuchPartition):
		return usageErrorf("%v", err)
	case err != nil:
		return f.runEnv().apiFatal(c, err, opts.Topic)
	}
	return nil
}

// screenLines takes what would be written on stderr while the screen owns the
// terminal: each line goes to the screen, and all of them (up to screenLinesMax) are
// written out once it is gone.
type screenLines struct {
	mu    sync.Mutex
	send  func(tea.Msg)
	ended <-chan struct{}
	part  []byte
	kept  bytes.Buffer
}

const screenLinesMax = 1 << 20

func (s *screenLines) start(send func(tea.Msg), ended <-chan struct{}) {
	s.mu.Lock()
	s.send, s.ended = send, ended
	s.mu.Unlock()
}

func (s *screenLines) Write(p []byte) (int, error) {
	s.mu.Lock()
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
// showed the message, exit_code null, stderr_tail empty.
func holdLetter(opts *SubOptions) func(*client.Message, int) ([]byte, error) {
	if opts.DeadLetterFormat != supervisor.FormatEnvelope {
		return nil
	}
	return func(m *client.Message, seen int) ([]byte, error) {
		return supervisor.Envelope(m, opts.Topic, supervisor.Failure{Attempts: seen})
	}
}
