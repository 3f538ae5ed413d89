// Package producer owns the one produce engine of `narad produce`: it reads records
// from a Source (MESSAGE arguments, a whole input, lines, `sub -o json` lines), groups
// them into batches of up to 100 messages and 1 MiB while the requests already out are
// answered, sends them with a pool of workers (one message per request on a node
// without batch produce), reports each refused message by its position, and counts
// what happened so exactly that an interrupted run says where to resume.
//
// A stop (the first SIGINT) ends the reading and lets every request already taken
// finish its attempt, but none is tried again: every message read is then produced,
// reported, or counted as unknown when its last attempt got no clear answer.
// Cancelling Run's context (the second) abandons the requests in flight, whose
// messages are then counted as unknown: they may or may not have been stored.
package producer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/time/rate"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
)

// Client is the part of *client.Client the engine needs.
type Client interface {
	Produce(ctx context.Context, topic string, body []byte, o client.ProduceOptions) error
	ProduceBatch(ctx context.Context, topic string, msgs []client.ProduceMessage) error
}

// Options configure Run.
type Options struct {
	Topic string
	// Key and Partition, when set, apply to every message (Key over a record's own).
	Key       *string
	Partition *int
	// Count sends each record this many times in a row (0 means 1).
	Count int
	// Concurrency is the requests in flight at once (0 means 1). With 1 the messages
	// go in input order.
	Concurrency int
	// Single sends one message per request, never a batch.
	Single bool
	// KeepPartition pins each record to its own Partition (a --json line's), unless
	// Partition pins them all. A record without one goes where its key sends it.
	KeepPartition bool
	// Rate, when above 0, bounds the messages sent a second across all requests
	// (copies and messages sent again after a refusal included).
	Rate float64
	// Partitions, when set, asks the node how many partitions the topic has. It is
	// asked once, after the node refused a pinned message (400): from then on a message
	// pinned to a partition the topic lacks fails with that refusal without being sent,
	// so restoring into a topic with fewer partitions costs a request per missing
	// partition, not one per line (a batch is all or nothing).
	Partitions func(ctx context.Context) (int, error)
	// Stop is the soft stop: read nothing more, finish what was read.
	Stop <-chan struct{}
	// OnFailure is told of each record that could not be produced (bad input, or the
	// node refused it), once however many copies --count made. Calls never overlap.
	OnFailure func(Failure)
}

// Failure is one record that could not be produced.
type Failure struct {
	Record *Record
	// Status is the node's answer (400, 409, 413); 0 for bad input.
	Status int
	// Err is the input error or the node's *client.Error.
	Err error
}

// Stats are a run's counters at one moment.
type Stats struct {
	// Produced is messages the node accepted (202), copies included.
	Produced int64
	// Bytes is the payload bytes of the produced messages.
	Bytes int64
	// Failed is messages not produced: bad input, or refused by the node.
	Failed int64
	// Unknown is messages whose request was abandoned or ended without a clear answer:
	// they may or may not have been stored.
	Unknown int64
}

// Result is how a run ended.
type Result struct {
	Stats
	// Stopped is a stop or a cancelled context before the input ended.
	Stopped bool
	// Fatal is the error that stopped the run early (401, 403, 404, a node that cannot
	// be reached): every message alike would have failed.
	Fatal error
	// ReadErr is a failure to read the input; what was read before it was sent.
	ReadErr error
	// Unit names what positions count ("line", "argument"; "" for a whole input).
	Unit string
	// Taken is the records taken from the input.
	Taken int64
	// Resume is the position to start again from so that nothing is sent twice: every
	// record before it was produced or reported (0 when nothing was taken).
	Resume int
	// UnknownFirst and UnknownLast are the positions of the first and last record with
	// a message counted in Unknown.
	UnknownFirst, UnknownLast int
	// StoredPastResume is the messages of records at or after Resume that the node
	// stored all the same (a request abandoned or refused before them, theirs answered
	// 202): resuming from Resume sends them again. StoredFirst and StoredLast are the
	// positions of the first and last such record.
	StoredPastResume        int64
	StoredFirst, StoredLast int
}

// item is one record taken from the input and what became of its copies.
type item struct {
	rec   *Record
	msg   client.ProduceMessage
	bound int // client.ProduceBatchBound of msg
	want  int // copies to send

	// Under engine.mu.
	produced, failed, unknown int
	reported                  bool
}

func (it *item) settled() bool { return it.produced+it.failed == it.want }

// outcome is what became of one copy.
type outcome int

const (
	produced outcome = iota
	failed
	unknown // sent, answer never known
	unsent  // never sent, or refused as a whole (401, 403, 404)
)

// Producer is one run; Stats may be read while it runs.
type Producer struct {
	c    Client
	src  Source
	opts Options

	produced, bytes, failed, unknownN atomic.Int64

	fatalOnce sync.Once
	fatalErr  error
	fatal     chan struct{} // closed at the first fatal error

	mu                        sync.Mutex // guards the items' counts and the window
	window                    []*item    // taken and not yet settled, oldest first
	lastPos                   int        // position of the last record taken
	taken                     int64
	unknownFirst, unknownLast int
	reportMu                  sync.Mutex // keeps OnFailure calls apart

	single atomic.Bool // send one message per request from now on

	// slots holds a token per request in flight: -j bounds requests, not workers, so
	// the messages of a batch that falls back to single produces still go -j at once.
	slots chan struct{}
	// limiter spends a token per message sent (nil: no --rate).
	limiter *rate.Limiter
	// waitCtx ends the waits for a slot or tokens at a fatal error as well as with
	// Run's context, so nothing sits out a slow rate once the run is over.
	waitCtx    context.Context
	cancelWait context.CancelFunc
	// rateCtx is waitCtx ended at the stop too: a wait for tokens has nothing out to
	// finish, and a slow rate's next token may be an hour away.
	rateCtx context.Context

	// missing is what the node answered a message pinned to a partition the topic
	// lacks, once Options.Partitions told the count (nil: not known to be any).
	partsMu    sync.Mutex
	partsAsked bool
	partCount  int
	missing    *client.Error
}

// New prepares a run of src to c.
func New(c Client, src Source, opts Options) *Producer {
	opts.Count = max(opts.Count, 1)
	opts.Concurrency = max(opts.Concurrency, 1)
	p := &Producer{c: c, src: src, opts: opts, fatal: make(chan struct{}), slots: make(chan struct{}, opts.Concurrency)}
	p.single.Store(opts.Single)
	if opts.Rate > 0 {
		p.limiter = rate.NewLimiter(rate.Limit(opts.Rate), RateBurst(opts.Rate))
	}
	return p
}

// RateBurst is the most messages one request carries under rate: a second's worth, so
// a slow rate sends a batch a second rather than a message at a time, and a fast one
// full batches.
func RateBurst(r float64) int {
	return int(max(1, min(r, client.MaxProduceBatch)))
}

// Stats is a snapshot of the counters.
func (p *Producer) Stats() Stats {
	return Stats{Produced: p.produced.Load(), Bytes: p.bytes.Load(), Failed: p.failed.Load(), Unknown: p.unknownN.Load()}
}

// Run reads and sends until the input ends, Options.Stop is closed (finish what was
// read), ctx is cancelled (abandon what is in flight) or a fatal error stops it.
func Run(ctx context.Context, c Client, src Source, opts Options) Result {
	return New(c, src, opts).Run(ctx)
}

// Run runs p once.
func (p *Producer) Run(ctx context.Context) Result {
	done := make(chan struct{})
	defer close(done)
	recs := make(chan *Record, 256)
	var readErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(recs)
		for {
			rec, err := p.src.Next()
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
			select {
			case recs <- rec:
			case <-done:
				return
			}
		}
	}()

	if p.opts.Stop != nil {
		// After the stop, what is out finishes its attempt but is not tried again:
		// against a node that does not answer, retries would hold the end up for
		// minutes after a Ctrl-C.
		ctx = client.WithRetryStop(ctx, p.opts.Stop)
	}
	p.waitCtx, p.cancelWait = context.WithCancel(ctx)
	defer p.cancelWait()
	var cancelRate context.CancelFunc
	p.rateCtx, cancelRate = chans.Context(p.waitCtx, p.opts.Stop)
	defer cancelRate()
	jobs := make(chan []*item)
	var wg sync.WaitGroup
	for range p.opts.Concurrency {
		wg.Go(func() {
			for j := range jobs {
				p.send(ctx, j)
			}
		})
	}
	inputEnded := p.batch(ctx, recs, jobs)
	close(jobs)
	wg.Wait()

	res := Result{Stats: p.Stats(), Unit: p.src.Unit(), Fatal: p.fatalErr}
	// The reader is waited for only when it ended by itself: one blocked reading a
	// terminal or an endless pipe must not hold up the end of a stopped run.
	if inputEnded {
		<-readDone
		res.ReadErr = readErr
	}
	res.Stopped = !inputEnded && res.Fatal == nil
	p.mu.Lock()
	defer p.mu.Unlock()
	res.Taken = p.taken
	res.UnknownFirst, res.UnknownLast = p.unknownFirst, p.unknownLast
	if len(p.window) > 0 && res.Fatal == nil && (chans.Closed(p.opts.Stop) || ctx.Err() != nil) {
		// Read to its end, but some of it not sent: the stop came while it waited (for
		// --rate's tokens), and the run was stopped all the same.
		res.Stopped = true
	}
	switch {
	case len(p.window) > 0:
		res.Resume = p.window[0].rec.Pos
	case p.taken > 0:
		res.Resume = p.lastPos + 1
	}
	for _, it := range p.window {
		if it.produced == 0 {
			continue
		}
		res.StoredPastResume += int64(it.produced)
		if res.StoredFirst == 0 {
			res.StoredFirst = it.rec.Pos
		}
		res.StoredLast = it.rec.Pos
	}
	return res
}

// batch takes records and hands batches to the workers until the input ends (true) or
// the run stops. A batch grows while every worker is busy and goes as soon as one is
// free, so batches are full under load and a slow input still streams.
func (p *Producer) batch(ctx context.Context, recs <-chan *Record, jobs chan<- []*item) (inputEnded bool) {
	stop := p.opts.Stop
	stopping := false
	var (
		cur      []*item
		curBytes = client.ProduceBatchFraming
		pending  *item // the record whose copies are being added
		left     int   // its copies still to add
	)
	fits := func(it *item) bool {
		if len(cur) == 0 {
			return true // alone, even a message too large for any batch goes (on its own)
		}
		limit := client.MaxProduceBatch
		if p.limiter != nil {
			limit = p.limiter.Burst()
		}
		if p.single.Load() {
			limit = 1
		}
		return len(cur) < limit && curBytes+it.bound <= client.MaxProduceBatchBody
	}
	take := func(rec *Record) {
		it := p.newItem(rec)
		if rec.Err != nil {
			p.finish([]*item{it}, failed, 0, rec.Err)
			return
		}
		pending, left = it, it.want
	}
	for {
		for left > 0 && fits(pending) {
			cur = append(cur, pending)
			curBytes += pending.bound
			left--
		}
		var in <-chan *Record
		if left == 0 && !stopping && recs != nil {
			in = recs
			// Take what is ready before handing a batch over.
			select {
			case rec, ok := <-in:
				if !ok {
					recs = nil
				} else {
					take(rec)
				}
				continue
			default:
			}
		}
		var out chan<- []*item
		if len(cur) > 0 {
			out = jobs
		}
		if in == nil && out == nil {
			// Nothing more to take (input ended or stopping) and nothing to hand over.
			return recs == nil && !stopping && left == 0
		}
		select {
		case rec, ok := <-in:
			if !ok {
				recs = nil
				continue
			}
			take(rec)
		case out <- cur:
			cur, curBytes = nil, client.ProduceBatchFraming
		case <-stop:
			// Finish what was read; copies not yet added of the current record are
			// left, and it counts as not done.
			stop, stopping, left = nil, true, 0
		case <-p.fatal:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (p *Producer) newItem(rec *Record) *item {
	it := &item{rec: rec, want: p.opts.Count}
	if rec.Err != nil {
		it.want = 1 // bad input is reported once, not per copy
	} else {
		it.msg = client.ProduceMessage{Payload: rec.Body, Key: rec.Key, Partition: p.opts.Partition}
		if p.opts.KeepPartition && p.opts.Partition == nil {
			it.msg.Partition = rec.Partition
		}
		if p.opts.Key != nil {
			it.msg.Key = p.opts.Key
		}
		it.bound = client.ProduceBatchBound(it.msg)
	}
	p.mu.Lock()
	p.window = append(p.window, it)
	p.lastPos = rec.Pos
	p.taken++
	p.mu.Unlock()
	return it
}

// send sends one batch: as one request when the node takes batches and it fits one,
// else message by message.
func (p *Producer) send(ctx context.Context, items []*item) {
	if p.stopped() {
		p.finish(items, unsent, 0, nil)
		return
	}
	// A lone message (the input's last record, alone in its batch: the one MESSAGE
	// argument, a whole file) goes by single produce on every node: one request, where
	// a batch would cost an older node two (its router's 404, then the single produce).
	// A record of a stream that happens to be alone still goes as a batch: on an older
	// node the first one finds out, once, what every later one needs to know.
	if p.single.Load() || (len(items) == 1 && (items[0].rec.Last || items[0].bound+client.ProduceBatchFraming > client.MaxProduceBatchBody)) {
		p.sendEach(ctx, items, 1)
		return
	}
	msgs := make([]client.ProduceMessage, 0, len(items))
	items = p.dropMissing(items)
	for len(items) > 0 {
		if !p.take(len(items)) {
			p.finish(items, unsent, 0, nil)
			return
		}
		msgs = msgs[:0]
		for _, it := range items {
			msgs = append(msgs, it.msg)
		}
		err := p.c.ProduceBatch(ctx, p.opts.Topic, msgs)
		p.give()
		var refusal *client.BatchRefusal
		switch {
		case err == nil:
			p.finish(items, produced, 0, nil)
			return
		case errors.Is(err, client.ErrNoBatchProduce):
			p.single.Store(true)
			// The router refused the batch unread: the rate these messages took is
			// theirs still, not to be waited for twice (an older node's first second
			// under --rate went silent, once per worker).
			p.sendEach(ctx, items, 0)
			return
		case ctx.Err() != nil:
			p.finish(items, unknown, 0, nil)
			return
		case errors.Is(err, client.ErrStopped):
			// The stop came while this request was being retried: it ends with what
			// its last attempt got, which tells nothing for sure.
			p.finish(items, ambiguity(err), 0, nil)
			return
		case errors.As(err, &refusal):
			// Nothing was stored: report the message, send the others again. Its other
			// copies in the batch are the same bytes, so they share its fate.
			bad := items[refusal.Index]
			rest := items[:0:0]
			var refused []*item
			for _, it := range items {
				if it == bad {
					refused = append(refused, it)
				} else {
					rest = append(rest, it)
				}
			}
			p.finish(refused, failed, refusal.Err.Status, refusal.Err)
			p.learnMissing(ctx, bad, refusal.Err)
			items = p.dropMissing(rest)
		case perMessage(client.StatusOf(err)):
			// A refusal that names no message: let each message get its own answer.
			p.sendEach(ctx, items, 1)
			return
		default:
			p.finish(items, ambiguity(err), 0, nil)
			p.setFatal(err)
			return
		}
	}
}

// sendEach sends items one request each, as many at once as there are free slots,
// in order when there is one (-j 1). Up to -j senders take the items in turn, each
// waiting for a slot before its request, so that a slot given back is taken by a
// sender already running. cost is the rate each message waits for: 1, or 0 for
// messages whose rate was already taken.
func (p *Producer) sendEach(ctx context.Context, items []*item, cost int) {
	var next atomic.Int64
	sender := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(items) {
				return
			}
			it := items[i]
			if p.stopped() || !p.take(cost) {
				p.finish([]*item{it}, unsent, 0, nil)
				continue
			}
			p.sendOne(ctx, it)
			p.give()
		}
	}
	n := min(len(items), p.opts.Concurrency)
	var wg sync.WaitGroup
	for range n - 1 {
		wg.Go(sender)
	}
	sender()
	wg.Wait()
}

// sendOne sends one copy of it by single produce.
func (p *Producer) sendOne(ctx context.Context, it *item) {
	one := []*item{it}
	if p.stopped() {
		p.finish(one, unsent, 0, nil)
		return
	}
	if len(p.dropMissing(one)) == 0 {
		return
	}
	err := p.c.Produce(ctx, p.opts.Topic, it.msg.Payload, client.ProduceOptions{Key: it.msg.Key, Partition: it.msg.Partition})
	switch status := client.StatusOf(err); {
	case err == nil:
		p.finish(one, produced, 0, nil)
	case ctx.Err() != nil:
		p.finish(one, unknown, 0, nil)
	case errors.Is(err, client.ErrStopped):
		p.finish(one, ambiguity(err), 0, nil) // retries cut by the stop, as in send
	case perMessage(status):
		p.finish(one, failed, status, err)
		var e *client.Error
		if errors.As(err, &e) {
			p.learnMissing(ctx, it, e)
		}
	default:
		p.finish(one, ambiguity(err), 0, nil)
		p.setFatal(err)
	}
}

// learnMissing asks the topic's partition count, once, after the node refused it
// with 400 while it was pinned; if its partition is past the count, refusal is what
// every message pinned past it gets from then on.
func (p *Producer) learnMissing(ctx context.Context, it *item, refusal *client.Error) {
	if p.opts.Partitions == nil || it.msg.Partition == nil || refusal.Status != http.StatusBadRequest {
		return
	}
	p.partsMu.Lock()
	defer p.partsMu.Unlock()
	if !p.partsAsked {
		p.partsAsked = true
		if n, err := p.opts.Partitions(ctx); err == nil && n > 0 {
			p.partCount = n
		}
	}
	if p.missing == nil && p.partCount > 0 && *it.msg.Partition >= p.partCount {
		p.missing = refusal
	}
}

// dropMissing fails, without sending, the items pinned to a partition the topic is
// known to lack, and returns the others.
func (p *Producer) dropMissing(items []*item) []*item {
	p.partsMu.Lock()
	missing, n := p.missing, p.partCount
	p.partsMu.Unlock()
	if missing == nil {
		return items
	}
	var keep, drop []*item
	for _, it := range items {
		if it.msg.Partition != nil && *it.msg.Partition >= n {
			drop = append(drop, it)
		} else {
			keep = append(keep, it)
		}
	}
	if len(drop) > 0 {
		p.finish(drop, failed, missing.Status, missing)
	}
	return keep
}

// take waits for a request slot and then for n messages' worth of rate; false when
// the run ended first (nothing is sent then).
func (p *Producer) take(n int) bool {
	select {
	case p.slots <- struct{}{}:
	case <-p.waitCtx.Done():
		return false
	}
	if p.limiter != nil {
		if err := p.limiter.WaitN(p.rateCtx, n); err != nil {
			p.give()
			return false
		}
	}
	if p.waitCtx.Err() != nil {
		p.give()
		return false
	}
	return true
}

// give hands a request slot back.
func (p *Producer) give() { <-p.slots }

// perMessage is a refusal of the message itself: nothing stored, the others may go.
func perMessage(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}

// ambiguity is what a failed request left behind: a 4xx answer stored nothing, nor did
// a 3xx (a redirect, which the client never follows: the request was sent elsewhere, not
// taken), and a refused connection never reached the node; anything else (a 5xx after
// the retries, a timeout, a dropped connection) may have stored the messages.
func ambiguity(err error) outcome {
	if s := client.StatusOf(err); (s >= 300 && s < 500) || errors.Is(err, syscall.ECONNREFUSED) {
		return unsent
	}
	return unknown
}

func (p *Producer) setFatal(err error) {
	p.fatalOnce.Do(func() {
		p.fatalErr = err
		close(p.fatal)
		p.cancelWait()
	})
}

func (p *Producer) stopped() bool { return chans.Closed(p.fatal) }

// finish records what became of one copy each of items (an item may appear once per
// copy), reports a failed record once, and moves the window past settled records.
func (p *Producer) finish(items []*item, o outcome, status int, err error) {
	var report []*item
	p.mu.Lock()
	for _, it := range items {
		switch o {
		case produced:
			it.produced++
			p.produced.Add(1)
			p.bytes.Add(int64(len(it.msg.Payload)))
		case failed:
			it.failed++
			p.failed.Add(1)
			if !it.reported {
				it.reported = true
				report = append(report, it)
			}
		case unknown:
			it.unknown++
			p.unknownN.Add(1)
			if pos := it.rec.Pos; p.unknownFirst == 0 || pos < p.unknownFirst {
				p.unknownFirst = pos
			}
			p.unknownLast = max(p.unknownLast, it.rec.Pos)
		}
	}
	for len(p.window) > 0 && p.window[0].settled() {
		p.window[0] = nil
		p.window = p.window[1:]
	}
	p.mu.Unlock()
	if p.opts.OnFailure == nil {
		return
	}
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	for _, it := range report {
		p.opts.OnFailure(Failure{Record: it.rec, Status: status, Err: err})
	}
}
