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
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// produceMaxInput bounds one message read from the input. The node takes at most
// 1 MiB; anything this much larger is reported without being held in memory or sent
// (a stray binary file given to --lines must not take all the RAM).
const produceMaxInput = 16 << 20

// produceMaxConcurrency bounds -j: the client keeps about 64 connections alive.
const produceMaxConcurrency = 256

type produceOptions struct {
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
}

func newProduceCmd(f *Factory) *cobra.Command {
	return produceCmd(f, produceRun)
}

// produceCmd parses flags into produceOptions and hands them to run, so tests can
// check the parsing apart from the sending.
func produceCmd(f *Factory, run func(*Factory, *produceOptions) error) *cobra.Command {
	opts := &produceOptions{}
	var key string
	var partition int
	cmd := &cobra.Command{
		Use:     "produce TOPIC [MESSAGE...]",
		Aliases: []string{"pub"},
		Short:   "Produce messages to a topic",
		Long: `Produce messages to a topic.

Each MESSAGE argument is one message. Without arguments the messages come from
--file F (the whole file is one message, byte for byte; - is stdin) or from stdin
(all of it one message), unless:

  --lines  each line is one message (a trailing \r is dropped, empty lines are skipped)
  --json   each line is a message in the shape "narad sub -o json" prints; the payload
           is decoded back to the bytes that were produced (base64 included) and its
           key is kept unless --key is given; the partition is not kept (the target
           may have other partitions), so pass --partition to pin one

so "narad sub a -o json | narad produce b --json" copies messages exactly. Input is
read as a stream: lines are sent while more are read.

With -j N, N requests are in flight at once (order is then not kept); with the
default -j 1, messages are sent in input order. --count N sends each message N times
in a row. 502, 503 and timeouts are retried with backoff, so a message may be stored
twice; that is the API's contract.

A message the node refuses (413 over 1 MiB, 400) is reported with its line number
(or argument number, counting MESSAGE arguments from 1) and size, and the others
still go; the exit is then 1. 401, 403, 404 or an unreachable node stop at once.
A summary goes to stderr.`,
		Example: `  narad produce orders '{"order_id":"ord_1"}' -k customer-42
  narad produce images --file cat.png
  seq 1000 | narad produce numbers --lines -j 8
  narad sub orders --drain -o json | narad produce orders-copy --json`,
		Args: minArgs(1, "a topic and optional messages"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic, opts.Messages = args[0], args[1:]
			if err := validateTopicName(opts.Topic); err != nil {
				return err
			}
			if cmd.Flags().Changed("key") {
				opts.Key = &key
			}
			if cmd.Flags().Changed("partition") {
				if partition < 0 {
					return usageErrorf("invalid --partition %d (a partition is 0 or more)", partition)
				}
				opts.Partition = &partition
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return run(f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&key, "key", "k", "", "message key (same key, same partition)")
	fl.IntVar(&partition, "partition", 0, "pin every message to this partition")
	fl.StringVarP(&opts.File, "file", "f", "", "read the message (or with --lines/--json, the messages) from this file; - is stdin")
	fl.BoolVarP(&opts.Lines, "lines", "l", false, "one message per line of input")
	fl.BoolVar(&opts.JSON, "json", false, "one message per line, in the shape of sub -o json")
	fl.IntVar(&opts.Count, "count", 1, "send each message this many times")
	fl.IntVarP(&opts.Concurrency, "concurrency", "j", 1, "requests in flight at once (order is kept only with 1)")
	return cmd
}

func (o *produceOptions) validate() error {
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
	}
	return nil
}

// produceRecord is one message read from the input. A record with err set was bad
// input (an invalid --json line, a line too large to read) and is not sent.
type produceRecord struct {
	where string  // "argument 2", "line 5", "stdin", "file x.bin": for reports
	body  []byte  // the message
	size  int64   // bytes seen, for reports (len(body) unless the input was too large)
	key   *string // from a --json line
	err   error

	reported atomic.Bool // a failure of this record was printed (its copies stay quiet)
}

// produceRun reads records from the input and sends them with opts.Concurrency
// workers. It stops early only on what would fail every message alike.
func produceRun(f *Factory, opts *produceOptions) error {
	in, where, closeIn, err := produceInput(f, opts)
	if err != nil {
		return err
	}
	defer closeIn()

	c, err := f.Client()
	if err != nil {
		return err
	}
	parent, cancelParent := f.Context()
	defer cancelParent()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()

	st := &produceState{f: f, opts: opts, c: c, start: f.Now(), cancel: cancel}
	stopProgress := func() {}
	if f.IO.IsStderrTTY() {
		st.progress = newProgressLine(f.IO.ErrOut)
		stopProgress = st.progress.run(time.Second, 500*time.Millisecond, st.progressText)
	}
	if in != nil && f.IO.IsStdinTTY() && where == "stdin" {
		what := "one message"
		if opts.Lines || opts.JSON {
			what = "messages, one a line,"
		}
		st.printf("narad: reading %s from stdin until end of input (Ctrl-D)\n", what)
	}

	jobs := make(chan *produceRecord, opts.Concurrency)
	readDone := make(chan error, 1)
	go func() {
		defer close(jobs)
		readDone <- produceRecords(opts, in, where, func(rec *produceRecord) bool {
			n := opts.Count
			if rec.err != nil {
				n = 1 // bad input is reported once, not per copy
			}
			for range n {
				select {
				case jobs <- rec:
				case <-ctx.Done():
					return false
				}
			}
			return true
		})
	}()

	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			for {
				select {
				case rec, ok := <-jobs:
					if !ok {
						return
					}
					st.send(ctx, rec)
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()

	// The reader is waited for only when it finished by itself: one blocked reading
	// a terminal or an endless pipe must not keep us from reporting a fatal error.
	var readErr error
	if ctx.Err() == nil {
		readErr = <-readDone
	}
	stopProgress()
	st.summary()
	if st.fatal != nil {
		return st.fatal
	}
	if readErr != nil {
		return exitWith(ExitFailed, fmt.Errorf("cannot read %s: %v (messages read before it were sent)", where, readErr))
	}
	if parent.Err() != nil || st.failed.Load() > 0 {
		return exitWith(ExitFailed, nil)
	}
	return nil
}

// produceInput opens what the messages are read from: nil for MESSAGE arguments.
func produceInput(f *Factory, opts *produceOptions) (in io.Reader, where string, closeIn func(), err error) {
	closeIn = func() {}
	switch {
	case len(opts.Messages) > 0:
		return nil, "arguments", closeIn, nil
	case opts.File == "" || opts.File == "-":
		return f.IO.In, "stdin", closeIn, nil
	}
	file, err := os.Open(opts.File)
	if err != nil {
		return nil, "", closeIn, usageErrorf("cannot open --file: %v", unwrapPathError(err))
	}
	if fi, err := file.Stat(); err == nil && fi.IsDir() {
		file.Close()
		return nil, "", closeIn, usageErrorf("--file %s is a directory (want a file)", opts.File)
	}
	return file, "file " + render.Escape(opts.File), func() { file.Close() }, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// produceRecords reads the input and calls emit with each record, in order, until
// the input ends or emit returns false. Only a failure to read is an error.
func produceRecords(opts *produceOptions, in io.Reader, where string, emit func(*produceRecord) bool) error {
	if in == nil {
		for i, m := range opts.Messages {
			if !emit(&produceRecord{where: fmt.Sprintf("argument %d", i+1), body: []byte(m), size: int64(len(m))}) {
				return nil
			}
		}
		return nil
	}
	if !opts.Lines && !opts.JSON {
		body, n, err := readAtMost(in, produceMaxInput)
		if err != nil {
			return err
		}
		rec := &produceRecord{where: where, body: body, size: n}
		if n > produceMaxInput {
			rec.body, rec.err = nil, errTooLargeToRead
		}
		emit(rec)
		return nil
	}
	r := bufio.NewReaderSize(in, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, n, err := readLine(r, produceMaxInput)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rec := &produceRecord{where: fmt.Sprintf("line %d", lineNo), size: n}
		switch {
		case n > produceMaxInput:
			rec.err = errTooLargeToRead
		case opts.JSON:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			rec.body, rec.key, rec.err = parseProduceJSONLine(line)
			rec.size = int64(len(rec.body))
			if rec.err != nil {
				rec.size = int64(len(line))
			}
		default:
			if len(line) == 0 {
				continue
			}
			rec.body = line
		}
		if !emit(rec) {
			return nil
		}
	}
}

var errTooLargeToRead = fmt.Errorf("over %s, not sent", formatBytes(produceMaxInput))

// readAtMost reads all of r, keeping at most limit bytes; n counts every byte read
// (at most limit+1, which means "too large").
func readAtMost(r io.Reader, limit int64) (body []byte, n int64, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	return body, int64(len(body)), err
}

// readLine returns the next line without its "\n" or "\r\n", keeping at most limit
// bytes of it; n is its length (more than limit: it was too long and was cut). It
// returns io.EOF only when nothing was left to read; a last line without a newline
// is a line.
func readLine(r *bufio.Reader, limit int64) (line []byte, n int64, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if int64(len(line)) <= limit {
			line = append(line, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && n == 0:
			return nil, 0, io.EOF
		case err != nil && err != io.EOF:
			return nil, n, err
		}
		break
	}
	if l := len(line); l > 0 && line[l-1] == '\n' {
		line, n = line[:l-1], n-1
		if l := len(line); l > 0 && line[l-1] == '\r' {
			line, n = line[:l-1], n-1
		}
	}
	if n > limit {
		return nil, n, nil
	}
	return line, n, nil
}

// parseProduceJSONLine turns one line of `sub -o json` back into the produced bytes
// and key: a base64 payload decoded, a JSON string's text, any other JSON value its
// raw bytes verbatim (whitespace kept). A message without a key gives a nil key.
func parseProduceJSONLine(line []byte) (body []byte, key *string, err error) {
	var m client.Message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, nil, fmt.Errorf("not a JSON message line: %v", jsonErrorText(err))
	}
	if len(m.Payload) == 0 {
		return nil, nil, errors.New("no payload field (want a line of narad sub -o json)")
	}
	body, err = m.PayloadBytes()
	if err != nil {
		return nil, nil, err
	}
	if kb, ok, err := m.KeyBytes(); err != nil {
		return nil, nil, err
	} else if ok {
		k := string(kb)
		key = &k
	}
	return body, key, nil
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	return err.Error()
}

// produceState is what the workers share.
type produceState struct {
	f      *Factory
	opts   *produceOptions
	c      *client.Client
	start  time.Time
	cancel context.CancelFunc

	produced, failed, sent atomic.Int64 // sent counts the bytes produced
	progress               *progressLine

	mu    sync.Mutex // guards fatal and the order of lines on stderr
	fatal error
}

func (st *produceState) send(ctx context.Context, rec *produceRecord) {
	if rec.err != nil {
		st.failed.Add(1)
		st.report(rec, fmt.Sprintf("%v (%d bytes)", rec.err, rec.size))
		return
	}
	o := client.ProduceOptions{Key: st.opts.Key, Partition: st.opts.Partition}
	if o.Key == nil {
		o.Key = rec.key
	}
	err := st.c.Produce(ctx, st.opts.Topic, rec.body, o)
	if err == nil {
		st.produced.Add(1)
		st.sent.Add(int64(len(rec.body)))
		return
	}
	if ctx.Err() != nil {
		// Stopped by a signal or by another worker's fatal error: not this message's fault.
		return
	}
	switch status := client.StatusOf(err); status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		st.failed.Add(1)
		st.report(rec, fmt.Sprintf("%s (%d bytes%s)", statusText(err), len(rec.body), produceHint(status, len(rec.body))))
	default:
		st.mu.Lock()
		if st.fatal == nil {
			st.fatal = apiFatal(st.f, st.c, err, "produce", st.opts.Topic)
		}
		st.mu.Unlock()
		st.cancel()
	}
}

func produceHint(status, size int) string {
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return "; a message is at most 1 MiB"
	case status == http.StatusBadRequest && size == 0:
		return "; a message needs at least one byte"
	}
	return ""
}

// report prints one failed message's line; copies made by --count report once.
func (st *produceState) report(rec *produceRecord, what string) {
	if rec.reported.Swap(true) {
		return
	}
	st.printf("narad: %s: %s\n", rec.where, what)
}

func (st *produceState) printf(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	if st.progress != nil {
		st.progress.println(line)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	io.WriteString(st.f.IO.ErrOut, line)
}

func (st *produceState) progressText() string {
	return fmt.Sprintf("produced %s (%s)…", plural(st.produced.Load(), "message"), formatBytes(st.sent.Load()))
}

// summary prints the closing line, always: after a fatal error only if something was
// sent or reported, so a bad password stays a single line.
func (st *produceState) summary() {
	n, failed := st.produced.Load(), st.failed.Load()
	st.mu.Lock()
	fatal := st.fatal != nil
	st.mu.Unlock()
	if fatal && n == 0 && failed == 0 {
		return
	}
	line := produceSummary(n, st.sent.Load(), failed, st.f.Now().Sub(st.start))
	st.printf("%s\n", line)
}

func produceSummary(n, size, failed int64, d time.Duration) string {
	s := fmt.Sprintf("produced %s (%s) in %.2fs", plural(n, "message"), formatBytes(size), d.Seconds())
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	return s
}

// plural is "1 word" or "N words".
func plural(n int64, word string) string { return countOf(n, word, word+"s") }

// countOf is "1 one" or "N many", for words whose plural is not just an s.
func countOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// formatBytes is a size for people: 512 B, 46.9 KiB, 2.0 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// statusText is a client error without its op prefix: "413 message too large".
func statusText(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return strings.TrimPrefix(e.Error(), e.Op+": ")
	}
	return describeErr(err)
}

// progressLine is a status line on a terminal's stderr, rewritten in place and
// cleared before any other line is written.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

// run redraws text every `every` once `after` has passed, until stop is called.
func (p *progressLine) run(after, every time.Duration, text func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(after)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				fmt.Fprintf(p.w, "\r\x1b[K%s", text())
				p.shown = true
				p.mu.Unlock()
				t.Reset(every)
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		p.println("")
	}
}

// println clears the progress line and writes line (if any) in its place.
func (p *progressLine) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
	io.WriteString(p.w, line)
}
