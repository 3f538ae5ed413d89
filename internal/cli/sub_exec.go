package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/supervisor"
)

// ExecOptions are exec mode's flags (sub TOPIC -- COMMAND), the canary's too; they
// are validated only with a Command, where a zero Lease means the topic's visibility
// timeout and a zero MaxAttempts no dead-lettering.
type ExecOptions struct {
	// Command, when not nil, is exec mode: run it per message.
	Command           []string
	Concurrency       int
	Lease             time.Duration
	KillGrace         time.Duration
	AckExitCodes      []int
	RetryDelay        time.Duration
	RetryDelayMax     time.Duration
	MaxAttempts       int
	MaxProcessingTime time.Duration
	Prefix            bool
}

// addExecFlags adds the flags only exec mode (and the canary) reads.
func addExecFlags(cmd *cobra.Command, opts *SubOptions, typed *subFlags) {
	fl := cmd.Flags()
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 1, "exec mode: commands at once")
	fl.DurationVar(&opts.Lease, "lease", 0, "exec mode: lease length: extended every D/3, lost after D with no extend confirmed (default: the topic's visibility timeout)")
	fl.DurationVar(&opts.KillGrace, "kill-grace", 10*time.Second, "exec mode: time between SIGTERM and SIGKILL")
	fl.StringVar(&typed.ackExitCodes, "ack-exit-codes", "0", "exec mode: exit codes that ack, comma separated")
	blankNeeds(fl, "ack-exit-codes", "exit codes", "a comma list of 0..255, e.g. 0,3; leave the flag out for 0")
	fl.DurationVar(&opts.RetryDelay, "retry-delay", 0, "exec mode: hold a failed message this long before giving it back")
	fl.DurationVar(&opts.RetryDelayMax, "retry-delay-max", time.Minute, "exec mode: longest hold of a message that fails again (2s, 4s, ... up to D)")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", 0, "exec mode, with --dead-letter: failures of one message before it is dead-lettered")
	fl.DurationVar(&opts.MaxProcessingTime, "max-processing-time", 5*time.Minute, "exec mode: stop a command after D and nack")
	fl.BoolVar(&opts.Prefix, "prefix", false, "exec mode: put [pN @OFFSET] before each line the command writes")
}

// execOnlyFlags are meaningless without a command; naming one without it is a mistake.
var execOnlyFlags = []string{"concurrency", "lease", "kill-grace", "ack-exit-codes", "retry-delay",
	"max-processing-time", "prefix", "retry-delay-max", "max-attempts", "dead-letter", "dead-letter-format"}

// validateExec checks exec mode's flags (the canary's too, whose own refusals
// validatePeek made).
func (opts *SubOptions) validateExec(changed func(string) bool) error {
	if opts.NoAck {
		return usageErrorf("--no-ack cannot be used with a command (exit codes decide the settlement)")
	}
	for _, name := range outputFlagNames {
		if changed(name) {
			return usageErrorf("output flags do not apply with a command (its own output passes through)")
		}
	}
	switch {
	case opts.Concurrency < 1 || opts.Concurrency > consumer.MaxBatch:
		return usageErrorf("--concurrency must be 1..100, not %d", opts.Concurrency)
	case changed("lease") && opts.Lease < 30*time.Millisecond:
		return usageErrorf("--lease must be at least 30ms")
	case opts.KillGrace <= 0 || opts.MaxProcessingTime <= 0:
		return usageErrorf("--kill-grace and --max-processing-time must be positive")
	case opts.RetryDelay < 0:
		return usageErrorf("--retry-delay must not be negative")
	case opts.RetryDelayMax <= 0:
		return usageErrorf("--retry-delay-max must be positive")
	case changed("max-attempts") && opts.MaxAttempts < 1:
		return usageErrorf("--max-attempts must be at least 1")
	case (opts.MaxAttempts > 0) != (opts.DeadLetter != ""):
		// Never a silent drop: after the last attempt the message must go somewhere.
		return usageErrorf("--max-attempts and --dead-letter go together (after N failures the message goes to the dead-letter topic)")
	case opts.DeadLetter == opts.Topic:
		return usageErrorf("--dead-letter must be another topic than %s (a dead letter there would be taken again: %s-dlq, say)",
			render.Escape(opts.Topic), render.Escape(opts.Topic))
	}
	if opts.DeadLetter != "" {
		if err := validateTopicName(opts.DeadLetter); err != nil {
			return err
		}
	}
	return nil
}

// resolveExec reads --ack-exit-codes and looks the command up, once the flags passed.
func (opts *SubOptions) resolveExec(ackExitCodes string) error {
	codes, err := parseExitCodes(ackExitCodes)
	if err != nil {
		return err
	}
	opts.AckExitCodes = codes
	return findCommand(opts.Command[0])
}

// execRun is exec mode, sub TOPIC -- COMMAND: the consume loop hands each message to
// the supervisor, which runs the command for it and settles it by its exit.
func execRun(opts *SubOptions) error {
	if err := opts.refuseClosedStdout(); err != nil {
		return err
	}
	start := opts.Now()
	stopWatch := func() {}
	defer func() { stopWatch() }()
	return consumeRun(opts, func(c *client.Client, co *consumer.Options, m *subMetrics) (consumer.Handler, *supervisor.Supervisor, error) {
		if opts.DeadLetter != "" {
			co.DeadLetterUndecodable = func(ctx context.Context, msg *client.Message) error {
				return deadLetterAsSent(ctx, c, opts.DeadLetter, msg)
			}
		}
		// The run keeps the leases of running commands, at the lease the supervisor's
		// options were resolved with.
		sup, lease, err := newSupervisor(c, opts, m.wireSupervisor)
		if err != nil {
			return nil, nil, err
		}
		if opts.Timeout > 0 {
			// --timeout counts from the start: the topic info above is part of the run.
			co.Timeout = max(opts.Timeout-opts.Now().Sub(start), time.Nanosecond)
		}
		co.Lease = lease
		// A reader of stdout that went away while the run waits for messages ends it,
		// as a command's write that finds it gone does.
		stopWatch = watchReaderGone(opts.IO.Out, sup.ReaderGone)
		announceExec(c, opts)
		return sup, sup, nil
	})
}

// findCommand refuses a command that cannot be found: it would fail every message
// it is given, and give each back to be taken again, so nothing is taken for it.
func findCommand(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		why := "not found"
		switch {
		case errors.Is(err, exec.ErrNotFound):
			why = "not found in $PATH"
		case errors.Is(err, fs.ErrPermission):
			why = "not executable"
		case errors.Is(err, syscall.EISDIR):
			why = "a directory" // it exists: "not found" would send the user looking for it
		}
		return usageErrorf("cannot run %s: %s", render.Escape(name), why)
	}
	return nil
}

func parseExitCodes(s string) ([]int, error) {
	var codes []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || n > 255 {
			return nil, usageErrorf("invalid --ack-exit-codes %q (a comma list of 0..255)", s)
		}
		codes = append(codes, n)
	}
	if len(codes) == 0 {
		// No code that acks would nack every message, each to be taken again.
		return nil, usageErrorf("invalid --ack-exit-codes %q (a comma list of 0..255)", s)
	}
	return codes, nil
}

// newSupervisor builds the exec-mode handler and says the lease to keep: --lease, else
// the topic's visibility timeout, read from topic info.
// tune, if any, adds to the supervisor's options.
func newSupervisor(c *client.Client, opts *SubOptions, tune ...func(*supervisor.Options)) (*supervisor.Supervisor, time.Duration, error) {
	// The topic's visibility timeout is the lease, unless --lease says otherwise; a
	// --lease longer than it is refused, where the topic can be read: the node gives
	// a message to another consumer once its visibility timeout passed without an
	// extend, so extends every --lease/3 would lose every lease of a longer command.
	t, err := lookTopic(c, opts)
	lease := opts.Lease
	if lease == 0 {
		if err != nil {
			return nil, 0, opts.apiFatal(c, err, opts.Topic)
		}
		lease = t.VisibilityTimeout()
		if lease <= 0 {
			lease = 30 * time.Second
		}
	} else if err == nil {
		// A topic this consumer may not read (or a node that did not answer) leaves
		// --lease as given: that is what the flag is for.
		if v := t.VisibilityTimeout(); v > 0 && lease > v {
			return nil, 0, usageErrorf("--lease %s is longer than %s's visibility timeout of %s, after which a message with no extend goes to another consumer (use --lease %s or less)",
				roundDuration(lease), render.Escape(opts.Topic), roundDuration(v), roundDuration(v))
		}
	}
	if err := opts.checkDeadLetter(c, opts.DeadLetter); err != nil {
		return nil, 0, err
	}
	so := commandOptions(c, opts)
	so.RetryDelay, so.RetryDelayMax = opts.RetryDelay, opts.RetryDelayMax
	so.MaxAttempts, so.DeadLetter, so.DeadLetterFormat = opts.MaxAttempts, opts.DeadLetter, opts.DeadLetterFormat
	so.Producer = c
	so.CountMessages = opts.Count > 0
	so.HoldFailuresToEnd = opts.Drain
	for _, t := range tune {
		t(&so)
	}
	s, err := supervisor.New(so)
	if err != nil {
		return nil, 0, usageErrorf("%v", err)
	}
	return s, lease, nil
}

// lookTopic reads the topic's info, bounded by the client's attempts, --timeout and
// the first signal: nothing is held or running yet, so the first signal ends the look
// (a node that takes the connection and never answers would hold it for minutes of
// retries).
func lookTopic(c *client.Client, opts *SubOptions) (*client.Topic, error) {
	sctx, cancel := opts.Context()
	defer cancel()
	ctx, cancelT := withTimeout(sctx, opts.Timeout)
	defer cancelT()
	return c.Topic(ctx, opts.Topic)
}

// commandOptions are how a command is run per message, in exec mode and the canary
// alike: what runs, how many at once, for how long, what its exit means, and what it
// is told (NARAD_*).
func commandOptions(c *client.Client, opts *SubOptions) supervisor.Options {
	return supervisor.Options{
		Command:           opts.Command,
		Concurrency:       opts.Concurrency,
		MaxProcessingTime: opts.MaxProcessingTime,
		KillGrace:         opts.KillGrace,
		ShutdownGrace:     opts.ShutdownGrace,
		AckExitCodes:      opts.AckExitCodes,
		Topic:             opts.Topic,
		Addr:              c.BaseURL(),
		Env:               opts.commandEnv(os.Environ()),
		Prefix:            opts.Prefix,
		Verbose:           opts.Verbose,
		Stdout:            opts.IO.Out,
		Stderr:            opts.IO.ErrOut,
	}
}

// announceExec is exec mode's banner on a terminal, as plain sub has one: what runs
// for each message, how many at once, and what Ctrl-C does to running commands.
func announceExec(c *client.Client, opts *SubOptions) {
	if !opts.IO.IsStderrTTY() {
		return
	}
	at := "one at a time"
	if opts.Concurrency > 1 {
		at = fmt.Sprintf("%d at a time", opts.Concurrency)
	}
	opts.notice(fmt.Sprintf("running %s for each message of %s (-j %d: %s)",
		render.Escape(strings.Join(opts.Command, " ")), render.Escape(opts.Topic), opts.Concurrency, at))
	opts.notice(fmt.Sprintf("  on %s; Ctrl-C lets running commands finish (up to %s)",
		render.Escape(c.BaseURL()), roundDuration(opts.ShutdownGrace)))
}

// stopNoticer is exec mode's or the canary's: what the first signal waits for.
type stopNoticer interface {
	StopNotice(again string) string
	Say(line string)
}

// announceStop says at the first signal what exec mode still waits for; the func it
// returns ends the watch.
func (e runEnv) announceStop(sup stopNoticer) (stop func()) {
	return e.atFirstSignal(func(line func(string) string) {
		if l := sup.StopNotice(e.again("Ctrl-C again to stop them", "a second signal stops them")); l != "" {
			sup.Say(line(l))
		}
	})
}

// announceTimeout says, once --timeout (left of it from now) has ended the taking while
// commands still run, what the run waits for: up to --shutdown-grace, as after a
// signal, which would otherwise pass without a word. The func it returns ends the
// watch, and its line with it, so nothing it says comes after the run's last line.
func (e runEnv) announceTimeout(timeout, left time.Duration, sup stopNoticer) (stop func()) {
	if timeout <= 0 {
		return func() {}
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
			return
		}
		if l := e.unsignaledStop(sup); l != "" {
			sup.Say("timeout after " + roundDuration(timeout) + ": " + l)
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// announceFatal says, when a fatal error (a topic deleted, credentials refused) ends
// the taking while commands still run, what the run waits for before it exits with
// that error: up to --shutdown-grace, which would otherwise pass without a word.
func (e runEnv) announceFatal(sup stopNoticer) func(error) {
	return func(err error) {
		l := e.unsignaledStop(sup)
		if l == "" {
			return
		}
		// Said from the run's loop, which must go on to stop the commands: a line
		// blocked behind a command's output to a stdout nobody reads is left to
		// the supervisor, which drops it once the stop has come.
		said := make(chan struct{})
		go func() {
			defer close(said)
			sup.Say(render.Escape("narad: "+err.Error()) + "; before exiting, " + l)
		}()
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-said:
		case <-t.C:
		}
	}
}

// unsignaledStop is what a run stopped for another reason than a signal (--timeout,
// a fatal error) still waits for, "" when nothing, or when a signal came first and its
// own line said it. The first signal changes nothing then, the second stops them.
func (e runEnv) unsignaledStop(sup stopNoticer) string {
	if e.Signals.Received() != 0 {
		return ""
	}
	again := "two signals stop them"
	if e.IO.IsStderrTTY() {
		again = "Ctrl-C twice to stop them"
	}
	return sup.StopNotice(again)
}

// execHelp ends sub's help: how failures are retried, and every counter.
const execHelp = `

A command that fails is nacked at once; when the same message fails again in this run
it is held (its lease kept) 2s, 4s, ... up to --retry-delay-max before it is given
back, with a line on stderr per failure. --max-attempts N --dead-letter TOPIC: its
N-th failure produces the payload (same key) to TOPIC and acks it; with
--dead-letter-format envelope, a JSON object instead that says where it came from and
why it failed: topic, partition, offset, key, attempts, exit_code (null when it did
not exit on its own), stderr_tail (its last 4 KiB of stderr), timestamp, payload (as
-o json shows it). The command sees NARAD_ATTEMPT: 1 for a message's first run in this
process, 2 for the next (after a failure, or a run that succeeded but came back: its
ack refused, its lease lost, a stop), ...; --max-attempts counts failures only.

With --count N, exec mode stops once N messages are finished: acked, dead-lettered,
or given up (a lost lease; a failure, unless --max-attempts retries it). A message
that fails and comes back is the same message, not a new one. Exit 0 if all N were
acked or dead-lettered, 4 if a lease was lost and nothing else went wrong, else 1.

Counters (--stats):
  received       messages taken
  acked          acks the node confirmed
  nacked         messages given back
  failed         commands that failed or could not start, and
                 settlements never confirmed
  timed_out      commands stopped after --max-processing-time
  lease_lost     leases gone (410, or no extend confirmed for a whole
                 lease): nothing settled
  ack_gone       acks answered 410: the message may be delivered again
  retries        settlement requests sent again (502, 503, no answer)
  bugs           second settlements of one message, refused
  dead_lettered  messages produced to --dead-letter, then acked

A canary's counters (--peek -- COMMAND --stats): with --filter or --grep first
the messages read and matched (a command runs per match), then ran, succeeded
(exit 0 or --ack-exit-codes), failed (timed_out, not_started and signaled among
them), stopped (by the shutdown), each exit code seen, and the commands' p50, p95
and max durations. The first signal, or --timeout, stops reading and lets running
commands finish (up to --shutdown-grace); the second signal stops them.`

// deadLetterAsSent produces what the node sent of m with its key to topic, as no
// decoding of it is possible: a string payload's text (the bad base64 itself), any
// other payload as the JSON it is. Those are the bytes a person can look at.
func deadLetterAsSent(ctx context.Context, c *client.Client, topic string, m *client.Message) error {
	po := client.ProduceOptions{Key: m.ForwardKey()}
	body := bytes.TrimSpace(m.Payload)
	var text string
	if len(body) > 0 && body[0] == '"' && json.Unmarshal(body, &text) == nil && text != "" {
		body = []byte(text) // a string's text: the bad base64 itself, not its quotes
	}
	return c.Produce(ctx, topic, body, po)
}

// watchReaderGone calls gone once the reader of the pipe w is (its stdout) went
// away, until the returned func is called; nothing where w is not such a pipe.
func watchReaderGone(w io.Writer, gone func()) (stop func()) {
	ch, stopWatch := consumer.WatchReader(iostreams.Unwrap(w))
	if ch == nil {
		return stopWatch
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			gone()
		case <-done:
		}
	}()
	return func() {
		close(done)
		stopWatch()
	}
}
