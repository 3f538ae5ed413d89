package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// sub is several commands in one, each mode with its own run function over one core:
//
//	print   sub TOPIC                  printRun   (sub_print.go)
//	exec    sub TOPIC -- COMMAND       execRun    (sub_exec.go)
//	peek    sub TOPIC --peek           peekRun    (sub_peek.go)
//	canary  sub TOPIC --peek -- CMD    canaryRun  (sub_canary.go)
//	hold    sub TOPIC -i [--peek]      holdRun    (sub_hold.go)
//
// The core, here: the flags every mode shares, their validation (then each mode's
// own), the consume loop print and exec mode run (consumeRun), and what a consuming
// run's end says and exits with (subExit).

// SubOptions are sub's flags, resolved: what was given and what was not is in the
// fields themselves (nil pointers, zero durations), so no run function asks cobra.
type SubOptions struct {
	runEnv
	Topic string
	// Partition is nil unless --partition was given.
	Partition *int
	Wait      time.Duration
	Max       int
	Count     int // 0: no limit
	Timeout   time.Duration
	Drain     bool
	NoAck     bool
	Rate      float64 // 0: no limit
	Stats     string  // "", text or json
	// Output is unset in exec mode, where the command's own output passes through.
	Output MessageOutput

	Peek bool
	// Interactive is hold mode (-i): one message at a time on a full screen.
	Interactive   bool
	FromBeginning bool
	// Offset is nil unless --offset was given (with --peek --partition).
	Offset *int64
	// Match is --filter and --grep (--peek only); nil shows every message.
	Match *replay.Matcher
	// Time is --since and --until (with --peek); a zero time was not given.
	Time timeRange

	// ExecOptions are exec mode's and the canary's: a Command, when not nil, is run
	// per message.
	ExecOptions
	// DeadLetter is where exec mode (after --max-attempts) and hold mode (its d key)
	// send a message; "": nowhere.
	DeadLetter       string
	DeadLetterFormat string // raw or envelope
	// ShutdownGrace is how long, after a first signal, running commands, lines in a
	// pipe and acks being retried get to finish.
	ShutdownGrace time.Duration
	// MetricsAddr is --metrics-addr: where /metrics and the probes are served ("": not).
	MetricsAddr string
	// ScreenClient is hold mode's client, whose own lines go to the screen (w).
	ScreenClient func(w io.Writer) (*client.Client, error)
}

// subFlags are the flags of sub that are resolved before they go into SubOptions,
// as typed.
type subFlags struct {
	partition    int
	offset       int64
	ackExitCodes string
	out          outputFlags
	find         findFlags
	times        timeFlags
}

func newSubCmd(f *Factory) *cobra.Command {
	return subCmd(f, subRun)
}

// subCmd parses flags into SubOptions and hands them to run, so tests can check the
// parsing apart from the consuming.
func subCmd(f *Factory, run func(*SubOptions) error) *cobra.Command {
	opts := &SubOptions{}
	var typed subFlags
	cmd := &cobra.Command{
		Annotations: map[string]string{holdsWork: "yes"},
		Use:         "sub TOPIC [flags] [-- COMMAND [ARG...]]",
		Short:       "Consume, print and ack messages, or run a command per message",
		Long: "Consume messages from TOPIC, print each and ack it once its line is written: a real\n" +
			"consumer that competes with the others on the topic. --peek watches without taking.\n" +
			"Through a pipe (Linux) a line is acked once the reader took it, and the next goes into the\n" +
			"pipe only then: `narad sub orders | head -n 2` acks exactly two and gives the rest back.\n" +
			"Past 1,000 lines, lines go in a page at a time, each acked once the reader asks for more.\n\n" +
			"With -- COMMAND, run the command once per message (payload on stdin, NARAD_* in the\n" +
			"environment), extend the lease while it runs, ack on success and nack on failure.\n" +
			"With --peek -- COMMAND (a canary), run it the same way per message read, taking nothing:\n" +
			"no lease, ack or nack, so a new handler is tried on live traffic; exit 1 if any failed." + execHelp,
		Example: "  # Print and ack messages as they come (Ctrl-C to stop)\n" +
			"  narad sub orders\n\n" +
			"  # CI smoke check: exit 0 once a message came, 3 if none within 30s\n" +
			"  narad sub orders --count 1 --timeout 30s\n\n" +
			"  # Payloads to jq, one JSON document a line\n" +
			"  narad sub orders -o json | jq -r '.payload.order_id'\n\n" +
			"  # Watch without taking anything, from the oldest message kept\n" +
			"  narad sub orders --peek --from-beginning\n\n" +
			"  # Watch for failed orders, taking nothing\n" +
			"  narad sub orders --peek --grep failed\n\n" +
			"  # A worker: four commands at once, a message acked when its command\n" +
			"  # exits 0\n" +
			"  narad sub orders -j 4 -- ./handle-order.sh\n\n" +
			"  # Try a new handler on live traffic without taking any: exit 1 if\n" +
			"  # it failed on any of the next 500 messages\n" +
			"  narad sub orders --peek --count 500 -j 4 --stats -- ./handle-v2\n\n" +
			"  # The same worker under systemd (a unit's ExecStart=); SIGTERM lets\n" +
			"  # running commands finish\n" +
			"  ExecStart=/usr/local/bin/narad sub orders -j 4 --shutdown-grace 60s \\\n" +
			"      -- /opt/shop/handle-order",
		Args: minArgs(1, "a topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ScreenClient = f.screenClient
			return runWith(f, opts, run, opts.resolve(cmd, args, &typed, f.Now))
		},
	}
	addSubFlags(cmd, opts, &typed)
	addExecFlags(cmd, opts, &typed)
	return cmd
}

// addSubFlags adds the flags of every mode, and those of --peek and the output.
func addSubFlags(cmd *cobra.Command, opts *SubOptions, typed *subFlags) {
	fl := cmd.Flags()
	fl.IntVar(&typed.partition, "partition", -1, "consume from this partition only")
	fl.DurationVar(&opts.Wait, "wait", 10*time.Second, "long-poll per request (in polls of at most 1s, so a signal never cuts an answer)")
	fl.IntVar(&opts.Max, "max", 100, "messages per request, 1..100")
	fl.IntVar(&opts.Count, "count", 0, "stop after N messages (exec mode: N finished, a message retried counting once)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "stop after D (exit 3 when --count was not reached); without it, a --count run waiting 30s with nothing held says so on stderr")
	fl.BoolVar(&opts.Drain, "drain", false, "stop once the node has nothing ready for this consumer")
	fl.BoolVar(&opts.NoAck, "no-ack", false, "print and leave the leases to lapse")
	fl.Float64Var(&opts.Rate, "rate", 0, "take at most N messages a second (both modes; each request asks for what the limit allows now)")
	fl.StringVar(&opts.Stats, "stats", "", "print counters on stderr at the end: text (a table) or json (default: one line on a terminal)")
	fl.Lookup("stats").NoOptDefVal = "text"
	blankNeeds(fl, "stats", "text or json", "--stats alone is text")
	fl.BoolVar(&opts.Peek, "peek", false, "watch without taking anything (replay reads from the tail)")
	fl.BoolVarP(&opts.Interactive, "interactive", "i", false, "hold mode: take one message at a time, show it full screen, and ack, nack or dead-letter it by key")
	fl.BoolVar(&opts.FromBeginning, "from-beginning", false, "with --peek: start at the oldest retained messages")
	fl.Int64Var(&typed.offset, "offset", -1, "with --peek --partition N: start at this offset")
	typed.times.addFlags(cmd, "with --peek,")
	typed.out.addFlags(cmd)
	typed.find.addFlags(cmd)
	fl.StringVar(&opts.DeadLetter, "dead-letter", "", "exec mode, with --max-attempts: topic a message goes to (then acked) after its last attempt; with -i: where d sends it")
	fl.StringVar(&opts.DeadLetterFormat, "dead-letter-format", "raw", "with --dead-letter: raw (the payload as it was) or envelope (JSON: where it came from, attempts, exit_code, stderr_tail, payload)")
	fl.DurationVar(&opts.ShutdownGrace, "shutdown-grace", 30*time.Second, "after a signal, time running commands, lines in a pipe and acks being retried get to finish (with -i too)")
	fl.StringVar(&opts.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics, /healthz and /readyz on HOST:PORT (both modes; no host: 127.0.0.1)")
	// Taken as none, an unset variable in a unit file would drop exec mode's
	// dead-lettering, or leave the probes and scrapes failing, with no word from narad.
	blankNeeds(fl, "dead-letter", "a topic name", "leave the flag out for none")
	blankNeeds(fl, "metrics-addr", "HOST:PORT", "leave the flag out for none")
	blankOwnChecked(fl, "dead-letter-format")
}

// resolve reads the arguments and the typed flags into opts and checks them
// together: every usage error is found here, before anything runs. now is the clock
// --since and --until are read against.
func (opts *SubOptions) resolve(cmd *cobra.Command, args []string, typed *subFlags, now func() time.Time) error {
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		if dash != 1 {
			if err := statsWordHint(cmd, args[:dash]); err != nil {
				return err
			}
			return usageErrorf("sub takes one topic before -- COMMAND")
		}
		opts.Command = args[1:]
		if len(opts.Command) == 0 {
			return usageErrorf("no command after --")
		}
	} else if len(args) != 1 {
		if err := statsWordHint(cmd, args); err != nil {
			return err
		}
		return usageErrorf("sub takes one topic (put a command after --)")
	}
	opts.Topic = args[0]
	if err := validateTopicName(opts.Topic); err != nil {
		return err
	}
	changed := cmd.Flags().Changed
	if changed("partition") {
		opts.Partition = &typed.partition
	}
	if changed("offset") {
		opts.Offset = &typed.offset
	}
	if err := opts.validate(changed); err != nil {
		return err
	}
	if typed.find.given(changed) && !opts.Peek {
		// Whatever a consumer takes it acks or gives back: one that showed only
		// matches would take the others and hand them straight back, over and over.
		return usageErrorf("--filter and --grep need --peek: a consuming sub would take messages it never shows (narad sub TOPIC --peek --filter ..., or narad replay)")
	}
	var err error
	if opts.Match, err = typed.find.resolve(changed); err != nil {
		return err
	}
	if opts.Time, err = peekTimes(now, typed.out.location(), &typed.times, opts.Peek, changed); err != nil {
		return err
	}
	if opts.Command != nil {
		return opts.resolveExec(typed.ackExitCodes)
	}
	opts.Output, err = typed.out.resolve(changed)
	return err
}

// validate checks the flags together, those of every mode first and then each
// mode's; changed says whether a flag was given.
func (opts *SubOptions) validate(changed func(string) bool) error {
	if err := opts.validateShared(changed); err != nil {
		return err
	}
	if err := opts.validatePeek(changed); err != nil {
		return err
	}
	if opts.Interactive {
		if err := opts.validateHold(changed); err != nil {
			return err
		}
	}
	if opts.Command == nil {
		return opts.validatePrint(changed)
	}
	return opts.validateExec(changed)
}

// validateShared checks the flags every mode reads.
func (opts *SubOptions) validateShared(changed func(string) bool) error {
	switch {
	case opts.Max < 1 || opts.Max > consumer.MaxBatch:
		return usageErrorf("--max must be 1..100, not %d", opts.Max)
	case opts.Count < 0:
		return usageErrorf("--count must not be negative")
	case opts.Wait < 0 || opts.Timeout < 0:
		return usageErrorf("--wait and --timeout must not be negative")
	case opts.Partition != nil && *opts.Partition < 0:
		return usageErrorf("--partition must be 0 or more")
	case opts.Stats != "" && opts.Stats != "text" && opts.Stats != "json":
		return usageErrorf("invalid --stats %q (text or json)", opts.Stats)
	case opts.ShutdownGrace <= 0:
		return usageErrorf("--shutdown-grace must be positive")
	case changed("rate") && !(opts.Rate > 0 && opts.Rate <= 1e9):
		return usageErrorf("--rate must be above 0 (messages a second), not %v", opts.Rate)
	case opts.DeadLetterFormat != supervisor.FormatRaw && opts.DeadLetterFormat != supervisor.FormatEnvelope:
		return usageErrorf("invalid --dead-letter-format %q (raw or envelope)", opts.DeadLetterFormat)
	case changed("dead-letter-format") && opts.DeadLetter == "":
		return usageErrorf("--dead-letter-format needs --dead-letter")
	}
	if opts.MetricsAddr != "" && (opts.Peek || opts.Interactive) {
		return usageErrorf("--metrics-addr is for workers: not with --peek or -i (narad sub TOPIC [-- COMMAND] --metrics-addr HOST:PORT)")
	}
	return nil
}

// validatePrint checks plain sub's flags: those of exec mode are a mistake without
// a command (hold mode's d key takes --dead-letter too).
func (opts *SubOptions) validatePrint(changed func(string) bool) error {
	for _, name := range execOnlyFlags {
		if changed(name) && !(opts.Interactive && (name == "dead-letter" || name == "dead-letter-format")) {
			return usageErrorf("--%s needs a command: narad sub TOPIC [flags] -- COMMAND", name)
		}
	}
	return nil
}

// subRun runs the mode the flags chose.
func subRun(opts *SubOptions) error {
	if opts.Interactive {
		return holdRun(opts)
	}
	if opts.Peek {
		// Replay reads: a stream all the same, without the consume loop.
		opts.tune.stream(consumer.Pipelining{})
	}
	switch {
	case opts.Peek && opts.Command != nil:
		return canaryRun(opts)
	case opts.Peek:
		return peekRun(opts)
	case opts.Command != nil:
		return execRun(opts)
	}
	return printRun(opts)
}

// refuseClosedStdout refuses, before anything is taken, a consuming run whose stdout
// was closed (`>&-`): Go's runtime gives it /dev/null, so every line (print mode) or
// command's output (exec mode) would be written into nothing and acked. A usage error,
// like -i without a terminal: the run cannot do what it is for as it was started.
func (opts *SubOptions) refuseClosedStdout() error {
	if !opts.IO.StdoutClosed() {
		return nil
	}
	return usageErrorf("stdout is closed (nothing taken; redirect it to a file, or > /dev/null to discard)")
}

// consumeMode is what a consuming mode adds to the core once the client is there:
// its handler, and in exec mode the supervisor (whose failures the exit line names).
// It may adjust the loop's options.
type consumeMode func(c *client.Client, co *consumer.Options, m *subMetrics) (consumer.Handler, *supervisor.Supervisor, error)

// consumeRun is the run print and exec mode share: the metrics endpoint, the client,
// the consume loop over the shared flags with its notices, the signals (the first
// stops taking; what still settles gets --shutdown-grace; the second abandons it),
// and at the end the counters, the leftovers and the exit code.
func consumeRun(opts *SubOptions, mode consumeMode) error {
	m, err := startMetrics(opts)
	if err != nil {
		return err
	}
	defer m.close()
	retries := &settleRetries{}
	consumes := &consumesOut{}
	heard := &nodeHeard{}
	hooks := append(m.hooks(), retries, consumes, heard)
	var answered *nodeAnswered
	if opts.waitsForCountAlone() {
		answered = &nodeAnswered{}
		hooks = append(hooks, answered)
	}
	c, err := opts.Client(hooks...)
	if err != nil {
		return err
	}
	co := consumer.Options{
		Topic:     opts.Topic,
		Partition: opts.Partition,
		Wait:      opts.Wait,
		Max:       opts.Max,
		Count:     opts.Count,
		Timeout:   opts.Timeout,
		Drain:     opts.Drain,
		NoAck:     opts.NoAck,
		Rate:      opts.Rate,
		Stop:      opts.Signals.Soft,
	}
	co.OnNodeLost, co.OnNodeBack = opts.nodeNotices(c)
	co.OnSurplus = opts.surplusNotice()
	co.OnUndecodable = opts.undecodableNotice
	m.wire(&co)
	defer opts.announceSettleStop(retries, opts.ShutdownGrace)()
	h, sup, err := mode(c, &co, m)
	if err != nil {
		return err
	}
	// Settlements still retrying when the grace after a signal or the timeout ends
	// (for running commands, or lines in a pipe) are given up then, as at a second
	// signal, and listed for pasting. Here, once mode has counted the timeout from
	// where the run starts.
	ran := make(chan struct{})
	defer close(ran)
	co.Abandon = opts.Signals.GraceOr(co.Timeout, opts.ShutdownGrace, ran)
	// At the stop a consume out is waited for (its answer may lease messages, given
	// back once it comes): a node that does not answer holds the run up, and it says so.
	stopped := opts.Signals.StopOr(co.Timeout, ran)
	co.AnswerGrace = consumer.DefaultAnswerGrace
	consumes.stopAt(stopped, ran, co.AnswerGrace)
	stopNote := noteRequestsOut(opts.runEnv, stopped,
		func() bool { return consumes.overdue(stoppingNoticeAfter) },
		func(l string) { _, _ = io.WriteString(opts.IO.ErrOut, l) })
	if sup != nil {
		defer opts.announceStop(sup)()
		co.OnFatal = opts.announceFatal(sup)
	}
	pl := h.Pipelining() // asked for once, as the run asks it
	co.OnSingle = opts.tune.stream(pl)
	stopWaiting := opts.waitingNotice(&co, answered, pl.Counted)
	stopTimeout := func() {}
	if sup != nil {
		stopTimeout = opts.announceTimeout(opts.Timeout, co.Timeout, sup)
	}
	res, err := consumer.Run(opts.Signals.Hard, c, h, co)
	stopNote()
	stopWaiting()
	stopTimeout()
	opts.printStats(opts.Stats, res.Stats, err != nil && res.Reason == consumer.StopFailed)
	opts.writeRunLeftovers(opts.Topic, res)
	if res.Reason == consumer.StopTimeout && !heard.Load() && res.Outcome() == consumer.OutcomeOK {
		// (With --count unmet the exit is --timeout's 3, as it was.)
		return opts.neverAnswered(c, "consume", opts.Topic)
	}
	return subExit(c, opts, res, err, sup)
}

// subExit is the exit of a consuming run (print, exec, hold) from what became of its
// messages; sup is exec mode's supervisor, nil in the others.
func subExit(c *client.Client, opts *SubOptions, res consumer.Result, err error, sup *supervisor.Supervisor) error {
	if err != nil && res.Reason == consumer.StopFailed {
		return opts.apiFatal(c, err, opts.Topic)
	}
	switch res.Outcome() {
	case consumer.OutcomeOK, consumer.OutcomeInterrupted:
		return nil
	case consumer.OutcomeCountUnmet:
		got, what := res.Stats.Received-res.Stats.Nacked, "messages"
		switch {
		case res.Counted:
			got, what = res.Finished, "messages finished"
		case opts.Interactive:
			got = res.Stats.Received // a message skipped (nacked) was still shown
		}
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d %s", opts.Timeout, got, opts.Count, what))
	case consumer.OutcomeLeaseGone:
		return leaseGoneError(res)
	}
	if err != nil {
		return exitWith(ExitFailed, err)
	}
	return exitWith(ExitFailed, fmt.Errorf("%s", failureSummary(res, sup)))
}

// leaseGoneError is the exit of a run whose only trouble was a lease gone: the node
// said 410, or the lease ran out without a confirmed extend (the lines per message
// say which).
func leaseGoneError(res consumer.Result) error {
	n := res.Stats.LeaseLost + res.Stats.AckGone
	what := countOf(n, "lease was gone: that message", "leases were gone: those messages")
	return exitWith(ExitLeaseGone, fmt.Errorf("%s may be delivered again", what))
}

func failureSummary(res consumer.Result, sup *supervisor.Supervisor) string {
	s := res.Stats
	var parts []string
	var commands int64 // counted in failed too
	if sup != nil {
		commands = sup.Failures()
	}
	if commands > 0 {
		parts = append(parts, countOf(commands, "command failed", "commands failed"))
	}
	if res.Declined > 0 {
		parts = append(parts, countOf(res.Declined, "command stopped at shutdown", "commands stopped at shutdown"))
	}
	if s.TimedOut > 0 {
		parts = append(parts, fmt.Sprintf("%d timed out", s.TimedOut))
	}
	if n := s.Failed - commands; n > 0 {
		parts = append(parts, fmt.Sprintf("%d could not be handled or settled", n))
	}
	if s.Bugs > 0 {
		parts = append(parts, countOf(s.Bugs, "double settlement refused (a bug)", "double settlements refused (a bug)"))
	}
	if len(parts) == 0 {
		return "some messages were not handled"
	}
	return strings.Join(parts, ", ")
}

// checkDeadLetter says at start that a --dead-letter topic is not there: it would
// fail only at the last attempt of some message, long after. (Other answers, 403
// for one, are left to the produce: topic info needs a grant the produce does not.)
func (e runEnv) checkDeadLetter(c *client.Client, topic string) error {
	if topic == "" {
		return nil
	}
	// Before anything is taken: the first signal ends the look.
	sctx, cancelS := e.Context()
	defer cancelS()
	ctx, cancel := context.WithTimeout(sctx, 30*time.Second)
	defer cancel()
	if _, err := c.Topic(ctx, topic); client.StatusOf(err) == http.StatusNotFound {
		return e.apiFatal(c, fmt.Errorf("--dead-letter: %w", err), topic)
	}
	return nil
}
