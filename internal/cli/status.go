package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// StatusOptions configure narad status.
type StatusOptions struct {
	runEnv
	Output string
	// Topics limits the overview to these topics; empty means every topic.
	Topics []string
	// Watch refreshes the overview every Interval, with rates, until q or Ctrl-C,
	// Count refreshes, or Timeout.
	Watch bool
	// WaitEmpty polls every Interval until nothing is ready or in flight on Topics,
	// or Timeout passes.
	WaitEmpty bool
	Interval  time.Duration
	// Count ends a watch after that many refreshes (0: no end).
	Count int
	// Timeout ends a watch or a wait (0: none).
	Timeout time.Duration
	// Server is the node's address, for the watch screen's title.
	Server string

	// after is the clock's timer (nil: time.After): tests drive refreshes with it.
	after func(time.Duration) <-chan time.Time
}

func (o *StatusOptions) timer(d time.Duration) <-chan time.Time {
	if o.after != nil {
		return o.after(d)
	}
	return time.After(d)
}

// TopicStatus is one row of narad status; -o json prints these, so the names are stable.
type TopicStatus struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	// Retained is messages retained (high watermark minus oldest offset, summed).
	Retained  int64 `json:"messages_retained"`
	SizeBytes int64 `json:"size_bytes"`
	// InFlight and Lag come from the node's /metrics; nil when it does not expose them
	// to this user.
	InFlight *int64 `json:"in_flight,omitempty"`
	Lag      *int64 `json:"lag,omitempty"`
	// Partial is a topic whose stats missed a partition owner, Error one that could not
	// be read at all.
	Partial bool   `json:"partial,omitempty"`
	Error   string `json:"error,omitempty"`
	// ProducePerSec and ConsumePerSec are status --watch's rates: messages a second
	// since the previous refresh (produced: the high watermarks' growth; consumed:
	// messages acked, from the metrics). Nil on a first refresh and wherever a
	// reading is missing.
	ProducePerSec *float64 `json:"produce_per_sec,omitempty"`
	ConsumePerSec *float64 `json:"consume_per_sec,omitempty"`

	// highWatermark is the partitions' high watermarks summed: every message ever
	// appended, what the produce rate counts.
	highWatermark int64
	// queue is what the metrics say of the topic (nil: nothing).
	queue *topicQueue
	// err is why the topic could not be read (Error is its text).
	err error
}

func newStatusCmd(f *Factory) *cobra.Command {
	return statusCmd(f, statusRun)
}

func statusCmd(f *Factory, run func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [TOPIC...] [--watch | --wait-empty]",
		Short: "Every topic at a glance: messages, size, in flight, lag",
		Long: "Show every topic (or the topics named) at a glance: partitions, messages retained,\n" +
			"bytes retained, and, where the node's /metrics is readable, messages in flight\n" +
			"(leased, not yet acked) and lag (messages consumers can still take). A user with\n" +
			"only consume grants sees what those grants allow; what cannot be read shows as -.\n" +
			"A TOPIC named that does not exist is a line on stderr rather than a row, and the\n" +
			"exit is 1 once the others are shown (with -o json its row has \"error\").\n" +
			"With -o json: {\"topics\":[{\"name\",\"partitions\",\"messages_retained\",\"size_bytes\",\n" +
			"\"in_flight\"?,\"lag\"?,\"partial\"?,\"error\"?}]}.\n\n" +
			"--watch refreshes every --interval (2s), adding each topic's produce and consume\n" +
			"rates in messages a second since the previous refresh: produce from the growth of\n" +
			"the high watermarks, consume from the growth of the messages acked as the metrics\n" +
			"count them (messages produced, less lag, plus acked ahead). On a terminal the\n" +
			"table is redrawn in place with the time of the last refresh; a node that cannot\n" +
			"be reached is shown as such and tried again (credentials it refuses, 401, end\n" +
			"the watch at once: exit 1); arrows scroll, q or Ctrl-C quits\n" +
			"(exit 0). Elsewhere each refresh is printed whole: a line \"at HH:MM:SS (every D)\"\n" +
			"(HH:MM:SS.S with an --interval under 1s),\n" +
			"the table and a blank line; with -o json, one line a refresh:\n" +
			"  {\"time\",\"topics\":[{...,\"produce_per_sec\"?,\"consume_per_sec\"?}],\n" +
			"   \"error\"?,\"metrics_error\"?}\n" +
			"(lines that go to a terminal end with q too, exit 0).\n" +
			"--count N stops after N refreshes, --timeout D after D (exit 3 if --count was\n" +
			"not reached); on a terminal the last screen then stays on it.\n" +
			"A refresh costs one request per topic and one for /metrics; the topics are\n" +
			"listed at the start and again only when the metrics show the set changed.\n\n" +
			"--wait-empty polls the topics named every --interval until the node's metrics say\n" +
			"nothing is ready or in flight on any of them, then exits 0: for CI, the workers\n" +
			"drained it. At --timeout it exits 3 and says what is left per topic; without one,\n" +
			"it says once after 30s what it still waits for. A node that answers 503 (busy)\n" +
			"is waited for, the first look included; looks still failing after 30s say why. Where the\n" +
			"metrics cannot be read (401, 403, 404), or say nothing of a topic, it says so\n" +
			"and exits 1 rather than guess. With -o json: {\"empty\",\"waited_seconds\",\n" +
			"\"topics\":[{\"name\",\"ready\",\"in_flight\",\"unseen\"?}]}.",
		Example: "  narad status\n" +
			"  narad status orders payments -o json |\n" +
			"    jq '.topics[] | select(.lag > 10000) | .name'\n" +
			"  narad status --watch\n" +
			"  narad status orders -w --interval 10s -o json >> orders.log\n" +
			"  # in CI, once the workers run:\n" +
			"  narad status orders --wait-empty --timeout 5m",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topics = args
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicNames(args...), checkStatusFlags(opts, cmd.Flags().Changed))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "refresh every --interval, with produce and consume rates (q or Ctrl-C ends it)")
	fl.BoolVar(&opts.WaitEmpty, "wait-empty", false, "wait until nothing is ready or in flight on TOPIC... (exit 3 at --timeout)")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "with --watch or --wait-empty: time between refreshes (at least 100ms)")
	fl.IntVar(&opts.Count, "count", 0, "with --watch: stop after N refreshes")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "with --watch or --wait-empty: stop after D (--wait-empty: exit 3)")
	return cmd
}

// minStatusInterval is the shortest --interval, watch(1)'s floor: below it refreshes
// come back to back, a load on the node that nobody can read at that pace.
const minStatusInterval = 100 * time.Millisecond

// checkStatusFlags refuses the combinations that mean nothing.
func checkStatusFlags(opts *StatusOptions, changed func(string) bool) error {
	switch {
	case opts.Watch && opts.WaitEmpty:
		return usageErrorf("--watch and --wait-empty do not go together (one watches, the other waits)")
	case opts.WaitEmpty && len(opts.Topics) == 0:
		return usageErrorf("--wait-empty needs the topics to wait for (narad status TOPIC... --wait-empty)")
	case !opts.Watch && !opts.WaitEmpty:
		for _, name := range []string{"interval", "count", "timeout"} {
			if changed(name) {
				return usageErrorf("--%s needs --watch or --wait-empty (plain status looks once: add -w)", name)
			}
		}
	case changed("count") && !opts.Watch:
		return usageErrorf("--count needs --watch (--wait-empty ends when the topics are empty)")
	case opts.Interval < minStatusInterval:
		return usageErrorf("--interval must be at least %s, not %s (each refresh reads every topic again: 500ms, 2s)",
			minStatusInterval, opts.Interval)
	case opts.Count < 0:
		return usageErrorf("invalid --count %d (0 for no end, or the number of refreshes)", opts.Count)
	case opts.Timeout < 0:
		return usageErrorf("invalid --timeout %s (a positive duration: 30s, 5m)", opts.Timeout)
	}
	return nil
}

// statusParallel bounds the topic reads in flight: enough to hide round trips,
// few enough not to look like a flood to the node.
const statusParallel = 8

func statusRun(opts *StatusOptions) error {
	switch {
	case opts.Watch:
		return statusWatch(opts)
	case opts.WaitEmpty:
		return statusWaitEmpty(opts)
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	names := opts.Topics
	if len(names) == 0 {
		if names, err = topicNames(ctx, c); err != nil {
			return opts.apiFatal(c, err, "")
		}
	}
	rows, _, merr := readStatus(ctx, c, names)
	if err := credentialsRefused(rows, merr); err != nil {
		return opts.apiFatal(c, err, "")
	}
	if len(rows) > 0 && allUnreached(rows) && merr != nil && client.StatusOf(merr) == 0 {
		// Not one answer, the metrics' included: the node is not there (a wrong
		// --server), which is one line, as with no TOPIC, not a row of dashes and a
		// line per topic saying the same thing.
		return opts.apiFatal(c, rows[0].err, "")
	}

	// A topic named that is not there (a typo) fails the command, as kubectl get a b
	// does: exit 1 once what is there was shown, and a line for each that is not. A
	// topic listed by the node and gone before its look was there: a row of dashes.
	named := len(opts.Topics) > 0
	if opts.Output == "json" {
		// The document keeps a row for every topic named, in the order named, the
		// missing ones with their "error": a script finds them there, and the exit
		// code tells one under set -e that something named was not there.
		if err := opts.printJSON(struct {
			Topics []TopicStatus `json:"topics"`
		}{nonNil(rows)}); err != nil {
			return err
		}
		missing := 0
		for _, r := range rows {
			if named && notThere(r) {
				missing++
				fmt.Fprintf(opts.IO.ErrOut, "narad: %s\n", render.Escape(opts.rowProblem(c, r)))
			}
		}
		if missing > 0 || len(rows) > 0 && allFailed(rows) {
			// As in text: nothing could be read, whatever the document says per topic.
			return exitWith(ExitFailed, nil)
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no topics (create one with narad topic create NAME)")
		return nil
	}
	if merr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "narad: in flight and lag not shown: %s\n", render.Escape(metricsProblem(merr)))
	}
	table := make([][]string, 0, len(rows))
	failed, missing := 0, 0
	for _, r := range rows {
		if r.Error != "" {
			failed++
			fmt.Fprintf(opts.IO.ErrOut, "narad: %s\n", render.Escape(opts.rowProblem(c, r)))
		}
		if named && notThere(r) {
			missing++
			continue // shown on stderr only: a row of dashes would say it exists
		}
		table = append(table, statusCells(r))
	}
	if len(table) > 0 {
		if err := opts.printTable(statusHeaders, table); err != nil {
			return err
		}
	}
	if missing > 0 || failed == len(rows) {
		return exitWith(ExitFailed, nil)
	}
	return nil
}

// notThere reports a topic the node does not have (404).
func notThere(r TopicStatus) bool { return client.StatusOf(r.err) == http.StatusNotFound }

// rowProblem is the line for a topic that could not be read, with the hint the same
// failure gets as a command's fatal line (a topic not there: where to see the names),
// as status --watch says it.
func (opts *StatusOptions) rowProblem(c *client.Client, r TopicStatus) string {
	line := r.Name + ": " + r.Error
	if r.err == nil {
		return line
	}
	var ee *exitError
	if errors.As(opts.apiFatal(c, fmt.Errorf("%s: %w", r.Name, r.err), r.Name), &ee) && ee.err != nil {
		return ee.err.Error()
	}
	return line
}

// credentialsRefused is the first 401 a look met, a topic's or the metrics': the
// node refuses the credentials, not a topic, so the command fails at once with the
// credentials hint rather than show rows of dashes, or, watching and waiting, ask
// again every interval (a real node locks a user name out after five failed logins,
// for every worker that uses it).
func credentialsRefused(rows []TopicStatus, merr error) error {
	for _, r := range rows {
		if client.StatusOf(r.err) == http.StatusUnauthorized {
			return r.err
		}
	}
	if client.StatusOf(merr) == http.StatusUnauthorized {
		return merr
	}
	return nil
}

// allFailed reports whether no topic of rows could be read.
func allFailed(rows []TopicStatus) bool {
	for _, r := range rows {
		if r.Error == "" {
			return false
		}
	}
	return true
}

// topicNames lists every topic's name.
func topicNames(ctx context.Context, c *client.Client) ([]string, error) {
	topics, err := c.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names, nil
}

// readStatus is one look at the node: each topic's info, then the metrics (read
// after the infos, so that a live node's produced counts are never behind the high
// watermarks just read). That is one request per topic and one for the metrics.
// The metrics are nil, with merr, when they could not be read.
func readStatus(ctx context.Context, c *client.Client, names []string) (rows []TopicStatus, m *queueMetrics, merr error) {
	rows = readTopicStatus(ctx, c, names)
	text, merr := c.Metrics(ctx)
	if merr != nil {
		return rows, nil, merr
	}
	q := parseQueueMetrics(text)
	applyMetrics(rows, q)
	return rows, &q, nil
}

var statusHeaders = []string{"TOPIC", "PARTITIONS", "MESSAGES", "SIZE", "IN FLIGHT", "LAG"}

// statusCells are r's cells under statusHeaders: "-" for all but the name when it
// could not be read.
func statusCells(r TopicStatus) []string {
	if r.Error != "" {
		return []string{r.Name, "-", "-", "-", "-", "-"}
	}
	retained := strconv.FormatInt(r.Retained, 10)
	if r.Partial {
		retained += "+"
	}
	return []string{r.Name, strconv.Itoa(r.Partitions), retained, formatBytes(r.SizeBytes),
		optCount(r.InFlight), optCount(r.Lag)}
}

func optCount(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

// readTopicStatus reads each topic's info, a few at a time, keeping the order given.
// A topic that cannot be read (403 for this user, deleted meanwhile) keeps its row
// with the error, so one refusal does not hide the others.
func readTopicStatus(ctx context.Context, c *client.Client, names []string) []TopicStatus {
	rows := make([]TopicStatus, len(names))
	sem := make(chan struct{}, statusParallel)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i] = TopicStatus{Name: name}
			t, err := c.Topic(ctx, name)
			if err != nil {
				rows[i].Error = describeErr(err)
				rows[i].err = err
				return
			}
			rows[i].Partitions = t.Partitions
			rows[i].Partial = t.Partial
			for _, p := range t.PartitionStats {
				rows[i].Retained += max(p.HighWatermark-p.OldestOffset, 0)
				rows[i].SizeBytes += p.SizeBytes
				rows[i].highWatermark += p.HighWatermark
			}
		}()
	}
	wg.Wait()
	return rows
}

// queueMetrics are the per-topic sums of the node's per-partition queue series.
type queueMetrics struct {
	// inFlight is messages leased; lag is messages above the committed frontier
	// (ready, leased, or acked ahead of an older unacked one); ackedAhead is the
	// acked ones among them; produced is messages ever appended.
	inFlight, lag, ackedAhead, produced map[string]int64
}

// topicQueue is one topic's queue as the metrics tell it.
type topicQueue struct {
	inFlight, lag, ackedAhead, produced int64
	// hasAckedAhead and hasProduced say whether those series were there: without
	// them neither ready nor the consume rate can be told.
	hasAckedAhead, hasProduced bool
}

// ready is messages a consumer could take now: above the frontier, neither leased
// nor acked.
func (q *topicQueue) ready() int64 { return max(q.lag-q.inFlight-q.ackedAhead, 0) }

// settled is messages ever acked (or aged out unacked, which the node cannot tell
// apart): all below the frontier, plus those acked ahead of it. Its growth is the
// consume rate.
func (q *topicQueue) settled() int64 { return q.produced - q.lag + q.ackedAhead }

// queueSeries are the series status reads, each into its own map.
var queueSeries = []struct {
	prefix string
	into   func(*queueMetrics) map[string]int64
}{
	{"narad_inflight_size{", func(m *queueMetrics) map[string]int64 { return m.inFlight }},
	{"narad_consumer_lag_messages{", func(m *queueMetrics) map[string]int64 { return m.lag }},
	{"narad_acked_ahead_size{", func(m *queueMetrics) map[string]int64 { return m.ackedAhead }},
	{"narad_messages_produced_total{", func(m *queueMetrics) map[string]int64 { return m.produced }},
}

// parseQueueMetrics reads the queue series status shows from Prometheus text:
// narad_inflight_size, narad_consumer_lag_messages, narad_acked_ahead_size and
// narad_messages_produced_total, labelled topic and partition. Anything else,
// comments included, is skipped; a line it cannot read is skipped too, since a
// partial overview is better than none.
func parseQueueMetrics(text []byte) queueMetrics {
	m := queueMetrics{inFlight: map[string]int64{}, lag: map[string]int64{}, ackedAhead: map[string]int64{},
		produced: map[string]int64{}}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]int64
		for _, s := range queueSeries {
			if strings.HasPrefix(line, s.prefix) {
				into = s.into(&m)
				break
			}
		}
		if into == nil {
			continue
		}
		open := strings.IndexByte(line, '{')
		end := strings.LastIndexByte(line, '}')
		if end < open {
			continue
		}
		topic, ok := promLabel(line[open+1:end], "topic")
		if !ok {
			continue
		}
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		into[topic] += int64(v)
	}
	return m
}

// promLabel finds name="value" among Prometheus labels. Topic names never hold a
// quote or a backslash (API.md's name rule), so no unescaping is needed.
func promLabel(labels, name string) (string, bool) {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == name && len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			return v[1 : len(v)-1], true
		}
	}
	return "", false
}

// queue is what m says of one topic, nil when it has neither in-flight nor lag
// series for it (nothing can be told then).
func (m *queueMetrics) queue(topic string) *topicQueue {
	inFlight, okIn := m.inFlight[topic]
	lag, okLag := m.lag[topic]
	if !okIn || !okLag {
		return nil
	}
	q := &topicQueue{inFlight: inFlight, lag: lag}
	q.ackedAhead, q.hasAckedAhead = m.ackedAhead[topic]
	q.produced, q.hasProduced = m.produced[topic]
	return q
}

func applyMetrics(rows []TopicStatus, m queueMetrics) {
	for i := range rows {
		if rows[i].Error != "" {
			continue
		}
		if v, ok := m.inFlight[rows[i].Name]; ok {
			rows[i].InFlight = &v
		}
		if v, ok := m.lag[rows[i].Name]; ok {
			rows[i].Lag = &v
		}
		rows[i].queue = m.queue(rows[i].Name)
	}
}
