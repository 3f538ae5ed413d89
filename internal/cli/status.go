package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// StatusOptions configure narad status.
type StatusOptions struct {
	Output string
	// Topics limits the overview to these topics; empty means every topic.
	Topics []string
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
}

func newStatusCmd(f *Factory) *cobra.Command {
	return statusCmd(f, statusRun)
}

func statusCmd(f *Factory, run func(*Factory, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [TOPIC...]",
		Short: "Every topic at a glance: messages, size, in flight, lag",
		Long: "Show every topic (or the topics named) at a glance: partitions, messages retained,\n" +
			"bytes retained, and, where the node's /metrics is readable, messages in flight\n" +
			"(leased, not yet acked) and lag (messages consumers can still take). A user with\n" +
			"only consume grants sees what those grants allow; what cannot be read shows as -.\n" +
			"With -o json: {\"topics\":[{\"name\",\"partitions\",\"messages_retained\",\"size_bytes\",\n" +
			"\"in_flight\"?,\"lag\"?,\"partial\"?,\"error\"?}]}.",
		Example: "  narad status\n" +
			"  narad status orders payments -o json |\n" +
			"    jq '.topics[] | select(.lag > 10000) | .name'",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicNames(args...); err != nil {
				return err
			}
			opts.Topics = args
			return run(f, opts)
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

// statusParallel bounds the topic reads in flight: enough to hide round trips,
// few enough not to look like a flood to the node.
const statusParallel = 8

func statusRun(f *Factory, opts *StatusOptions) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	names := opts.Topics
	if len(names) == 0 {
		topics, err := c.ListTopics(ctx)
		if err != nil {
			return apiFatal(f, c, err, "")
		}
		for _, t := range topics {
			names = append(names, t.Name)
		}
	}
	rows := readTopicStatus(ctx, c, names)

	metrics, merr := c.Metrics(ctx)
	if merr == nil {
		applyMetrics(rows, parseQueueMetrics(metrics))
	}

	if opts.Output == "json" {
		if rows == nil {
			rows = []TopicStatus{}
		}
		return printJSON(f, struct {
			Topics []TopicStatus `json:"topics"`
		}{rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "no topics (create one with narad topic create NAME)")
		return nil
	}
	switch {
	case merr == nil:
	case client.StatusOf(merr) == http.StatusUnauthorized || client.StatusOf(merr) == http.StatusForbidden:
		fmt.Fprintln(f.IO.ErrOut, "narad: in flight and lag not shown: this user may not read the node's /metrics")
	default:
		fmt.Fprintf(f.IO.ErrOut, "narad: in flight and lag not shown: %s\n", render.Escape(describeErr(merr)))
	}
	table := make([][]string, 0, len(rows))
	failed := 0
	for _, r := range rows {
		if r.Error != "" {
			failed++
			table = append(table, []string{r.Name, "-", "-", "-", "-", "-"})
			fmt.Fprintf(f.IO.ErrOut, "narad: %s: %s\n", render.Escape(r.Name), render.Escape(r.Error))
			continue
		}
		retained := strconv.FormatInt(r.Retained, 10)
		if r.Partial {
			retained += "+"
		}
		table = append(table, []string{r.Name, strconv.Itoa(r.Partitions), retained, formatBytes(r.SizeBytes),
			optCount(r.InFlight), optCount(r.Lag)})
	}
	if err := printTable(f, []string{"TOPIC", "PARTITIONS", "MESSAGES", "SIZE", "IN FLIGHT", "LAG"}, table); err != nil {
		return err
	}
	if failed == len(rows) {
		return exitWith(ExitFailed, nil)
	}
	return nil
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
				return
			}
			rows[i].Partitions = t.Partitions
			rows[i].Partial = t.Partial
			for _, p := range t.PartitionStats {
				rows[i].Retained += max(p.HighWatermark-p.OldestOffset, 0)
				rows[i].SizeBytes += p.SizeBytes
			}
		}()
	}
	wg.Wait()
	return rows
}

// queueMetrics are the per-topic sums of the node's per-partition queue gauges.
type queueMetrics struct{ inFlight, lag map[string]int64 }

// parseQueueMetrics reads the two gauges status shows from Prometheus text:
// narad_inflight_size and narad_consumer_lag_messages, labelled topic and partition.
// Anything else, comments included, is skipped; a line it cannot read is skipped too,
// since a partial overview is better than none.
func parseQueueMetrics(text []byte) queueMetrics {
	m := queueMetrics{inFlight: map[string]int64{}, lag: map[string]int64{}}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]int64
		switch {
		case strings.HasPrefix(line, "narad_inflight_size{"):
			into = m.inFlight
		case strings.HasPrefix(line, "narad_consumer_lag_messages{"):
			into = m.lag
		default:
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
	}
}
