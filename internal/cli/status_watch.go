package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// status --watch: the overview again every --interval, with each topic's produce and
// consume rates from the deltas between two refreshes.
//
// One goroutine does it all in line mode (not a terminal, or -o json): refresh,
// print, wait. On a terminal a second one reads the keys (watchTerminal); the refresh
// loop still owns the watcher, and the screen loop owns the view.
//
// What a refresh costs the node: one request per topic (its info) and one for the
// metrics. The list of topics is read once at the start, and again only when the
// metrics' topics change (a topic created or deleted), not at every refresh.

// watchSample is one refresh.
type watchSample struct {
	At   time.Time
	Rows []TopicStatus
	// Err is the node not reached at all (Rows nil); MetricsErr is only its metrics.
	Err, MetricsErr error
}

// watcher refreshes; it remembers the previous sample for the rates.
type watcher struct {
	c    *client.Client
	now  func() time.Time
	opts *StatusOptions

	names []string // the topics shown
	// listed is names coming from the node's list (no TOPIC given): relist is set
	// when the metrics' topics moved away from listedSet, the metrics' topics at the
	// last list.
	listed    bool
	relist    bool
	listedSet map[string]bool
	prev      *watchSample
}

func newWatcher(c *client.Client, now func() time.Time, opts *StatusOptions) *watcher {
	w := &watcher{c: c, now: now, opts: opts, names: opts.Topics}
	if len(opts.Topics) == 0 {
		w.listed, w.relist = true, true
	}
	return w
}

// refreshLimit bounds one refresh: a node that takes no answers but gives none
// would otherwise hold a refresh for a request timeout per few topics.
func refreshLimit(interval time.Duration) time.Duration { return max(2*interval, 10*time.Second) }

// errRefreshLimit is a refresh that ran out of its refreshLimit.
var errRefreshLimit = errors.New("the node gave no whole answer")

// refresh takes one sample and fills its rates from the previous good one.
func (w *watcher) refresh(ctx context.Context) watchSample {
	limit := refreshLimit(w.opts.Interval)
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s := w.look(rctx)
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return watchSample{At: s.At, Err: fmt.Errorf("%w within %s", errRefreshLimit, limit)}
	}
	if s.Err == nil {
		if w.prev != nil {
			watchRates(w.prev.Rows, w.prev.At, s.Rows, s.At)
		}
		w.prev = &s
	}
	return s
}

// look is one look at the node: the list when due, each topic, the metrics.
func (w *watcher) look(ctx context.Context) watchSample {
	s := watchSample{At: w.now()}
	if w.relist {
		names, err := topicNames(ctx, w.c)
		if err != nil {
			s.Err = err
			return s
		}
		w.names, w.relist, w.listedSet = names, false, nil
	}
	rows, m, merr := readStatus(ctx, w.c, w.names)
	if err := credentialsRefused(rows, merr); err != nil {
		return watchSample{At: s.At, Err: err}
	}
	s.Rows, s.MetricsErr = rows, merr
	if len(rows) > 0 && allUnreached(rows) {
		return watchSample{At: s.At, Err: rows[0].err}
	}
	if w.listed && m != nil {
		seen := m.topics()
		switch {
		case w.listedSet == nil:
			w.listedSet = seen
		case !sameSet(seen, w.listedSet):
			w.relist = true // read at the next refresh: this one is already taken
		}
	}
	return s
}

// allUnreached is a refresh where no topic got an answer: the node, not a topic.
func allUnreached(rows []TopicStatus) bool {
	for _, r := range rows {
		if r.err == nil || client.StatusOf(r.err) != 0 {
			return false
		}
	}
	return true
}

// topics is the set of topics the metrics have queue series for.
func (m *queueMetrics) topics() map[string]bool {
	set := make(map[string]bool, len(m.lag))
	for t := range m.lag {
		set[t] = true
	}
	return set
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// watchRates fills cur's rates from prev, taken dt earlier. The produce rate is the
// growth of the high watermarks; the consume rate the growth of the messages settled
// (acked) as the metrics count them. A rate is left nil where either reading is
// missing (an error, no metrics, stats with a partition missing) or its counter went
// back (the topic deleted and made again, the node restarted): no rate is better
// than a wrong one.
func watchRates(prev []TopicStatus, prevAt time.Time, cur []TopicStatus, at time.Time) {
	dt := at.Sub(prevAt).Seconds()
	if dt <= 0 {
		return
	}
	before := make(map[string]*TopicStatus, len(prev))
	for i := range prev {
		before[prev[i].Name] = &prev[i]
	}
	for i := range cur {
		r := &cur[i]
		p := before[r.Name]
		if p == nil || p.err != nil || r.err != nil {
			continue
		}
		if !p.Partial && !r.Partial {
			r.ProducePerSec = perSecond(p.highWatermark, r.highWatermark, dt)
		}
		if p.queue != nil && r.queue != nil && p.queue.hasProduced && r.queue.hasProduced &&
			p.queue.hasAckedAhead && r.queue.hasAckedAhead {
			r.ConsumePerSec = perSecond(p.queue.settled(), r.queue.settled(), dt)
		}
	}
}

// perSecond is a counter's growth a second, to a tenth; nil when it went back.
func perSecond(before, after int64, dt float64) *float64 {
	if after < before {
		return nil
	}
	v := math.Round(float64(after-before)/dt*10) / 10
	return &v
}

func statusWatch(opts *StatusOptions) error {
	// No retries within a refresh: the next refresh is the retry. Retried reads of
	// 500 topics from a node that went away would hold the screen for a minute and
	// more before it could say so.
	c, err := opts.ClientWith(func(cfg *client.Config) { cfg.Retry.BoundedAttempts = 1 })
	if err != nil {
		return err
	}
	ctx, cancel := opts.Context()
	defer cancel()
	if opts.Server == "" {
		opts.Server = c.BaseURL()
	}
	w := newWatcher(c, opts.Now, opts)
	first := w.refresh(ctx)
	if first.Err != nil && opts.Signals.Received() == syscall.SIGINT {
		// Ctrl-C during the first look (a node slow to answer) ends the watch as it
		// would later: exit 0, not 130.
		opts.Signals.ClearForCleanStop()
		return nil
	}
	if first.Err != nil {
		// A node never reached fails fast, as sub does; one that goes away later is
		// shown as gone and tried again.
		if errors.Is(first.Err, errRefreshLimit) {
			return exitWith(ExitFailed, fmt.Errorf("%v (a look may take twice --interval, at least 10s; try again later)", first.Err))
		}
		if busyStatus(first.Err) {
			// apiFatal's hint for these says they were retried: not this look's.
			return exitWith(ExitFailed, fmt.Errorf("%s (the first look is not retried; try again later)", describeErr(first.Err)))
		}
		return opts.apiFatal(c, first.Err, "")
	}
	if len(opts.Topics) > 0 {
		if r := refusedRow(first); r != nil {
			return opts.apiFatal(c, fmt.Errorf("%s: %w", render.Escape(r.Name), r.err), r.Name)
		}
	}
	var err2 error
	if opts.Output == "text" && opts.IO.IsStdoutTTY() {
		err2 = watchTerminal(ctx, opts, w, first)
	} else {
		err2 = watchLines(ctx, opts, w, first)
	}
	if opts.Signals.Received() == syscall.SIGINT {
		// Ctrl-C is how a watch ends: exit 0 (CLI.md), not 130.
		opts.Signals.ClearForCleanStop()
	}
	return err2
}

// refusedRow is the row of the first look for a TOPIC given that is not there (a
// typo) or that this user may not read: the watch fails with it in one line, as
// --wait-empty does, where it showed a row of dashes, with no word of why, for as
// long as it ran. Nil when each was read. (A topic deleted later keeps its row of
// dashes: it was there.)
func refusedRow(s watchSample) *TopicStatus {
	for i, r := range s.Rows {
		if st := client.StatusOf(r.err); st == http.StatusNotFound || st == http.StatusForbidden {
			return &s.Rows[i]
		}
	}
	return nil
}

// watchEnd is why a watch stops, besides a signal.
type watchEnd struct {
	timeout <-chan time.Time
	refreshes,
	count int
}

// done is a watch's end after a refresh, once --count refreshes were made.
func (e *watchEnd) done() bool {
	e.refreshes++
	return e.count > 0 && e.refreshes >= e.count
}

// timedOut is the result of --timeout: exit 3 when --count was not reached.
func (e *watchEnd) timedOut(opts *StatusOptions) error {
	if e.count > 0 {
		return exitWith(ExitTimeout, fmt.Errorf("--timeout %s ran out after %d of %d refreshes (a longer --timeout, or a smaller --count)",
			opts.Timeout, e.refreshes, e.count))
	}
	return nil
}

func newWatchEnd(opts *StatusOptions) *watchEnd {
	e := &watchEnd{count: opts.Count}
	if opts.Timeout > 0 {
		e.timeout = opts.timer(opts.Timeout)
	}
	return e
}

// watchLines prints each refresh as a whole document: a table (under a line with its
// time), or one compact JSON object a line.
func watchLines(ctx context.Context, opts *StatusOptions, w *watcher, s watchSample) error {
	end := newWatchEnd(opts)
	keys, restore := lineKeys(opts)
	defer restore()
	// A reader that went away between refreshes (`| head -n 1`) ends the watch as a
	// closed stdout does (exit 0), not only at the next refresh's write, an
	// --interval later.
	readerGone, stopWatch := consumer.WatchReader(iostreams.Unwrap(opts.IO.Out))
	defer stopWatch()
	for {
		if err := printWatchSample(opts, s); err != nil {
			if ctx.Err() != nil && errors.Is(err, iostreams.ErrReaderStuck) {
				// The Ctrl-C that ends the watch (exit 0) gave up a write its reader
				// was not taking.
				return nil
			}
			return jsonDone(err) // a reader gone away has seen enough: exit 0
		}
		if end.done() {
			return nil
		}
		next := opts.timer(max(opts.Interval-opts.Now().Sub(s.At), 0))
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-readerGone:
				return nil
			case <-end.timeout:
				return end.timedOut(opts)
			case k := <-keys:
				if quitKey(k) {
					return nil
				}
			case <-next:
				break wait
			}
		}
		s = w.refresh(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := refusedEnd(opts, w, s); err != nil {
			return err
		}
	}
}

// lineKeys are the keys typed while the lines of -o json go to a terminal, where q
// ends the watch as it does the table's screen; nil (no key ever) when stdin or
// stdout is not a terminal, so a watch in a pipe or a script reads nothing. The
// terminal keeps its output modes (the lines stay lines) and Ctrl-C its signal.
func lineKeys(opts *StatusOptions) (<-chan string, func()) {
	if !opts.IO.IsStdinTTY() || !opts.IO.IsStdoutTTY() {
		return nil, func() {}
	}
	restore := func() {}
	if in, ok := opts.IO.In.(*os.File); ok {
		if restore, ok = keysMode(int(in.Fd())); !ok {
			return nil, restore
		}
	}
	keys := make(chan string, 8)
	go readKeys(opts.IO.In, keys) // may stay blocked in a read at the end, which the process exit ends
	return keys, restore
}

// refusedEnd ends a watch whose refresh had its credentials refused (401): asking
// again every interval would only lock the user name out. Nil for any other sample.
func refusedEnd(opts *StatusOptions, w *watcher, s watchSample) error {
	if client.StatusOf(s.Err) != http.StatusUnauthorized {
		return nil
	}
	return opts.apiFatal(w.c, s.Err, "")
}

// watchLine is one refresh in -o json.
type watchLine struct {
	Time string `json:"time"`
	// Topics is absent when the node was not reached; Error then says why.
	Topics       []TopicStatus `json:"topics,omitempty"`
	Error        string        `json:"error,omitempty"`
	MetricsError string        `json:"metrics_error,omitempty"`
}

func printWatchSample(opts *StatusOptions, s watchSample) error {
	if opts.Output == "json" {
		line := watchLine{Time: s.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Topics: s.Rows}
		if s.Err != nil {
			line.Error = "cannot reach the node: " + describeErr(s.Err)
		} else if line.Topics == nil {
			line.Topics = []TopicStatus{}
		}
		if s.MetricsErr != nil {
			line.MetricsError = describeErr(s.MetricsErr)
		}
		return opts.writeJSON(opts.IO.Out, line)
	}
	out := opts.IO.Out
	if _, err := fmt.Fprintf(out, "at %s (every %s)\n", refreshTime(s.At, opts.Interval), roundDuration(opts.Interval)); err != nil {
		return err
	}
	if s.Err != nil {
		_, err := fmt.Fprintf(out, "cannot reach the node: %s (trying again)\n\n", render.Escape(describeErr(s.Err)))
		return err
	}
	if s.MetricsErr != nil {
		if _, err := fmt.Fprintf(out, "in flight, lag and consume rates not shown: %s\n", render.Escape(metricsProblem(s.MetricsErr))); err != nil {
			return err
		}
	}
	if err := render.Table(out, false, false, watchHeaders, watchCells(s.Rows)); err != nil {
		return err
	}
	_, err := io.WriteString(out, "\n")
	return err
}

// refreshTime is a refresh's time as the watch shows it: HH:MM:SS, and tenths of a
// second when refreshes come more often than once a second, where two or more in
// the same second had the same heading and could not be told apart. A tenth is
// enough: refreshes are at least minStatusInterval (100ms) apart.
func refreshTime(at time.Time, interval time.Duration) string {
	if interval < time.Second {
		return at.Format("15:04:05.0")
	}
	return at.Format("15:04:05")
}

// metricsProblem says why in flight and lag are not shown.
func metricsProblem(err error) string {
	if st := client.StatusOf(err); st == http.StatusUnauthorized || st == http.StatusForbidden {
		return "this user may not read the node's /metrics"
	}
	return describeErr(err)
}

var watchHeaders = []string{"TOPIC", "PARTITIONS", "MESSAGES", "SIZE", "IN FLIGHT", "LAG", "PRODUCE/S", "CONSUME/S"}

// watchCells are the table's cells for rows: status's, and the rates.
func watchCells(rows []TopicStatus) [][]string {
	cells := make([][]string, len(rows))
	for i, r := range rows {
		if r.Error != "" {
			cells[i] = append(statusCells(r), "-", "-")
			continue
		}
		cells[i] = append(statusCells(r), optRate(r.ProducePerSec), optRate(r.ConsumePerSec))
	}
	return cells
}

func optRate(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}
