package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// SubOptions are sub's flags, resolved: what was given and what was not is in the
// fields themselves (nil pointers, zero durations), so subRun never asks cobra.
type SubOptions struct {
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

	// Command, when not nil, is exec mode: run it per message.
	Command []string
	// The rest are exec mode's; validated only with a Command, where a zero Lease
	// means the topic's visibility timeout and a zero MaxAttempts no dead-lettering.
	Concurrency       int
	Lease             time.Duration
	KillGrace         time.Duration
	AckExitCodes      []int
	RetryDelay        time.Duration
	RetryDelayMax     time.Duration
	MaxAttempts       int
	DeadLetter        string
	DeadLetterFormat  string // raw or envelope
	MaxProcessingTime time.Duration
	ShutdownGrace     time.Duration
	Prefix            bool
	// MetricsAddr is --metrics-addr: where /metrics and the probes are served ("": not).
	MetricsAddr string
}

func newSubCmd(f *Factory) *cobra.Command {
	return subCmd(f, subRun)
}

// subCmd parses flags into SubOptions and hands them to run, so tests can check the
// parsing apart from the consuming.
func subCmd(f *Factory, run func(*Factory, *SubOptions) error) *cobra.Command {
	opts := &SubOptions{}
	var (
		partition    int
		offset       int64
		ackExitCodes string
		out          outputFlags
		find         findFlags
		times        timeFlags
	)
	cmd := &cobra.Command{
		Use:   "sub TOPIC [flags] [-- COMMAND [ARG...]]",
		Short: "Consume, print and ack messages, or run a command per message",
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
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 {
					return usageErrorf("sub takes one topic before -- COMMAND")
				}
				opts.Command = args[1:]
				if len(opts.Command) == 0 {
					return usageErrorf("no command after --")
				}
			} else if len(args) != 1 {
				return usageErrorf("sub takes one topic (put a command after --)")
			}
			opts.Topic = args[0]
			if err := validateTopicName(opts.Topic); err != nil {
				return err
			}
			changed := cmd.Flags().Changed
			if changed("partition") {
				opts.Partition = &partition
			}
			if changed("offset") {
				opts.Offset = &offset
			}
			if err := opts.validate(changed); err != nil {
				return err
			}
			if find.given(changed) && !opts.Peek {
				// Whatever a consumer takes it acks or gives back: one that showed only
				// matches would take the others and hand them straight back, over and over.
				return usageErrorf("--filter and --grep need --peek: a consuming sub would take messages it never shows (narad sub TOPIC --peek --filter ..., or narad replay)")
			}
			var err error
			if opts.Match, err = find.resolve(changed); err != nil {
				return err
			}
			if opts.Time, err = peekTimes(f, &times, opts.Peek, changed); err != nil {
				return err
			}
			if opts.Command != nil {
				codes, err := parseExitCodes(ackExitCodes)
				if err != nil {
					return err
				}
				opts.AckExitCodes = codes
				if err := findCommand(opts.Command[0]); err != nil {
					return err
				}
			} else {
				o, err := out.resolve(changed)
				if err != nil {
					return err
				}
				opts.Output = o
			}
			return run(f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&partition, "partition", -1, "consume from this partition only")
	fl.DurationVar(&opts.Wait, "wait", 10*time.Second, "long-poll per request (in polls of at most 1s, so a signal never cuts an answer)")
	fl.IntVar(&opts.Max, "max", 100, "messages per request, 1..100")
	fl.IntVar(&opts.Count, "count", 0, "stop after N messages (exec mode: N finished, a message retried counting once)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "stop after D (exit 3 when --count was not reached)")
	fl.BoolVar(&opts.Drain, "drain", false, "stop once the node has nothing ready for this consumer")
	fl.BoolVar(&opts.NoAck, "no-ack", false, "print and leave the leases to lapse")
	fl.Float64Var(&opts.Rate, "rate", 0, "take at most N messages a second (both modes; each request asks for what the limit allows now)")
	fl.StringVar(&opts.Stats, "stats", "", "print counters on stderr at the end: text (a table) or json (default: one line on a terminal)")
	fl.Lookup("stats").NoOptDefVal = "text"
	fl.BoolVar(&opts.Peek, "peek", false, "watch without taking anything (replay reads from the tail)")
	fl.BoolVarP(&opts.Interactive, "interactive", "i", false, "hold mode: take one message at a time, show it full screen, and ack, nack or dead-letter it by key")
	fl.BoolVar(&opts.FromBeginning, "from-beginning", false, "with --peek: start at the oldest retained messages")
	fl.Int64Var(&offset, "offset", -1, "with --peek --partition N: start at this offset")
	times.addFlags(cmd, "with --peek,")
	out.addFlags(cmd)
	find.addFlags(cmd)

	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 1, "exec mode: commands at once")
	fl.DurationVar(&opts.Lease, "lease", 0, "exec mode: lease length: extended every D/3, lost after D with no extend confirmed (default: the topic's visibility timeout)")
	fl.DurationVar(&opts.KillGrace, "kill-grace", 10*time.Second, "exec mode: time between SIGTERM and SIGKILL")
	fl.StringVar(&ackExitCodes, "ack-exit-codes", "0", "exec mode: exit codes that ack, comma separated")
	fl.DurationVar(&opts.RetryDelay, "retry-delay", 0, "exec mode: hold a failed message this long before giving it back")
	fl.DurationVar(&opts.RetryDelayMax, "retry-delay-max", time.Minute, "exec mode: longest hold of a message that fails again (2s, 4s, ... up to D)")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", 0, "exec mode, with --dead-letter: failures of one message before it is dead-lettered")
	fl.StringVar(&opts.DeadLetter, "dead-letter", "", "exec mode, with --max-attempts: topic a message goes to (then acked) after its last attempt; with -i: where d sends it")
	fl.StringVar(&opts.DeadLetterFormat, "dead-letter-format", "raw", "with --dead-letter: raw (the payload as it was) or envelope (JSON: where it came from, attempts, exit_code, stderr_tail, payload)")
	fl.DurationVar(&opts.MaxProcessingTime, "max-processing-time", 5*time.Minute, "exec mode: stop a command after D and nack")
	fl.DurationVar(&opts.ShutdownGrace, "shutdown-grace", 30*time.Second, "after a signal, time running commands, lines in a pipe and acks being retried get to finish")
	fl.BoolVar(&opts.Prefix, "prefix", false, "exec mode: put [pN @OFFSET] before each line the command writes")
	fl.StringVar(&opts.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics, /healthz and /readyz on HOST:PORT (both modes; no host: 127.0.0.1)")
	return cmd
}

// execOnlyFlags are meaningless without a command; naming one without it is a mistake.
var execOnlyFlags = []string{"concurrency", "lease", "kill-grace", "ack-exit-codes", "retry-delay",
	"max-processing-time", "prefix", "retry-delay-max", "max-attempts", "dead-letter", "dead-letter-format"}

// canaryRefused are the exec-mode flags about holding and settling messages, which
// `sub --peek -- COMMAND` does not do; --ack-exit-codes still says what succeeded.
var canaryRefused = []string{"lease", "retry-delay", "retry-delay-max", "max-attempts", "dead-letter", "dead-letter-format"}

// validate checks the flags together; changed says whether a flag was given.
func (opts *SubOptions) validate(changed func(string) bool) error {
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
		return usageErrorf("--metrics-addr is for workers: not with --peek or -i")
	}
	if opts.Peek {
		for _, name := range []string{"no-ack", "drain", "max", "wait", "rate"} {
			if changed(name) {
				return usageErrorf("--%s does not apply to --peek (it takes nothing)", name)
			}
		}
		if opts.Command != nil {
			// A canary takes nothing, so what settles or holds a message means nothing.
			for _, name := range canaryRefused {
				if changed(name) {
					return usageErrorf("--%s does not apply to --peek -- COMMAND (a canary takes nothing: no lease, no retry, no dead letter)", name)
				}
			}
		}
		if opts.Offset != nil && (opts.Partition == nil || changed("from-beginning")) {
			return usageErrorf("--offset needs --partition (and not --from-beginning)")
		}
	} else if changed("from-beginning") || opts.Offset != nil {
		// Name only what was typed.
		name := "--offset"
		if changed("from-beginning") {
			name = "--from-beginning"
		}
		return usageErrorf("%s needs --peek (or use narad replay)", name)
	}
	if opts.Interactive {
		if err := opts.validateInteractive(changed); err != nil {
			return err
		}
	}
	if opts.Command == nil {
		for _, name := range execOnlyFlags {
			if changed(name) && !(opts.Interactive && (name == "dead-letter" || name == "dead-letter-format")) {
				return usageErrorf("--%s needs a command: narad sub TOPIC [flags] -- COMMAND", name)
			}
		}
		return nil
	}
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
		return usageErrorf("--dead-letter must be another topic than %s", render.Escape(opts.Topic))
	}
	if opts.DeadLetter != "" {
		if err := validateTopicName(opts.DeadLetter); err != nil {
			return err
		}
	}
	return nil
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
	return codes, nil
}

func subRun(f *Factory, opts *SubOptions) error {
	if opts.Interactive {
		return holdRun(f, opts)
	}
	if opts.Peek {
		// Replay reads: a stream all the same, without the consume loop.
		f.tune.stream(consumer.Pipelining{})
	}
	if opts.Peek && opts.Command != nil {
		return canaryRun(f, opts)
	}
	if opts.Peek {
		return peekRun(f, opts)
	}
	start := time.Now()
	var r *render.Renderer
	if opts.Command == nil {
		var err error
		if r, err = opts.Output.renderer(f); err != nil {
			return err
		}
	}
	m, err := startMetrics(f, opts)
	if err != nil {
		return err
	}
	defer m.close()
	c, err := f.Client(m.hooks()...)
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
		Stop:      f.Signals.Soft,
	}
	co.OnNodeLost, co.OnNodeBack = nodeNotices(f, c)
	co.OnSurplus = surplusNotice(f)
	co.OnUndecodable = undecodableNotice(f)
	if opts.Command != nil && opts.DeadLetter != "" {
		co.DeadLetterUndecodable = func(ctx context.Context, m *client.Message) error {
			return deadLetterAsSent(ctx, c, opts.DeadLetter, m)
		}
	}
	m.wire(&co)
	// Settlements still retrying when the grace after a signal ends (for running
	// commands, or lines in a pipe) are given up then, as at a second signal, and
	// listed for pasting.
	ran := make(chan struct{})
	defer close(ran)
	co.Abandon = f.Signals.SoftThen(opts.ShutdownGrace, ran)

	var h consumer.Handler
	var sup *supervisor.Supervisor
	if opts.Command == nil {
		p := consumer.NewPrinter(f.IO.Out, r)
		p.ShutdownGrace(opts.ShutdownGrace)
		// Lines taken ahead, waiting behind a slow write or unread in a pipe keep their
		// leases: co.Lease 0, the run asks topic info for it only when one waits a while.
		h = p
		announceSub(f, c, opts.Topic, p.AcksWhenRead(), opts.NoAck)
	} else {
		// The run keeps the leases of running commands, at the lease the supervisor's
		// options were resolved with.
		if sup, co.Lease, err = newSupervisor(f, c, opts, m.wireSupervisor); err != nil {
			return err
		}
		if opts.Timeout > 0 {
			// --timeout counts from the start: the topic info above is part of the run.
			co.Timeout = max(opts.Timeout-time.Since(start), time.Nanosecond)
		}
		h = sup
		announceExec(f, c, opts)
		defer announceStop(f, sup)()
	}
	co.OnSingle = f.tune.stream(h.Pipelining())
	res, err := consumer.Run(f.Signals.Hard, c, h, co)
	printStats(f, opts.Stats, res.Stats, err != nil && res.Reason == consumer.StopFailed)
	writeRunLeftovers(f, opts.Topic, res)
	if err != nil && res.Reason == consumer.StopFailed {
		return f.runEnv().apiFatal(c, err, opts.Topic)
	}
	switch res.Outcome() {
	case consumer.OutcomeOK, consumer.OutcomeInterrupted:
		return nil
	case consumer.OutcomeCountUnmet:
		got, what := res.Stats.Received-res.Stats.Nacked, "messages"
		if res.Counted {
			got, what = res.Finished, "messages finished"
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

// leaseGoneError is the exit of a run whose only trouble was a lease gone (410).
func leaseGoneError(res consumer.Result) error {
	n := res.Stats.LeaseLost + res.Stats.AckGone
	what := countOf(n, "lease was gone (410): that message", "leases were gone (410): those messages")
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
func checkDeadLetter(f *Factory, c *client.Client, topic string) error {
	if topic == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(f.Signals.Hard, 30*time.Second)
	defer cancel()
	if _, err := c.Topic(ctx, topic); client.StatusOf(err) == http.StatusNotFound {
		return f.runEnv().apiFatal(c, fmt.Errorf("--dead-letter: %w", err), topic)
	}
	return nil
}

// newSupervisor builds the exec-mode handler and says the lease to keep: --lease, else
// the topic's visibility timeout, read from topic info.
// tune, if any, adds to the supervisor's options.
func newSupervisor(f *Factory, c *client.Client, opts *SubOptions, tune ...func(*supervisor.Options)) (*supervisor.Supervisor, time.Duration, error) {
	lease := opts.Lease
	if lease == 0 {
		// The client bounds each attempt; --timeout bounds them all.
		ctx, cancel := f.Signals.Hard, context.CancelFunc(func() {})
		if opts.Timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		}
		defer cancel()
		t, err := c.Topic(ctx, opts.Topic)
		if err != nil {
			return nil, 0, f.runEnv().apiFatal(c, err, opts.Topic)
		}
		lease = t.VisibilityTimeout()
		if lease <= 0 {
			lease = 30 * time.Second
		}
	}
	if err := checkDeadLetter(f, c, opts.DeadLetter); err != nil {
		return nil, 0, err
	}
	so := supervisor.Options{
		Command:           opts.Command,
		Concurrency:       opts.Concurrency,
		MaxProcessingTime: opts.MaxProcessingTime,
		KillGrace:         opts.KillGrace,
		ShutdownGrace:     opts.ShutdownGrace,
		RetryDelay:        opts.RetryDelay,
		RetryDelayMax:     opts.RetryDelayMax,
		MaxAttempts:       opts.MaxAttempts,
		DeadLetter:        opts.DeadLetter,
		DeadLetterFormat:  opts.DeadLetterFormat,
		Producer:          c,
		Verbose:           f.global.verbose,
		AckExitCodes:      opts.AckExitCodes,
		CountMessages:     opts.Count > 0,
		Topic:             opts.Topic,
		Addr:              c.BaseURL(),
		Prefix:            opts.Prefix,
		Stdout:            f.IO.Out,
		Stderr:            f.IO.ErrOut,
	}
	for _, t := range tune {
		t(&so)
	}
	s, err := supervisor.New(so)
	if err != nil {
		return nil, 0, usageErrorf("%v", err)
	}
	return s, lease, nil
}

// announceExec is exec mode's banner on a terminal, as plain sub has one: what runs
// for each message, how many at once, and what Ctrl-C does to running commands.
func announceExec(f *Factory, c *client.Client, opts *SubOptions) {
	if !f.IO.IsStderrTTY() {
		return
	}
	at := "one at a time"
	if opts.Concurrency > 1 {
		at = fmt.Sprintf("%d at a time", opts.Concurrency)
	}
	f.runEnv().notice(fmt.Sprintf("running %s for each message of %s (-j %d: %s)",
		render.Escape(strings.Join(opts.Command, " ")), render.Escape(opts.Topic), opts.Concurrency, at))
	f.runEnv().notice(fmt.Sprintf("  on %s; Ctrl-C lets running commands finish (up to %s)",
		render.Escape(c.BaseURL()), roundDuration(opts.ShutdownGrace)))
}

// roundDuration is d as a person writes it: 30s, 1m, 1h30m (not 1m0s).
func roundDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// stopNoticer is exec mode's or the canary's: what the first signal waits for.
type stopNoticer interface {
	StopNotice(again string) string
	Say(line string)
}

// announceStop says at the first signal what exec mode still waits for; the func it
// returns ends the watch.
func announceStop(f *Factory, sup stopNoticer) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-f.Signals.Soft:
		case <-done:
			return
		}
		again := "Ctrl-C again to stop them"
		if f.Signals.Received() != syscall.SIGINT {
			again = "a second signal stops them"
		}
		if line := sup.StopNotice(again); line != "" {
			if f.IO.IsStderrTTY() {
				line = "\n" + line // after the terminal's ^C
			}
			sup.Say(line)
		}
	}()
	return func() { close(done) }
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
process, 2 after it failed once, ...

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

A canary's counters (--peek -- COMMAND --stats): ran, succeeded (exit 0 or
--ack-exit-codes), failed (timed_out, not_started and signaled among them),
stopped (by the shutdown), each exit code seen, and the commands' p50, p95 and
max durations. The first signal stops reading and lets running commands finish
(up to --shutdown-grace); the second stops them.`

// peekReplay is the replay --peek reads (plain and -i): each partition's tail
// followed, or where --from-beginning, --offset or --since put the start.
func peekReplay(f *Factory, opts *SubOptions) replay.Options {
	ro := replay.Options{Topic: opts.Topic, Partition: opts.Partition, Start: replay.FromTail, To: -1, Count: opts.Count, Follow: true}
	switch {
	case opts.FromBeginning:
		ro.Start = replay.FromOldest
	case opts.Offset != nil:
		ro.Start, ro.Offset = replay.FromOffset, *opts.Offset
	}
	opts.Time.apply(f, &ro)
	return ro
}

// peekRun watches a topic by replay reads from each partition's tail: nothing is
// reserved, so it never competes with the real consumers.
func peekRun(f *Factory, opts *SubOptions) error {
	ro := peekReplay(f, opts)
	if _, err := opts.Output.renderer(f); err != nil {
		return err // before saying what it would do
	}
	if c, err := f.Client(); err == nil {
		announce(f, "watching %s on %s: takes nothing", opts.Topic, c.BaseURL())
	}
	return runReplay(f, opts.Output, ro, opts.Timeout, findOptions{Match: opts.Match, Stats: opts.Stats})
}
