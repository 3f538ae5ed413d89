// Package bench measures a topic's throughput from this machine with the engines the
// other commands use: the produce phase runs internal/producer (batches of up to 100
// messages on a node that has them), the consume phase runs internal/consumer.Run
// (batch consumes and batch acks) with a handler that only counts and acks, until
// nothing is left to take. Latency per request is not timed here: a Recorder on the
// client's hooks observes every answer.
package bench

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/producer"
)

// Client is what the two phases need of *client.Client.
type Client interface {
	producer.Client
	consumer.Source
}

// Options configure a run.
type Options struct {
	Topic string
	// Count is the messages to produce, Size the bytes of each payload.
	Count, Size int
	// Keys > 0 gives the messages that many distinct keys, in turn; 0 sends no key.
	Keys    int
	Payload Payload
	// Concurrency is the requests in flight at once in each phase.
	Concurrency int
	// Consume runs the consume phase after the produce phase.
	Consume bool
	// Stop is the soft stop (the first Ctrl-C): the produce phase lets its requests out
	// finish, the consume phase gives back what it holds, and no later phase starts.
	Stop <-chan struct{}
	// OnFailure is told of each message the node refused (calls never overlap).
	OnFailure func(producer.Failure)
	// OnNodeLost is told, once per outage however many consume loops see it, that the
	// node stopped answering during the consume phase (the phase waits for it, as a
	// sub does, until it is back or a stop); OnNodeBack that it answers again. Either
	// may be nil.
	OnNodeLost func(err error)
	OnNodeBack func()
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Seed makes the payloads (0: random).
	Seed uint64
}

// Report is what a run measured. -o json prints it: the field names are stable.
type Report struct {
	Topic       string        `json:"topic"`
	Count       int           `json:"count"`
	Size        int           `json:"size"`
	Payload     string        `json:"payload"`
	Keys        int           `json:"keys"`
	Concurrency int           `json:"concurrency"`
	Produce     ProduceReport `json:"produce"`
	// Consume is nil without Options.Consume, and when the consume phase did not run
	// (a stop or a failure first, or nothing produced).
	Consume *ConsumeReport `json:"consume,omitempty"`
	// Interrupted is a run stopped by a signal: the figures are what was measured
	// until then.
	Interrupted bool `json:"interrupted"`
}

// Phase is what both phases report.
type Phase struct {
	// Messages and Bytes (payload bytes) are what was produced, or consumed.
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
	// Seconds is the phase's time: for consume, to the last ack of a message, without
	// the empty answers that tell it nothing is left.
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	// MBPerSec is payload megabytes (10^6 bytes) a second.
	MBPerSec float64 `json:"mb_per_sec"`
	// Requests is the answers timed (retries and fallbacks included).
	Requests int64 `json:"requests"`
	// Batch is false when the node turned out not to have the batch form and the
	// phase fell back to one message (or handle) per request.
	Batch   bool    `json:"batch"`
	Latency Latency `json:"latency_ms"`
	// Histogram is the latencies' distribution (Histogram.Distribution's buckets).
	Histogram []Bucket `json:"latency_histogram"`
	// Marks are the buckets of p50, p95 and p99 in Histogram, for drawing it.
	Marks [3]int `json:"-"`
}

// ProduceReport is the produce phase.
type ProduceReport struct {
	Phase
	// Failed is messages the node refused; Unknown is messages whose request ended
	// without a clear answer (they may have been stored).
	Failed  int64 `json:"failed"`
	Unknown int64 `json:"unknown"`
}

// ConsumeReport is the consume phase.
type ConsumeReport struct {
	Phase
	// Acked is acks the node confirmed.
	Acked int64 `json:"acked"`
	// Left is produced messages not consumed: taken by another consumer, still
	// leased, or the run stopped first.
	Left int64 `json:"left"`
}

// Latency is per request, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Progress is a run's position, for a progress line.
type Progress struct {
	// Phase is "produce" or "consume" ("" before the run starts).
	Phase string
	Done  int64
	Of    int64
}

// Bench is one run; Progress may be read while it runs.
type Bench struct {
	c    Client
	rec  *Recorder
	opts Options

	phase    atomic.Value // string
	producer atomic.Pointer[producer.Producer]
	consumed atomic.Int64
	of       atomic.Int64
}

// New prepares a run against c, whose hooks include rec.
func New(c Client, rec *Recorder, opts Options) *Bench {
	opts.Concurrency = max(opts.Concurrency, 1)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Bench{c: c, rec: rec, opts: opts}
	b.phase.Store("")
	return b
}

// Progress is where the run is.
func (b *Bench) Progress() Progress {
	switch ph := b.phase.Load().(string); ph {
	case "produce":
		var done int64
		if p := b.producer.Load(); p != nil {
			s := p.Stats()
			done = s.Produced + s.Failed + s.Unknown
		}
		return Progress{Phase: ph, Done: done, Of: int64(b.opts.Count)}
	case "consume":
		return Progress{Phase: ph, Done: b.consumed.Load(), Of: b.of.Load()}
	default:
		return Progress{Phase: ph}
	}
}

// Run runs the phases until done, a stop, or a fatal error (returned, with what was
// measured before it). ctx is the hard stop: requests in flight are abandoned.
func (b *Bench) Run(ctx context.Context) (Report, error) {
	o := b.opts
	r := Report{Topic: o.Topic, Count: o.Count, Size: o.Size, Payload: o.Payload.String(), Keys: o.Keys, Concurrency: o.Concurrency}
	stopped := func() bool { return chans.Closed(o.Stop) || ctx.Err() != nil }
	if stopped() {
		r.Interrupted = true
		return r, nil
	}

	var err error
	r.Produce, err = b.produce(ctx)
	if stopped() {
		r.Interrupted = true
	}
	// Nothing produced (the node refused it all) leaves nothing of bench's to take.
	if err != nil || !o.Consume || r.Interrupted || r.Produce.Messages == 0 {
		return r, err
	}
	cr, err := b.consume(ctx, r.Produce.Messages)
	r.Consume = &cr
	if stopped() {
		r.Interrupted = true
	}
	return r, err
}

func (b *Bench) produce(ctx context.Context) (ProduceReport, error) {
	o := b.opts
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	src := newSource(o.Payload, o.Size, o.Count, o.Keys, rand.New(rand.NewPCG(seed, seed>>1|1)))
	p := producer.New(b.c, src, producer.Options{
		Topic:       o.Topic,
		Concurrency: o.Concurrency,
		Stop:        o.Stop,
		OnFailure:   o.OnFailure,
	})
	b.producer.Store(p)
	b.phase.Store("produce")
	start := o.Now()
	res := p.Run(ctx)
	took := o.Now().Sub(start)

	pr := ProduceReport{
		Phase:   phase(res.Produced, res.Bytes, took, &b.rec.Produce),
		Failed:  res.Failed,
		Unknown: res.Unknown,
	}
	pr.Batch = !b.rec.learned(client.FallbackProduceSingles)
	return pr, res.Fatal
}

// consume takes and acks, with Concurrency consume loops side by side, until each
// finds nothing left to take (or a stop).
func (b *Bench) consume(ctx context.Context, produced int64) (ConsumeReport, error) {
	o := b.opts
	h := &counter{now: o.Now, stop: o.Stop}
	b.of.Store(produced)
	b.phase.Store("consume")
	h.start = o.Now()
	h.progress = &b.consumed

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		stats consumer.Stats
		fatal error
		node  = &nodeWatch{lost: o.OnNodeLost, back: o.OnNodeBack}
	)
	for range o.Concurrency {
		wg.Go(func() {
			// The soft stop goes to Run as well as to the handler: Run lets the
			// consumes in flight finish (they do not wait, so they are answered at
			// once) and ends a wait for a lost node, which a handler that is handed
			// nothing never sees; the handler gives back what it is handed after it.
			// The produce phase reached the node (this phase runs only if it took
			// something), so a loop whose first consume finds it gone waits it out
			// like the others rather than failing the run.
			res, err := consumer.Run(ctx, b.c, h, consumer.Options{Topic: o.Topic, Drain: true, Stop: o.Stop,
				Reached: true, OnNodeLost: node.onLost, OnNodeBack: node.onBack})
			mu.Lock()
			defer mu.Unlock()
			stats = addStats(stats, res.Stats)
			if err != nil && fatal == nil && !errors.Is(err, context.Canceled) {
				fatal = err
			}
		})
	}
	wg.Wait()

	took := h.busy()
	cr := ConsumeReport{
		Phase: phase(stats.Received, h.bytes.Load(), took, &b.rec.Consume),
		Acked: stats.Acked,
		Left:  max(produced-stats.Received, 0),
	}
	cr.Batch = !b.rec.learned(client.FallbackConsumeSingle) && !b.rec.learned(client.FallbackSettleSingles)
	return cr, fatal
}

// nodeWatch passes on the consume loops' news of the node once per outage: lost when
// the first loop loses it, back when every loop that lost it has an answer again.
type nodeWatch struct {
	mu   sync.Mutex
	down int // loops that lost the node and have had no answer since
	lost func(error)
	back func()
}

func (w *nodeWatch) onLost(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down++; w.down == 1 && w.lost != nil {
		w.lost(err)
	}
}

func (w *nodeWatch) onBack() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down--; w.down == 0 && w.back != nil {
		w.back()
	}
}

func addStats(a, b consumer.Stats) consumer.Stats {
	a.Received += b.Received
	a.Acked += b.Acked
	a.Nacked += b.Nacked
	a.Failed += b.Failed
	a.AckGone += b.AckGone
	a.Retries += b.Retries
	a.Bugs += b.Bugs
	return a
}

// phase fills what both phases report from their counts, time and latencies.
func phase(msgs, bytes int64, took time.Duration, h *Histogram) Phase {
	p := Phase{
		Messages: msgs,
		Bytes:    bytes,
		Seconds:  round(took.Seconds(), 3),
		Requests: h.Count(),
		Batch:    true,
		Latency: Latency{
			P50: millis(h.Percentile(50)),
			P95: millis(h.Percentile(95)),
			P99: millis(h.Percentile(99)),
			Max: millis(h.Max()),
		},
	}
	d := h.Distribution()
	p.Histogram, p.Marks = d.Buckets, [3]int{d.P50, d.P95, d.P99}
	if p.Histogram == nil {
		p.Histogram = []Bucket{}
	}
	if s := took.Seconds(); s > 0 {
		p.MsgsPerSec = round(float64(msgs)/s, 1)
		p.MBPerSec = round(float64(bytes)/1e6/s, 3)
	}
	return p
}

func millis(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// counter is the consume phase's handler: it counts what it is handed, acks it in
// one settlement, and notes when the last message was acked. After the soft stop it
// gives back what it is handed and stops its loop.
type counter struct {
	stop     <-chan struct{}
	now      func() time.Time
	start    time.Time
	progress *atomic.Int64
	bytes    atomic.Int64
	lastAck  atomic.Int64 // nanoseconds since start of the last ack of a message
}

func (h *counter) Slots(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return consumer.MaxBatch, nil
}

func (h *counter) Handle(ctx context.Context, ds []consumer.Delivery) error {
	if chans.Closed(h.stop) {
		_ = consumer.NackAll(ds, consumer.GiveBack)
		return consumer.ErrStopped
	}
	var n int64
	for _, d := range ds {
		m := d.Message()
		if p, err := m.PayloadBytes(); err == nil {
			n += int64(len(p))
		} else {
			n += int64(len(m.Payload))
		}
	}
	h.bytes.Add(n)
	err := consumer.AckAll(ds)
	h.progress.Add(int64(len(ds)))
	at := int64(h.now().Sub(h.start))
	for {
		last := h.lastAck.Load()
		if at <= last || h.lastAck.CompareAndSwap(last, at) {
			break
		}
	}
	// A refusal of the whole request would refuse every ack alike: stop. A 410 or an
	// ack never confirmed is counted in the run's stats and the run goes on.
	switch client.StatusOf(err) {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return err
	}
	return nil
}

// Finish has nothing to wait for: every delivery was acked in Handle.
func (h *counter) Finish(context.Context, <-chan struct{}) error { return nil }

// Pipelining: the consume phase acks each batch as it is handed over, nothing ahead.
func (h *counter) Pipelining() consumer.Pipelining { return consumer.Pipelining{} }

// busy is the time from the start to the last ack of a message.
func (h *counter) busy() time.Duration { return time.Duration(h.lastAck.Load()) }
