package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/producer"
	"github.com/narad/narad/internal/render"
)

// settleGather bounds how many handles read from stdin go to one client.Settle call
// (which cuts them in batches of 100, sent in parallel), and settleLinger how long
// to wait for more before sending what was read: handles that come from a running
// `sub` must not wait for its end while their leases run out.
const (
	settleGather = 1000
	settleLinger = 50 * time.Millisecond
)

type SettleOptions struct {
	runEnv
	Name    string // ack, extend or nack
	Action  client.Action
	Topic   string
	Handles []string // as given; "-" reads stdin
	Output  string
}

func newSettleCmd(f *Factory, name string, a client.Action) *cobra.Command {
	return settleCmd(f, name, a, settleRun)
}

var settleShort = map[string]string{
	"ack":    "Settle leased messages for good",
	"extend": "Renew leases for a full visibility timeout from now",
	"nack":   "Give leased messages back at once",
}

// settleDoes says what each settlement does to a message, for its help.
var settleDoes = map[string]string{
	"ack": "An acked message is done: it is never delivered again, to anyone.",
	"extend": "Extending renews a lease for a full visibility timeout of the topic, counted from\n" +
		"now (not added to what is left): the message stays hidden from other consumers, and\n" +
		"its handle stays valid, while slow work goes on. The topic's setting is unchanged.",
	"nack": "A nacked message is given back at once, without waiting for its lease to run out:\n" +
		"it is redelivered right away (to a waiting consumer, with a new handle). Use it for\n" +
		"work that cannot be done now, so that it does not wait out the lease.",
}

var settleExamples = map[string]string{
	"ack": "  # Settle one handle (from sub -o json, or $NARAD_RECEIPT_HANDLE)\n" +
		"  narad ack orders 4:0:3327358780392153864\n\n" +
		"  # Take ten, look at them, then settle them\n" +
		"  narad sub orders --no-ack --count 10 -o json > held.jsonl\n" +
		"  narad ack orders - < held.jsonl",
	"extend": "  # Keep messages taken with --no-ack for another visibility timeout\n" +
		"  narad extend orders - < held.jsonl\n" +
		"  narad extend orders 4:0:3327358780392153864",
	"nack": "  # Give back at once what was taken but will not be handled\n" +
		"  narad nack orders - < held.jsonl\n\n" +
		"  # Look at the next message and give it straight back\n" +
		"  narad sub orders --no-ack --count 1 -o json | tee next.json |\n" +
		"    narad nack orders -",
}

func settleCmd(f *Factory, name string, a client.Action, run func(*SettleOptions) error) *cobra.Command {
	opts := &SettleOptions{Name: name, Action: a}
	cmd := &cobra.Command{
		Use:   name + " TOPIC HANDLE...",
		Short: settleShort[name],
		Long: settleShort[name] + `, by receipt handle.

` + settleDoes[name] + `

Handles are arguments, or - to read stdin: one handle a line, or lines of
"narad sub -o json" (their receipt_handle is used), so that
"narad sub orders --no-ack -o json | narad ` + name + ` orders -" works. Handles read
from stdin are sent as they come. They go in batches of up to 100; a node older than
v3.1 is served one handle at a time. 502 and 503 are retried per handle with backoff.

Silent on success; each handle whose lease was gone (410) or that failed is a line on
stderr. With -o json, one result per handle on stdout:
  {"receipt_handle":"4:0:123","status":204}
  {"receipt_handle":"4:0:124","status":410,"error":"..."}
Exit 0 when all were settled, 4 when some leases were gone (and nothing else failed),
2 when some handle was malformed (a 400; nothing but gone leases besides), 1 on any
other failure.`,
		Example: settleExamples[name],
		Args:    minArgs(1, "a topic and receipt handles, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic, opts.Handles = args[0], args[1:]
			var stdin error
			if slices.Contains(opts.Handles, "-") {
				stdin = f.runEnv().claimStdin("handles", "give them as arguments")
			}
			return runWith(f, opts, run, validateTopicName(opts.Topic), opts.validate(), stdin)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "text", "output format: text (failures on stderr) or json (a result per handle on stdout)")
	blankOwnChecked(cmd.Flags(), "output")
	addJQFlag(cmd)
	return cmd
}

func (o *SettleOptions) validate() error {
	if o.Output != "text" && o.Output != "json" {
		return usageErrorf("invalid --output %q (text or json)", o.Output)
	}
	if len(o.Handles) == 0 {
		return usageErrorf("no receipt handles (give them as arguments, or - to read them from stdin)")
	}
	stdin := 0
	for _, h := range o.Handles {
		switch {
		case h == "-":
			stdin++
		case strings.TrimSpace(h) == "":
			// Most often "$H" of a variable never set: say so rather than send nothing.
			return usageErrorf("empty receipt handle argument (an unset variable? pass the handle, or - to read them from stdin)")
		}
	}
	if stdin > 1 {
		return usageErrorf("- (stdin) given more than once")
	}
	return nil
}

// settleItem is one handle to settle, or an input line that holds none.
type settleItem struct {
	handle string
	where  string // "line 3" for handles read from stdin
	err    error  // the line had no usable handle
}

// parseHandleLine reads a handle from one line of stdin: the line itself, or the
// receipt_handle of a `sub -o json` line (one starting with "{"). ok is false for a
// blank line.
func parseHandleLine(line []byte) (handle string, ok bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return "", false, nil
	}
	if line[0] != '{' {
		return string(line), true, nil
	}
	var m struct {
		ReceiptHandle *string `json:"receipt_handle"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return "", true, fmt.Errorf("not a JSON message line: %v", jsonErrorText(err))
	}
	if m.ReceiptHandle == nil || *m.ReceiptHandle == "" {
		return "", true, errors.New("no receipt_handle (a message from --peek or replay holds no lease)")
	}
	return *m.ReceiptHandle, true, nil
}

// handleReader reads the handles to settle. Once ctx ends (a signal) it starts no new
// read of stdin but still hands over the lines it already holds, so that whoever
// stops can name every handle that was taken from stdin (see leftovers).
type handleReader struct {
	items   chan settleItem
	readErr chan error

	mu      sync.Mutex
	reading bool          // blocked in a read of stdin, holding no whole line
	later   []string      // the handle arguments after "-", not sent while reading it
	early   bool          // stopped before the end of input
	lines   int           // stdin lines taken whole
	waiting chan struct{} // a value when reading turns true
}

func newHandleReader(ctx context.Context, in io.Reader, args []string) *handleReader {
	h := &handleReader{items: make(chan settleItem, settleGather), readErr: make(chan error, 1),
		waiting: make(chan struct{}, 1)}
	go h.run(ctx, in, args)
	return h
}

func (h *handleReader) run(ctx context.Context, in io.Reader, args []string) {
	defer close(h.items)
	for i, a := range args {
		if a != "-" {
			h.items <- settleItem{handle: a}
			continue
		}
		h.mu.Lock()
		h.later = args[i+1:]
		h.mu.Unlock()
		r := bufio.NewReaderSize(in, 64<<10)
		for lineNo := 1; ; lineNo++ {
			whole := lineBuffered(r)
			if ctx.Err() != nil && !whole {
				// Stop reading stdin; handles given as arguments still count.
				h.mu.Lock()
				h.early = true
				h.mu.Unlock()
				break
			}
			h.setReading(!whole)
			line, n, err := readLine(r, 1<<20)
			h.setReading(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				h.readErr <- err
				return
			}
			h.mu.Lock()
			h.lines = lineNo
			h.mu.Unlock()
			it := settleItem{where: fmt.Sprintf("line %d", lineNo)}
			if n > 1<<20 {
				it.err = fmt.Errorf("over %s, not a handle", formatBytes(1<<20))
			} else {
				hd, ok, err := parseHandleLine(line)
				if !ok {
					continue
				}
				it.handle, it.err = hd, err
			}
			// No stop here: after one, whoever stopped takes what is sent (leftovers).
			h.items <- it
		}
	}
	h.readErr <- nil
}

func (h *handleReader) setReading(on bool) {
	h.mu.Lock()
	h.reading = on
	h.mu.Unlock()
	if on {
		select {
		case h.waiting <- struct{}{}:
		default:
		}
	}
}

// leftovers is for after ctx ended: every item read and not taken yet, and the
// number of the last stdin line taken when input was left unread (0 when all of it
// was read, or stdin was not read at all).
func (h *handleReader) leftovers() (rest []settleItem, unreadAfter int, unread bool) {
	for {
		select {
		case it, ok := <-h.items:
			if !ok {
				h.mu.Lock()
				defer h.mu.Unlock()
				return rest, h.lines, h.early
			}
			rest = append(rest, it)
			continue
		case <-h.waiting:
		}
		h.mu.Lock()
		reading, lines, later := h.reading, h.lines, h.later
		h.mu.Unlock()
		if !reading {
			continue
		}
		// Blocked on stdin: every whole line it took was sent before it began, and
		// the arguments after "-" will not be.
		for _, a := range later {
			rest = append(rest, settleItem{handle: a})
		}
		for {
			select {
			case it, ok := <-h.items:
				if ok {
					rest = append(rest, it)
					continue
				}
			default:
			}
			return rest, lines, true
		}
	}
}

// lineBuffered reports whether r holds a whole line, so that reading it does not
// read stdin.
func lineBuffered(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// gather takes the next items: it waits for one, then takes what follows within
// settleLinger of the previous, up to settleGather. ok is false at the end of input.
func gather(ctx context.Context, items <-chan settleItem) (batch []settleItem, ok bool) {
	select {
	case it, more := <-items:
		if !more {
			return nil, false
		}
		batch = append(batch, it)
	case <-ctx.Done():
		return nil, false
	}
	t := time.NewTimer(settleLinger)
	defer t.Stop()
	for len(batch) < settleGather {
		select {
		case it, more := <-items:
			if !more {
				return batch, true
			}
			batch = append(batch, it)
			// Since Go 1.23 Reset drops a value the timer may have left in t.C.
			t.Reset(settleLinger)
		case <-t.C:
			return batch, true
		case <-ctx.Done():
			return batch, true
		}
	}
	return batch, true
}

// settleResultJSON is one line of -o json.
type settleResultJSON struct {
	ReceiptHandle string `json:"receipt_handle"`
	Status        int    `json:"status"`
	Error         string `json:"error,omitempty"`
}

func settleRun(opts *SettleOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	// The first signal stops at once: in-flight requests and retries are cut, and
	// every handle not confirmed is listed so that it can be sent again.
	ctx, cancel := opts.Context()
	defer cancel()
	if opts.IO.IsStdinTTY() && slices.Contains(opts.Handles, "-") {
		fmt.Fprintln(opts.IO.ErrOut, readingTerminal("handles, one a line,"))
	}
	rd := newHandleReader(ctx, opts.IO.In, opts.Handles)
	t := &settleTally{opts: opts}
	for ctx.Err() == nil {
		batch, ok := gather(ctx, rd.items)
		if !ok {
			break
		}
		var handles []string
		for _, it := range batch {
			if ctx.Err() != nil {
				t.unsent = append(t.unsent, it)
				continue
			}
			if t.take(it) {
				handles = append(handles, it.handle)
			}
		}
		if len(handles) == 0 {
			continue
		}
		results, err := c.Settle(ctx, opts.Topic, opts.Action, handles)
		if err != nil && ctx.Err() == nil {
			return opts.apiFatal(c, err, opts.Topic)
		}
		if err := t.results(ctx, results); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return t.stopped(rd)
	}
	opts.writeUnconfirmed(opts.Topic, t.unconfirmed)
	if err := <-rd.readErr; err != nil {
		return exitWith(ExitFailed, fmt.Errorf("cannot read stdin: %v (handles read before it were settled)", err))
	}
	return t.exit()
}

// settleTally is what a settle run counts and keeps, and says per handle.
type settleTally struct {
	opts                           *SettleOptions
	total, gone, failed, malformed int
	unconfirmed                    []pendingSettle
	unsent                         []settleItem // gathered when the signal came
	outClosed                      bool
}

// take counts an item read; false for a line that holds no handle (said on stderr).
func (t *settleTally) take(it settleItem) bool {
	t.total++
	if it.err != nil {
		t.failed++
		fmt.Fprintf(t.opts.IO.ErrOut, "narad: %s: %v\n", it.where, it.err)
		return false
	}
	return true
}

// results counts the node's answers and reports each: a line on stderr for each
// one that failed, or with -o json a result per handle on stdout.
func (t *settleTally) results(ctx context.Context, results []client.SettleResult) error {
	for _, r := range results {
		switch {
		case r.Status == http.StatusNoContent:
		case r.Status == http.StatusGone:
			t.gone++
		case r.Status == http.StatusBadRequest:
			t.malformed++ // not a handle (400 receipt handle is malformed): invalid input
		default:
			t.failed++
		}
		if r.Unconfirmed() {
			t.unconfirmed = append(t.unconfirmed, pendingSettle{t.opts.Name, r.Handle})
		}
		if t.opts.Output == "json" {
			if t.outClosed {
				continue
			}
			if err := t.opts.writeJSON(t.opts.IO.Out, settleResultJSON{r.Handle, r.Status, r.Err}); err != nil {
				if !consumer.IsClosedOutput(err) {
					return jsonDone(err)
				}
				t.outClosed = true // | head: keep settling, stop printing
			}
			continue
		}
		if ctx.Err() != nil && r.Unconfirmed() {
			continue // cut by the signal: the list below says it
		}
		if line := settleFailureLine(t.opts.Name, r); line != "" {
			fmt.Fprintln(t.opts.IO.ErrOut, line)
		}
	}
	return nil
}

// stopped ends a run a signal stopped: every handle taken and not confirmed is
// listed to be sent again, and where stdin was left.
func (t *settleTally) stopped(rd *handleReader) error {
	rest, after, unread := rd.leftovers()
	for _, it := range append(t.unsent, rest...) {
		if t.take(it) {
			t.unconfirmed = append(t.unconfirmed, pendingSettle{t.opts.Name, it.handle})
		}
	}
	t.opts.writeUnconfirmed(t.opts.Topic, t.unconfirmed)
	if unread {
		fmt.Fprintf(t.opts.IO.ErrOut, "narad: stopped reading stdin after line %d\n", after)
	}
	return exitWith(ExitFailed, nil) // a signal: the exit code says it
}

// exit is the exit code of a run that read all its input.
func (t *settleTally) exit() error {
	switch {
	case t.total == 0:
		return usageErrorf("no receipt handles on stdin (one a line, or lines of narad sub -o json)")
	case t.failed > 0:
		// A failure of the node or the network outranks a bad handle: trying again
		// may cure it.
		return exitWith(ExitFailed, nil)
	case t.malformed > 0:
		return exitWith(ExitUsage, nil)
	case t.gone > 0:
		return exitWith(ExitLeaseGone, nil)
	}
	return nil
}

// requestPrefix is the method and URL a transport error starts with; the handle
// is already on the line, and the URL repeats it.
var requestPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z]+ "[^"]*": `) })

// maxHandleShown is the most of a handle an error line shows: a node's handles are a
// few dozen bytes, and one of 100 KB (garbage on stdin) would flood the terminal.
const maxHandleShown = 200

// settleFailureLine is the stderr line for one handle's result, "" on success:
// "narad: ack 4:0:123: lease gone (410 receipt handle no longer matches ...)".
func settleFailureLine(action string, r client.SettleResult) string {
	h := render.Escape(render.Cut(r.Handle, maxHandleShown))
	msg := r.Err
	if msg == "" {
		msg = strings.ToLower(http.StatusText(r.Status))
	}
	switch {
	case r.Status == http.StatusNoContent:
		return ""
	case r.Status == http.StatusGone:
		return fmt.Sprintf("narad: %s %s: lease gone (410 %s)", action, h, msg)
	case r.Status == 0:
		return fmt.Sprintf("narad: %s %s: no answer (%s)", action, h, requestPrefix().ReplaceAllString(msg, ""))
	}
	return fmt.Sprintf("narad: %s %s: failed (%d %s)", action, h, r.Status, msg)
}

// readLine and jsonErrorText are shared with the reader of handles of ack/extend/nack.
var (
	readLine      = producer.ReadLine
	jsonErrorText = producer.JSONErrorText
)
