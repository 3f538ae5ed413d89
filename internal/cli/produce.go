package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/producer"
	"github.com/narad/narad/internal/render"
)

// produceMaxConcurrency bounds -j: the client keeps about 64 connections alive.
const produceMaxConcurrency = 256

type ProduceOptions struct {
	runEnv
	Topic    string
	Messages []string // MESSAGE arguments, one message each
	File     string   // --file; "-" is stdin
	Lines    bool
	JSON     bool
	// Key and Partition are nil unless given; Key may be "" (an empty key is a key).
	Key         *string
	Partition   *int
	Count       int
	Concurrency int
	// KeepPartition sends each --json line to its own partition.
	KeepPartition bool
	// Rate bounds the messages a second (0: no bound); Pace plays --json lines at
	// their timestamps' spacing, this many times faster (0: as fast as they go).
	Rate float64
	Pace float64
	// rateSet and paceSet: the flag was given (0 given is a bad value, not the default).
	rateSet, paceSet bool
}

// produceLong is produce's help: where messages come from, how they are sent, and
// what a stop leaves.
const produceLong = `Produce messages to a topic.

Each MESSAGE argument is one message. Without arguments the messages come from
--file F (the whole file is one message, byte for byte; - is stdin) or from stdin
(all of it one message), unless:

  --lines  each line is one message (a trailing \r is dropped, empty
           lines are skipped)
  --json   each line is a message in the shape "narad sub -o json"
           prints; the payload is decoded back to the bytes that were
           produced (base64 included) and its key is kept unless --key
           is given; the partition is not kept (the target may have
           other partitions) unless --keep-partition is given

so "narad sub a -o json | narad produce b --json" copies messages exactly. Input is
read as a stream: lines are sent while more are read.

With --keep-partition each --json line goes to its own "partition", so that
"narad replay a -o json > a.jsonl" and "narad produce b --json --keep-partition <
a.jsonl" restore a partition for partition (a line without a partition goes where
its key sends it). A line whose partition the target does not have is reported by
its line number; the others still go.

--rate N sends at most N messages a second, across all requests (in requests of
up to N messages, at most 100). --pace F plays --json lines with the spacing of
their "timestamp"s, F times faster: --pace 1 is real time, --pace 60 a minute of
the tape each second. The first line goes at once; a line earlier than one already
sent goes at once too, and the run says at its end that the tape was not in time
order (replay writes one partition after another: sort it by timestamp). Timestamps
are whole seconds, so the messages of one second go together. On a terminal the
progress line shows where the tape is.

On a v3.1 node messages go in batches (up to 100 messages and 1 MiB a request,
filled while the requests already out are answered); a node without batch produce
(404 from its router) gets one request per message. A lone message (one MESSAGE
argument, a whole input) is one single produce on any node. With -j N, N requests
are in flight at once, on an older node too (order is then not kept); with the
default -j 1, messages are sent in input order. --count N sends each message N times in a row. 502, 503 and timeouts
are retried with backoff, so a message may be stored twice; that is the API's
contract.

A message the node refuses (413 over 1 MiB, 400, 409) is reported with its line
number (or argument number, counting MESSAGE arguments from 1) and size, and the
others still go; the exit is then 1. 401, 403, 404 or an unreachable node stop at
once. A summary goes to stderr.

Ctrl-C stops reading and lets the requests already out finish, so the summary is
exact and says from which line to resume without sending anything twice
(interrupted: lines 1-1173 produced; resume with tail -n +1174). A request being
retried then gets no new attempt: if its last one had no clear answer, its
messages are counted as unknown (they may have been stored). A second Ctrl-C
abandons the requests out the same way. The summary names the unknown lines and
any later ones stored all the same, which resuming sends again.`

func newProduceCmd(f *Factory) *cobra.Command {
	return produceCmd(f, produceRun)
}

// produceCmd parses flags into ProduceOptions and hands them to run, so tests can
// check the parsing apart from the sending.
func produceCmd(f *Factory, run func(*ProduceOptions) error) *cobra.Command {
	opts := &ProduceOptions{}
	var typed produceFlags
	cmd := &cobra.Command{
		Annotations: map[string]string{holdsWork: "yes"},
		Use:         "produce TOPIC [MESSAGE...]",
		Aliases:     []string{"pub"},
		Short:       "Produce messages to a topic",
		Long:        produceLong,
		Example: `  # One message with a key (same key, same partition)
  narad produce orders -k customer-42 '{"order_id": "o1", "amount": 49}'

  # A file as one message, byte for byte
  narad produce invoices --file invoice.pdf

  # One message per line: a CSV export without its header, or jq -c
  tail -n +2 orders.csv | narad produce orders --lines -j 8
  jq -c '.orders[]' export.json | narad produce orders --lines

  # Copy a topic without consuming it: keys and binary payloads kept
  narad replay orders -o json | narad produce orders-copy --json

  # Back up a topic and restore it, partition for partition
  narad replay orders -o json > orders.jsonl
  narad produce orders-restored --json --keep-partition < orders.jsonl

  # Play a captured hour in a minute, at most 500 messages a second
  narad produce orders --json --pace 60 --rate 500 < tape.jsonl`,
		Args: minArgs(1, "a topic and optional messages"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, opts.resolve(cmd, args, &typed))
		},
	}
	addProduceFlags(cmd, opts, &typed)
	return cmd
}

// produceFlags are the flags of produce resolved before they go into ProduceOptions,
// as typed.
type produceFlags struct {
	key       string
	partition int
}

// addProduceFlags adds produce's flags: where the messages come from, where they go,
// and how fast.
func addProduceFlags(cmd *cobra.Command, opts *ProduceOptions, typed *produceFlags) {
	fl := cmd.Flags()
	fl.StringVarP(&typed.key, "key", "k", "", "message key (same key, same partition)")
	fl.IntVar(&typed.partition, "partition", 0, "pin every message to this partition")
	fl.StringVarP(&opts.File, "file", "f", "", "read the message (or with --lines/--json, the messages) from this file; - is stdin")
	// An empty key is a key (the node hashes it like any other).
	blankMeansValue(fl, "key")
	blankNeeds(fl, "file", "a file name", "- is stdin; leave the flag out to read stdin or the arguments")
	fl.BoolVarP(&opts.Lines, "lines", "l", false, "one message per line of input")
	fl.BoolVar(&opts.JSON, "json", false, "one message per line, in the shape of sub -o json")
	fl.IntVar(&opts.Count, "count", 1, "send each message this many times")
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 1, "requests in flight at once (order is kept only with 1)")
	fl.BoolVar(&opts.KeepPartition, "keep-partition", false, "with --json, send each line to its own partition (restore a topic)")
	fl.Float64Var(&opts.Rate, "rate", 0, "at most this many messages a second, across all requests")
	fl.Float64Var(&opts.Pace, "pace", 0, "with --json, send lines at their timestamps' spacing, this many times faster (1 real time)")
}

// resolve reads the arguments and the typed flags into o and checks them together.
func (o *ProduceOptions) resolve(cmd *cobra.Command, args []string, typed *produceFlags) error {
	o.Topic, o.Messages = args[0], args[1:]
	if err := validateTopicName(o.Topic); err != nil {
		return err
	}
	if cmd.Flags().Changed("key") {
		o.Key = &typed.key
	}
	if cmd.Flags().Changed("partition") {
		if typed.partition < 0 {
			return usageErrorf("invalid --partition %d (a partition is 0 or more)", typed.partition)
		}
		o.Partition = &typed.partition
	}
	o.rateSet, o.paceSet = cmd.Flags().Changed("rate"), cmd.Flags().Changed("pace")
	return o.validate()
}

func (o *ProduceOptions) validate() error {
	switch {
	case o.Lines && o.JSON:
		return usageErrorf("--lines and --json cannot be used together (--json reads lines already)")
	case len(o.Messages) > 0 && o.File != "":
		return usageErrorf("give messages as arguments or --file, not both")
	case len(o.Messages) > 0 && (o.Lines || o.JSON):
		return usageErrorf("--lines and --json read stdin or --file, not MESSAGE arguments")
	case o.Count < 1:
		return usageErrorf("invalid --count %d (1 or more)", o.Count)
	case o.Concurrency < 1 || o.Concurrency > produceMaxConcurrency:
		return usageErrorf("invalid --concurrency %d (1 to %d)", o.Concurrency, produceMaxConcurrency)
	case o.KeepPartition && !o.JSON:
		return usageErrorf("--keep-partition needs --json (the partition comes from each line)")
	case o.KeepPartition && o.Partition != nil:
		return usageErrorf("--keep-partition and --partition cannot be used together (one pins every message, the other keeps each line's)")
	case o.rateSet && !(o.Rate > 0 && !math.IsInf(o.Rate, 0)):
		return usageErrorf("invalid --rate %v (messages a second, above 0)", o.Rate)
	case o.paceSet && !o.JSON:
		return usageErrorf("--pace needs --json (the spacing comes from each line's timestamp)")
	case o.paceSet && !(o.Pace > 0 && !math.IsInf(o.Pace, 0)):
		return usageErrorf("invalid --pace %v (how many times faster than real time, above 0: 1 is real time, 60 a minute a second)", o.Pace)
	}
	return nil
}

// produceRun wires the options to the producer engine and prints what it reports:
// a line per failed message, a progress line on a terminal, the summary and, when the
// run stopped early, where to resume.
func produceRun(opts *ProduceOptions) error {
	src, where, closeIn, err := produceInput(opts)
	if err != nil {
		return err
	}
	defer closeIn()

	c, err := opts.Client()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	st := &produceState{e: opts.runEnv, where: where, start: opts.Now(), keepPartition: opts.KeepPartition,
		progress: newProgressLine(opts.IO.ErrOut)}
	var pacer *producer.Pacer
	if opts.Pace > 0 {
		pacer = producer.Paced(src, opts.Pace, opts.Signals.Soft)
		src = pacer
	}
	p := producer.New(c, src, producer.Options{
		Topic: opts.Topic, Key: opts.Key, Partition: opts.Partition,
		Count: opts.Count, Concurrency: opts.Concurrency,
		KeepPartition: opts.KeepPartition, Rate: opts.Rate,
		Partitions: keptPartitions(c, opts),
		// The first signal stops the reading and lets the requests out finish; the
		// second (Hard) abandons them.
		Stop:      opts.Signals.Soft,
		OnFailure: st.reportFailure,
	})
	stopProgress := func() {}
	if opts.IO.IsStderrTTY() {
		stopProgress = st.progress.run(time.Second, 500*time.Millisecond, func() string {
			s := p.Stats()
			line := fmt.Sprintf("produced %s (%s)…", plural(s.Produced, "message"), formatBytes(s.Bytes))
			if pacer != nil {
				line += tapePosition(pacer)
			}
			return line
		})
	}
	if where == "stdin" && opts.IO.IsStdinTTY() {
		what := "one message"
		if opts.Lines || opts.JSON {
			what = "messages, one a line,"
		}
		st.printf("%s\n", readingTerminal(what))
	}

	stopNote := st.noteStopping(opts.Signals)
	res := p.Run(opts.Signals.Hard)
	stopNote()
	stopProgress()
	if pacer != nil {
		if b := pacer.FirstBehind(); b != nil {
			// Said once at the end, not per line: a tape of several partitions one
			// after another would otherwise say it for most of its lines.
			st.printf("narad: %s is %s earlier than a line before it and went at once: --pace plays a tape in time order (replay writes one partition after another; sort it, e.g. jq -s -c 'sort_by(.timestamp)[]')\n",
				st.position(b.Pos), b.By)
		}
	}
	st.summary(&res)
	switch {
	case res.Fatal != nil:
		return opts.apiFatal(c, res.Fatal, opts.Topic)
	case res.ReadErr != nil:
		return exitWith(ExitFailed, fmt.Errorf("cannot read %s: %v (messages read before it were sent)", where, res.ReadErr))
	case res.Stopped || res.Failed > 0 || res.Unknown > 0:
		return exitWith(ExitFailed, nil)
	}
	return nil
}

// produceInput opens what the messages are read from and names it for reports.
func produceInput(opts *ProduceOptions) (src producer.Source, where string, closeIn func(), err error) {
	closeIn = func() {}
	if len(opts.Messages) > 0 {
		return producer.Args(opts.Messages), "arguments", closeIn, nil
	}
	in, where := opts.IO.In, "stdin"
	if opts.File == "" || opts.File == "-" {
		if err := opts.claimStdin("messages", "give them as arguments or with --file FILE"); err != nil {
			return nil, "", closeIn, err
		}
	} else {
		// Opening a FIFO waits for its writer: until then a signal ends the wait.
		file, err := unlessStopped(opts.Signals, func() (*os.File, error) { return os.Open(opts.File) })
		var stopped *exitError
		switch {
		case errors.As(err, &stopped): // a signal: its exit code says it
			return nil, "", closeIn, err
		case err != nil:
			return nil, "", closeIn, usageErrorf("cannot open --file: %v", unwrapPathError(err))
		}
		if fi, err := file.Stat(); err == nil && fi.IsDir() {
			file.Close()
			return nil, "", closeIn, usageErrorf("--file %s is a directory (want a file)", opts.File)
		}
		in, where, closeIn = file, "file "+render.Escape(opts.File), func() { file.Close() }
	}
	switch {
	case opts.Lines:
		return producer.Lines(in), where, closeIn, nil
	case opts.JSON:
		fields := producer.JSONFields{Partition: opts.KeepPartition, Timestamp: opts.Pace > 0}
		return producer.JSONLinesWith(in, fields), where, closeIn, nil
	}
	return producer.Whole(in), where, closeIn, nil
}

// produceState prints for one run.
type produceState struct {
	e     runEnv
	where string // "stdin", "file x", "arguments"
	start time.Time
	// progress writes every line on stderr, whole, and on a terminal the progress
	// line between them.
	progress *progressLine
	// keepPartition: a failure names the line's partition, the likely cause.
	keepPartition bool
}

// reportFailure prints one message that could not be produced, by where it was.
func (st *produceState) reportFailure(fl producer.Failure) {
	rec := fl.Record
	var what string
	if fl.Status == 0 {
		what = fmt.Sprintf("%v (%s)", fl.Err, countOf(rec.Size, "byte", "bytes"))
	} else {
		hint := produceHint(fl.Status, len(rec.Body))
		if st.keepPartition && rec.Partition != nil {
			hint = fmt.Sprintf(", partition %d%s", *rec.Partition, hint)
		}
		what = fmt.Sprintf("%s (%s%s)", statusText(fl.Err), countOf(int64(len(rec.Body)), "byte", "bytes"), hint)
	}
	st.printf("narad: %s: %s\n", st.position(rec.Pos), what)
}

// position names a record: "line 5", "argument 2", or the whole input's name.
func (st *produceState) position(pos int) string {
	switch st.where {
	case "arguments":
		return fmt.Sprintf("argument %d", pos)
	}
	if pos == 0 {
		return st.where
	}
	return fmt.Sprintf("line %d", pos)
}

func (st *produceState) printf(format string, a ...any) {
	st.progress.println(fmt.Sprintf(format, a...))
}

// stoppingNoticeAfter is how long after the stop (the first signal, or a sub's
// --timeout) a run still waiting for the requests out says so: a stop that is quick
// says nothing but its summary. A variable for tests, as is stoppingNoticed, called
// once the line is out.
var (
	stoppingNoticeAfter = time.Second
	stoppingNoticed     = func() {}
)

// stoppingRecheck is how often a stopped run that was not held up by a request when
// the line was due looks again (see noteRequestsOut).
const stoppingRecheck = 100 * time.Millisecond

// noteStopping says once, when the first signal came and the requests out still hold
// the run up a moment later, what it waits for and how not to: an answer that does not
// come may take an attempt's whole timeout. The returned func ends the watch.
func (st *produceState) noteStopping(sigs *Signals) (stop func()) {
	return noteRequestsOut(st.e, sigs.Soft, nil, st.progress.println)
}

// noteRequestsOut is noteStopping for any run that sends requests (produce, bench,
// sub): stopped is its stop (the first signal, or a sub's --timeout); waiting says
// whether a request out holds the run up (nil: whatever the run still waits for
// does, as in produce and bench, whose run ends with its last answer); println writes
// the line.
func noteRequestsOut(e runEnv, stopped <-chan struct{}, waiting func() bool, println func(string)) (stop func()) {
	sigs := e.Signals
	done, exited := make(chan struct{}), make(chan struct{})
	later := afterOr(stopped, stoppingNoticeAfter, sigs.Hard.Done(), done)
	go func() {
		defer close(exited)
		select {
		case <-later:
		case <-done:
			return
		}
		for waiting != nil && !waiting() && sigs.Hard.Err() == nil {
			select {
			case <-time.After(stoppingRecheck):
			case <-done:
				return
			}
		}
		if sigs.Hard.Err() == nil { // at the second signal it is not waiting any more
			again := e.again("Ctrl-C again to abandon them", "a second signal abandons them")
			if sigs.Received() == 0 {
				// Stopped by its own --timeout: the first signal would be the soft stop.
				again = "Ctrl-C twice to abandon them"
			}
			println("narad: stopping: waiting for the requests already out to be answered (" + again + ")\n")
			stoppingNoticed()
		}
	}()
	return endWatch(done, exited)
}

// summary prints the closing line, always: after a fatal error only if something was
// sent or reported, so a bad password stays a single line. A run that ended early
// says where to resume.
func (st *produceState) summary(res *producer.Result) {
	if res.Fatal != nil && res.Produced == 0 && res.Failed == 0 && res.Unknown == 0 {
		return
	}
	st.printf("%s\n", produceSummary(res.Stats, st.e.Now().Sub(st.start)))
	if line := resumeLine(res, st.where); line != "" {
		st.printf("%s\n", line)
	}
}

func produceSummary(s producer.Stats, d time.Duration) string {
	line := fmt.Sprintf("produced %s (%s) in %.2fs", plural(s.Produced, "message"), formatBytes(s.Bytes), d.Seconds())
	if s.Failed > 0 {
		line += fmt.Sprintf(", %d failed", s.Failed)
	}
	if s.Unknown > 0 {
		line += fmt.Sprintf(", %d unknown", s.Unknown)
	}
	return line
}

// resumeLine says, after a run that stopped before the end of its input, which records
// are done and how to go on without sending any twice:
// "interrupted: lines 1-1173 produced; resume with tail -n +1174".
func resumeLine(res *producer.Result, where string) string {
	if (!res.Stopped && res.Fatal == nil) || res.Unit == "" || res.Taken == 0 {
		return ""
	}
	how := "interrupted"
	if res.Fatal != nil {
		how = "stopped"
	}
	unit, units := res.Unit, res.Unit+"s"
	done := "produced"
	if res.Failed > 0 {
		done = "produced or reported above"
	}
	var s string
	switch r := res.Resume; {
	case r <= 1:
		s = fmt.Sprintf("%s: no %s %s", how, unit, done)
	case r == 2:
		s = fmt.Sprintf("%s: %s 1 %s", how, unit, done)
	default:
		s = fmt.Sprintf("%s: %s 1-%d %s", how, units, r-1, done)
	}
	span := func(first, last int) string {
		if first == last {
			return fmt.Sprintf("%s %d", unit, first)
		}
		return fmt.Sprintf("%s %d-%d", units, first, last)
	}
	if res.Unknown > 0 {
		s += fmt.Sprintf("; %s from %s may or may not have been stored", plural(res.Unknown, "message"), span(res.UnknownFirst, res.UnknownLast))
	}
	// Records after the resume point that were stored are said too: resuming sends
	// them again, and a user deduplicating by hand needs to know which.
	if res.StoredPastResume > 0 {
		verb := "were"
		if res.StoredPastResume == 1 {
			verb = "was"
		}
		s += fmt.Sprintf("; %s from %s %s stored too", plural(res.StoredPastResume, "message"), span(res.StoredFirst, res.StoredLast), verb)
	}
	again := ""
	switch {
	case res.Unknown > 0 && res.StoredPastResume > 0:
		again = " (stores those again, or may)"
	case res.Unknown > 0:
		again = " (may store those again)"
	case res.StoredPastResume > 0:
		again = " (stores those again)"
	}
	if unit == "argument" {
		return s + fmt.Sprintf("; resume from argument %d", res.Resume) + again
	}
	s += fmt.Sprintf("; resume with tail -n +%d", res.Resume)
	if file, ok := strings.CutPrefix(where, "file "); ok {
		s += " " + file
	}
	return s + again
}

// keptPartitions asks the topic's partition count for --keep-partition, so that the
// lines of a partition the target lacks fail without a request each (nil otherwise).
func keptPartitions(c *client.Client, opts *ProduceOptions) func(context.Context) (int, error) {
	if !opts.KeepPartition {
		return nil
	}
	return func(ctx context.Context) (int, error) {
		t, err := c.Topic(ctx, opts.Topic)
		if err != nil {
			return 0, err
		}
		return t.Partitions, nil
	}
}

// tapePosition is where a paced tape is, in its own time: " tape at 10:04:31 (+4m31s)".
func tapePosition(p *producer.Pacer) string {
	pos, first, ok := p.Position()
	if !ok {
		return ""
	}
	return fmt.Sprintf(" tape at %s (+%s)", pos.Format("2006-01-02 15:04:05"), pos.Sub(first))
}
