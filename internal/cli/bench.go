package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/bench"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/producer"
	"github.com/narad/narad/internal/render"
)

// maxBenchSize is the largest payload: the node takes at most 1 MiB a message.
const maxBenchSize = 1 << 20

// BenchOptions configure narad bench.
type BenchOptions struct {
	runEnv
	Topic       string
	Count       int
	Size        int
	Concurrency int
	Keys        int
	Payload     bench.Payload
	Consume     bool
	// Create makes the topic when it is not there (Partitions > 0: with that many);
	// Delete deletes it afterwards, only if bench created it.
	Create     bool
	Partitions int
	Delete     bool
	Output     string
}

func newBenchCmd(f *Factory) *cobra.Command {
	return benchCmd(f, benchRun)
}

func benchCmd(f *Factory, run func(*BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{}
	var typed benchFlags
	cmd := &cobra.Command{
		Annotations: map[string]string{holdsWork: "yes"},
		Use:         "bench TOPIC",
		Short:       "Measure produce (and consume+ack) throughput and latency",
		Long: `Measure throughput and latency from this machine: produce --count messages
of --size bytes into TOPIC with --concurrency requests in flight, and with
--consume then consume and ack until nothing is left to take. bench runs the
engines of narad produce and narad sub: up to 100 messages (or handles) a
request on a node with batch forms, one a request on an older node (the output
says so: batch false).

bench WRITES INTO TOPIC, and with --consume takes and acks whatever it finds
there, other producers' messages included: give it a topic of its own. It
refuses a topic that does not exist unless --create (--delete then deletes it
afterwards).

Latency is per request (a batch of 100 messages is one request), as the client
observes each answer: produce requests in the produce phase, consume and ack
requests in the consume phase. On a terminal each phase's latencies are also
drawn as a histogram (buckets of 1, 2 and 5 times a power of ten, p50, p95 and
p99 marked); latency_histogram in -o json holds the same buckets. The consume phase's time runs to its last ack,
without the empty answers that tell it nothing is left.

Ctrl-C stops: requests out are finished, messages held are given back, and what
was measured so far is printed (exit 130).

With -o json (stable field names; "consume" only with --consume, and only when
its phase ran: not after a stop, a failure, or if nothing was produced):
  {"topic","count","size","payload","keys","concurrency",
   "produce":{"messages","bytes","seconds","msgs_per_sec","mb_per_sec",
     "requests","batch","latency_ms":{"p50","p95","p99","max"},
     "latency_histogram":[{"from_ms","to_ms","count"}],
     "failed","unknown"},
   "consume":{"messages","bytes","seconds","msgs_per_sec","mb_per_sec",
     "requests","batch","latency_ms":{"p50","p95","p99","max"},
     "latency_histogram":[{"from_ms","to_ms","count"}],
     "acked","left"},
   "interrupted"}
mb_per_sec is payload megabytes (10^6 bytes) a second; failed is messages the
node refused, unknown messages whose request got no clear answer; left is
produced messages not consumed (another consumer took them, or they are still
leased).`,
		Example: `  narad bench bench-scratch --create --delete --consume
  narad bench orders-load --count 100000 --size 1KiB -j 32 --consume \\
    -o json`,
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, opts.resolve(cmd, args, &typed))
		},
	}
	addBenchFlags(cmd, opts, &typed)
	return cmd
}

// benchFlags are the flags of bench resolved before they go into BenchOptions, as
// typed.
type benchFlags struct{ size, payload string }

// addBenchFlags adds bench's flags: what it sends, and the topic it sends it to.
func addBenchFlags(cmd *cobra.Command, opts *BenchOptions, typed *benchFlags) {
	fl := cmd.Flags()
	fl.IntVar(&opts.Count, "count", 10000, "messages to produce")
	fl.StringVar(&typed.size, "size", "256", "payload bytes: 100, 4KiB, up to 1MiB")
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 8, "requests in flight at once")
	fl.IntVar(&opts.Keys, "keys", 0, "give the messages N distinct keys (0: no keys)")
	fl.StringVar(&typed.payload, "payload", "text", "text (letters and digits) or json")
	blankOwnChecked(fl, "size", "payload")
	fl.BoolVar(&opts.Consume, "consume", false, "then consume and ack until nothing is left")
	fl.BoolVar(&opts.Create, "create", false, "create TOPIC if it does not exist")
	fl.IntVar(&opts.Partitions, "partitions", 0, "with --create: partitions of the new topic, 3..108")
	fl.BoolVar(&opts.Delete, "delete", false, "with --create: delete the topic it created afterwards")
	addTextJSONFlag(cmd, &opts.Output)
}

// resolve reads the arguments and the typed flags into opts and checks them together.
func (opts *BenchOptions) resolve(cmd *cobra.Command, args []string, typed *benchFlags) error {
	opts.Topic = args[0]
	if err := validateTopicName(opts.Topic); err != nil {
		return err
	}
	if err := checkTextJSON(opts.Output); err != nil {
		return err
	}
	n, err := parseSize(typed.size)
	if err != nil || n < 1 || n > maxBenchSize {
		return usageErrorf("invalid --size %q (1 byte to 1 MiB: 100, 4KiB, 1MiB)", typed.size)
	}
	opts.Size = int(n)
	switch typed.payload {
	case "text":
		opts.Payload = bench.Text
	case "json":
		opts.Payload = bench.JSON
	default:
		return usageErrorf("invalid --payload %q (text or json)", typed.payload)
	}
	fl := cmd.Flags()
	switch {
	case opts.Count < 1:
		return usageErrorf("invalid --count %d (1 or more)", opts.Count)
	case opts.Concurrency < 1 || opts.Concurrency > produceMaxConcurrency:
		return usageErrorf("invalid --concurrency %d (1 to %d)", opts.Concurrency, produceMaxConcurrency)
	case opts.Keys < 0:
		return usageErrorf("invalid --keys %d (0 for no key, or the number of distinct keys)", opts.Keys)
	case fl.Changed("partitions") && !opts.Create:
		return usageErrorf("--partitions needs --create (it applies to a topic bench creates)")
	case fl.Changed("partitions") && opts.Partitions < 1:
		return usageErrorf("invalid --partitions %d (1 or more)", opts.Partitions)
	case opts.Delete && !opts.Create:
		return usageErrorf("--delete needs --create (bench deletes only a topic it created)")
	}
	return nil
}

func benchRun(opts *BenchOptions) error {
	rec := bench.NewRecorder()
	c, err := opts.Client(rec)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	created, err := benchTopic(c, opts)
	if err != nil {
		return err
	}

	st := &benchFailures{progress: newProgressLine(opts.IO.ErrOut)}
	b := bench.New(c, rec, bench.Options{
		Topic: opts.Topic, Count: opts.Count, Size: opts.Size, Keys: opts.Keys, Payload: opts.Payload,
		Concurrency: opts.Concurrency, Consume: opts.Consume,
		Stop: opts.Signals.Soft, OnFailure: st.report, Now: opts.Now,
		OnNodeLost: func(err error) { st.progress.println(nodeLostLine(c, err)) },
		OnNodeBack: func() { st.progress.println(nodeBackLine) },
	})
	stopProgress := func() {}
	if opts.IO.IsStderrTTY() {
		stopProgress = st.progress.run(time.Second, 500*time.Millisecond, func() string {
			p := b.Progress()
			return fmt.Sprintf("%s: %d of %d messages…", p.Phase, p.Done, p.Of)
		})
	}
	// After the first signal bench waits for the requests out, which a node that does
	// not answer holds for an attempt's whole timeout: it says so.
	stopNote := noteRequestsOut(opts.runEnv, opts.Signals.Soft, nil, st.progress.println)
	report, runErr := b.Run(opts.Signals.Hard)
	stopNote()
	stopProgress()

	if runErr == nil || report.Produce.Messages > 0 || report.Produce.Failed > 0 {
		if err := printBenchReport(opts, &report, rec); err != nil {
			return err
		}
	}
	var deleteErr error
	if created && opts.Delete {
		deleteErr = benchDelete(opts, c)
	}
	pr := report.Produce
	switch {
	case runErr != nil:
		return opts.apiFatal(c, runErr, opts.Topic)
	case deleteErr != nil:
		return deleteErr
	case pr.Failed > 0 || pr.Unknown > 0:
		return exitWith(ExitFailed, fmt.Errorf("%d of %d messages were not produced (%d refused, %d unknown)",
			pr.Failed+pr.Unknown, opts.Count, pr.Failed, pr.Unknown))
	}
	return nil
}

// benchTopic checks that the topic is there and can take messages, or creates it with
// --create; created says whether bench made it. It warns that bench writes into it.
func benchTopic(c *client.Client, opts *BenchOptions) (created bool, err error) {
	ctx, cancel := opts.Context()
	defer cancel()
	name := render.Escape(opts.Topic)
	t, err := c.Topic(ctx, opts.Topic)
	switch {
	case client.StatusOf(err) == http.StatusNotFound && opts.Create:
		if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: opts.Topic, Partitions: opts.Partitions}); err != nil {
			if client.StatusOf(err) == http.StatusBadRequest {
				return false, exitWith(ExitUsage, fmt.Errorf("%s (see narad topic create --help)", describeErr(err)))
			}
			return false, opts.apiFatal(c, err, opts.Topic)
		}
		created = true
		fmt.Fprintf(opts.IO.ErrOut, "created topic %s\n", name)
	case client.StatusOf(err) == http.StatusNotFound:
		return false, exitWith(ExitFailed, fmt.Errorf("%s (bench writes into a topic: pass --create, or narad topic create %s)",
			describeErr(err), name))
	case err != nil:
		return false, opts.apiFatal(c, err, opts.Topic)
	case opts.Delete:
		return false, usageErrorf("topic %s exists: --delete deletes only a topic bench created (drop --delete, or name a new topic)", name)
	case t.Parent != "" && t.FanoutDelayMs > 0:
		return false, exitWith(ExitFailed, fmt.Errorf("topic %s is a delay child of %s: the node refuses produce into it (bench %s instead)",
			name, render.Escape(t.Parent), render.Escape(t.Parent)))
	}
	what := fmt.Sprintf("writes %s of %s into %s", plural(int64(opts.Count), "message"), formatBytes(int64(opts.Size)), name)
	if opts.Consume {
		what += ", then consumes and acks all it finds there, other producers' messages included"
	} else {
		what += ", where they stay (with --consume it takes them back)"
	}
	fmt.Fprintf(opts.IO.ErrOut, "narad: warning: bench %s\n", what)
	if t != nil && len(t.Children) > 0 {
		kids := make([]string, len(t.Children))
		for i, k := range t.Children {
			kids[i] = render.Escape(k)
		}
		fmt.Fprintf(opts.IO.ErrOut, "narad: warning: %s has fan-out children (%s): each gets a copy of every bench message\n",
			name, strings.Join(kids, ", "))
	}
	return created, nil
}

// benchDelete deletes the topic bench created. It runs after a first Ctrl-C too (the
// topic is scratch either way); a second one stops it.
func benchDelete(opts *BenchOptions, c *client.Client) error {
	topic := opts.Topic
	ctx, cancel := context.WithTimeout(opts.Signals.Hard, lookBound)
	defer cancel()
	if err := withinBound(ctx, c.DeleteTopic(ctx, topic)); err != nil {
		return opts.apiFatal(c, fmt.Errorf("--delete: %w", err), topic)
	}
	fmt.Fprintf(opts.IO.ErrOut, "deleted topic %s\n", render.Escape(topic))
	return nil
}

// benchFailures prints the first message the node refused; the rest are counted in
// the report (a topic whose schema refuses bench's payloads would refuse them all).
type benchFailures struct {
	progress *progressLine // writes the line, clearing a progress line shown
	mu       sync.Mutex
	shown    bool
}

func (b *benchFailures) report(fl producer.Failure) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		return
	}
	b.shown = true
	line := fmt.Sprintf("narad: message %d: %s (%s%s)\n", fl.Record.Pos, render.Escape(statusText(fl.Err)),
		countOf(int64(len(fl.Record.Body)), "byte", "bytes"), produceHint(fl.Status, len(fl.Record.Body)))
	b.progress.println(line)
}

// printBenchReport prints the figures on stdout (a table, or -o json) and what they
// need to be read right on stderr: older-node fallbacks, messages left, a stop.
func printBenchReport(opts *BenchOptions, r *bench.Report, rec *bench.Recorder) error {
	var err error
	if opts.Output == "json" {
		err = opts.printJSON(r)
	} else {
		// Measures down, phases across: as narrow as two phases can be.
		phases := []*bench.Phase{&r.Produce.Phase}
		headers := []string{"", "PRODUCE"}
		if r.Consume != nil {
			phases = append(phases, &r.Consume.Phase)
			headers = append(headers, "CONSUME")
		}
		err = opts.printTable(headers, benchRows(phases))
		if err == nil && opts.IO.IsStdoutTTY() {
			// A terminal reads a distribution faster as a picture; scripts keep the table.
			err = printBenchHistograms(opts.runEnv, headers[1:], phases)
		}
	}
	for _, fb := range rec.Fallbacks() {
		fmt.Fprintf(opts.IO.ErrOut, "narad: note: %s\n", fb)
	}
	var left int64 // bench's messages still in the topic, as far as it knows
	switch {
	case r.Consume != nil:
		left = r.Consume.Left
	case opts.Consume:
		left = r.Produce.Messages
	}
	switch {
	case r.Interrupted:
		line := "narad: interrupted: the figures are what was measured until then"
		if left > 0 {
			line += fmt.Sprintf("; bench's messages still in %s: %d", render.Escape(opts.Topic), left)
		}
		fmt.Fprintln(opts.IO.ErrOut, line)
	case r.Consume != nil && left > 0:
		fmt.Fprintf(opts.IO.ErrOut, "narad: %d of the %d messages produced were not consumed (another consumer took them, or they are still leased)\n",
			left, r.Produce.Messages)
	}
	return err
}

// printBenchHistograms draws each phase's latency distribution under the table.
func printBenchHistograms(e runEnv, names []string, phases []*bench.Phase) error {
	s := render.NewStyles(e.IO.Out, e.IO.ColorEnabled())
	for i, p := range phases {
		if len(p.Histogram) == 0 {
			continue
		}
		title := fmt.Sprintf("%s latency, %s", strings.ToLower(names[i]), plural(p.Requests, "request"))
		_, err := io.WriteString(e.IO.Out, "\n")
		if err == nil {
			err = render.Histogram(e.IO.Out, s, title, histogramBars(p), e.IO.StdoutWidth())
		}
		if err != nil {
			return outputDone(err)
		}
	}
	return nil
}

// histogramBars are a phase's buckets as bars, labelled 1–2ms, 500µs–1ms, with the
// percentiles marked where they fall.
func histogramBars(p *bench.Phase) []render.HistogramBar {
	bars := make([]render.HistogramBar, len(p.Histogram))
	for i, b := range p.Histogram {
		bars[i] = render.HistogramBar{Label: bucketLabel(b.FromMs, b.ToMs), Count: b.Count}
	}
	for j, name := range []string{"p50", "p95", "p99"} {
		if k := p.Marks[j]; k >= 0 && k < len(bars) {
			bars[k].Marks = append(bars[k].Marks, name)
		}
	}
	return bars
}

// bucketLabel is "1–2ms", "500µs–1ms", "0–1µs": each bound in its own unit, the unit
// said once when both share it.
func bucketLabel(fromMs, toMs float64) string {
	from, fu := durationUnit(fromMs)
	to, tu := durationUnit(toMs)
	if fu == tu || fromMs == 0 {
		return from + "–" + to + tu
	}
	return from + fu + "–" + to + tu
}

// durationUnit splits a duration in milliseconds into a number and its unit.
func durationUnit(ms float64) (string, string) {
	switch {
	case ms >= 1000:
		return strconv.FormatFloat(ms/1000, 'f', -1, 64), "s"
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', -1, 64), "ms"
	}
	return strconv.FormatFloat(ms*1000, 'f', -1, 64), "µs"
}

// benchRows are the table's rows: one per measure, one column per phase.
func benchRows(phases []*bench.Phase) [][]string {
	measures := []struct {
		name string
		cell func(p *bench.Phase) string
	}{
		{"messages", func(p *bench.Phase) string { return strconv.FormatInt(p.Messages, 10) }},
		{"bytes", func(p *bench.Phase) string { return formatBytes(p.Bytes) }},
		{"seconds", func(p *bench.Phase) string { return strconv.FormatFloat(p.Seconds, 'f', 2, 64) }},
		{"msg/s", func(p *bench.Phase) string { return strconv.FormatFloat(p.MsgsPerSec, 'f', 0, 64) }},
		{"MB/s", func(p *bench.Phase) string { return strconv.FormatFloat(p.MBPerSec, 'f', 2, 64) }},
		{"requests", func(p *bench.Phase) string { return strconv.FormatInt(p.Requests, 10) }},
		{"latency p50", func(p *bench.Phase) string { return formatLatency(p.Latency.P50) }},
		{"latency p95", func(p *bench.Phase) string { return formatLatency(p.Latency.P95) }},
		{"latency p99", func(p *bench.Phase) string { return formatLatency(p.Latency.P99) }},
		{"latency max", func(p *bench.Phase) string { return formatLatency(p.Latency.Max) }},
		{"batch", func(p *bench.Phase) string {
			if p.Batch {
				return "yes"
			}
			return "no"
		}},
	}
	rows := make([][]string, len(measures))
	for i, m := range measures {
		rows[i] = []string{m.name}
		for _, p := range phases {
			rows[i] = append(rows[i], m.cell(p))
		}
	}
	return rows
}

// formatLatency is a latency in milliseconds with about three significant digits:
// 0.31ms, 3.10ms, 12.3ms, 1234ms.
func formatLatency(ms float64) string {
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
}

// sizeUnits are the suffixes parseSize takes, lower case: binary (KiB, MiB; K and M
// too, as dd and most tools read them) and decimal (kB, MB).
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
}

// parseSize reads a byte count: a plain number (100) or a number with a unit (4KiB,
// 1.5k, 2MB, 1 MiB), case-insensitive. It must come to a whole number of bytes.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	n := v * mult
	if n != math.Trunc(n) || n > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q (not a whole number of bytes)", s)
	}
	return int64(n), nil
}
