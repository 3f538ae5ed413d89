package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
)

// Source is the part of *client.Client the loop needs. Topic is asked only for the
// lease, when the run was not told it (see Options.Lease).
type Source interface {
	Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error)
	Settle(ctx context.Context, topic string, a client.Action, handles []string) ([]client.SettleResult, error)
	Topic(ctx context.Context, name string) (*client.Topic, error)
}

// Handler is what the loop hands deliveries to.
//
// The loop calls Slots, consumes at most that many messages, calls Handle with them,
// and repeats; once it stops taking it calls Finish once. Slots and Handle are called
// from the loop's goroutine only.
type Handler interface {
	// Slots blocks until the handler can take at least one more delivery and returns
	// how many it can take (at least 1). It returns ctx's error when ctx is done,
	// which is how the loop stops waiting at a stop.
	Slots(ctx context.Context) (int, error)
	// Handle takes ownership of ds: each must end settled (Ack, Nack, LeaseLost), now
	// or later. ctx is the run's context: its cancellation is the hard stop.
	// An error stops the loop; wrap ErrOutputClosed for a closed output.
	Handle(ctx context.Context, ds []Delivery) error
	// Finish returns once every delivery handed over has been settled. stopping is
	// closed when the run stops early (signal, timeout, fatal error): work not started
	// is then given back at once and running work gets its grace. ctx's cancellation
	// is the hard stop.
	Finish(ctx context.Context, stopping <-chan struct{}) error
	// Pipelining is the handler's part in the run's pipelining (pipelining.go),
	// asked for once, before anything is taken.
	Pipelining() Pipelining
}

// ErrStopped is a handler giving up work because the run is stopping (it was told
// through StopOn): the stop's own reason stands.
var ErrStopped = errors.New("stopped")

// ErrOutputClosed is a handler's output going away (EPIPE from `| head`): the run
// ends, and that is not a failure.
var ErrOutputClosed = errors.New("output closed")

// MaxBatch is the most messages one consume may ask for.
const MaxBatch = 100

// Options configure Run.
type Options struct {
	Topic string
	// Partition restricts consuming to one partition; nil means any.
	Partition *int
	// Wait is how long each consume long-polls, at most PollMax at a time.
	Wait time.Duration
	// PollMax caps each consume's long poll; 0 means 1s. A stop lets the consume in
	// flight finish rather than cancel it (the node may be leasing messages for it,
	// which then go back at once), so this is how long a stop can wait for it.
	PollMax time.Duration
	// AnswerGrace is how long past its wait a consume in flight at a stop is waited
	// for before it is cut anyway (a node that does not answer); 0 means
	// DefaultAnswerGrace.
	AnswerGrace time.Duration
	// Max is the most messages per request, 1..MaxBatch; 0 means MaxBatch.
	Max int
	// Count stops the run after that many messages (0: no limit). No request asks
	// for more than are still needed.
	Count int
	// Timeout stops taking after that long (0: never).
	Timeout time.Duration
	// Drain stops once a consume finds nothing ready while nothing of this run is held
	// or being settled (an empty answer while something is may only mean a partition's
	// in-flight cap: the loop waits for a settlement and asks again). Every consume
	// asks without waiting. Deliveries parked (Delivery.Park) are not waited for: the
	// stop the drain's end then makes is what they wait for.
	Drain bool
	// NoAck settles nothing: leases lapse on their own.
	NoAck bool
	// Stop is the soft stop (the first SIGINT/SIGTERM): take nothing more, give back
	// what is held, let running work finish. The hard stop is Run's ctx.
	Stop <-chan struct{}
	// Abandon, when closed, gives up every settlement retry at once, as the hard stop
	// does (exec mode closes it when --shutdown-grace ends). What was abandoned is in
	// Result.Unconfirmed.
	Abandon <-chan struct{}
	// SettleTimeout bounds each settlement request, which runs on a context that
	// survives the soft stop; 0 means 2m, the client's own retry budget, because a
	// dropped ack becomes a redelivery. The hard stop or Abandon ends it sooner.
	SettleTimeout time.Duration
	// LastTry bounds a settlement asked for after the hard stop or Abandon (a command
	// stopped then, a batch given back): one prompt try; 0 means 500ms.
	LastTry time.Duration
	// Rate, when above 0, is the most messages taken a second (see takeRate).
	Rate float64
	// IdlePause is the least time from one consume to the next after an empty answer
	// (Drain excepted), so that polling does not spin whatever the wait or the node
	// does with it; 0 means 100ms.
	IdlePause time.Duration
	// ReconnectMax is the longest pause between consumes while the node, once
	// reached, cannot be reached; 0 means 5s. A node never reached fails the run.
	ReconnectMax time.Duration
	// Reached says the node was reached before this run (bench's produce phase, just
	// before its consume loops): then a first consume that finds it unreachable waits
	// it out as a node lost, rather than failing the run as a wrong address would.
	Reached bool
	// OnNodeLost is called (from the loop) when a node that was reached stops
	// answering, with the error; the run goes on retrying. OnNodeBack is called when
	// it answers again. Either may be nil.
	OnNodeLost func(err error)
	OnNodeBack func()
	// OnFatal is called (from the loop) when a fatal error ends the taking, before
	// the handler's Finish waits for what it still runs, so that the wait can be
	// explained at once rather than after it. It may be nil.
	OnFatal func(err error)
	// OnStopTaking is called once, when the run takes nothing more: at an early stop
	// (Stop, Timeout, the output gone, ctx) or when the loop ends (Count reached,
	// drained, a fatal error), before the handler's Finish waits for what it still
	// runs; a readiness probe turns from ready there. It may be nil; it must not
	// block (it may run on the watcher's goroutine).
	OnStopTaking func()
	// OnSingle is called (from the loop) once the node turns out to answer one
	// message per consume (older than v3.1), after the handler's own
	// Pipelining.OnSingle. It may be nil.
	OnSingle func()
	// OnSurplus is called (from a sender) when a consume that asked for asked messages
	// got more; those over were given back at once. It may be nil.
	OnSurplus func(asked, got int)
	// OnUndecodable is called (from a sender) for each message that cannot be decoded
	// (see setAsideUndecodable), with why and what became of it. It may be nil.
	OnUndecodable func(m *client.Message, why error, fate string)
	// DeadLetterUndecodable, when set, is tried on a message that cannot be decoded
	// before it is given back: it copies what the node sent to a dead-letter topic,
	// and on success the message is acked (exec mode's --dead-letter).
	DeadLetterUndecodable func(ctx context.Context, m *client.Message) error
	// Lease is the topic's lease (its visibility timeout, or exec mode's --lease). The
	// run keeps the lease of every message it holds until it is settled (see keeper):
	// extended once held a third of it, and lost once no extend was confirmed for a
	// whole one. 0 means the topic's, asked for from the node (Source.Topic) only once
	// a message has been held a while. With NoAck nothing is kept.
	Lease time.Duration
	// Live, when set, is called once before anything is taken with a view of the
	// run's counters as they move (see Live). It may be nil.
	Live func(Live)
}

// Reason is why a run stopped.
type Reason int

const (
	// StopCount is Count messages taken (and their handling finished).
	StopCount Reason = iota + 1
	// StopDrained is a consume that found nothing ready with Drain.
	StopDrained
	// StopTimeout is Timeout running out (Result.CountUnmet says whether Count was short).
	StopTimeout
	// StopInterrupted is the soft stop or the cancellation of Run's ctx.
	StopInterrupted
	// StopOutputClosed is the handler's output going away (EPIPE).
	StopOutputClosed
	// StopFailed is a fatal error, returned by Run.
	StopFailed
)

func (r Reason) String() string {
	switch r {
	case StopCount:
		return "count reached"
	case StopDrained:
		return "drained"
	case StopTimeout:
		return "timeout"
	case StopInterrupted:
		return "interrupted"
	case StopOutputClosed:
		return "output closed"
	case StopFailed:
		return "failed"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Outcome is a run's result as the exit-code table sees it.
type Outcome int

const (
	// OutcomeOK: exit 0.
	OutcomeOK Outcome = iota
	// OutcomeFailed: exit 1 (a fatal error, or some delivery not handled successfully).
	OutcomeFailed
	// OutcomeCountUnmet: exit 3 (Timeout ran out before Count was reached).
	OutcomeCountUnmet
	// OutcomeLeaseGone: exit 4 (a lease was gone for some message, nothing else wrong).
	OutcomeLeaseGone
	// OutcomeInterrupted: exit 130/143, by the signal.
	OutcomeInterrupted
)

func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeFailed:
		return "failed"
	case OutcomeCountUnmet:
		return "count unmet"
	case OutcomeLeaseGone:
		return "lease gone"
	case OutcomeInterrupted:
		return "interrupted"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is how a run ended.
type Result struct {
	Reason Reason
	Stats  Stats
	// Declined counts deliveries the handler nacked as failed (Cause Declined): for
	// the supervisor, commands that exited with a code that does not ack or were
	// stopped at shutdown.
	Declined int64
	// CountUnmet is Count > 0 with fewer than Count messages taken and not given back
	// (finished, when the handler counts: see Counted).
	CountUnmet bool
	// Counted says that the handler counted Count itself (Pipelining.Counted); Finished
	// is how many messages it finished, FinishedFailed how many of those failed.
	Counted                  bool
	Finished, FinishedFailed int64
	// SettleFailed counts settlements that failed (no final answer, or an answer
	// other than 204 or 410): counted in Stats.Failed too.
	SettleFailed int64
	// Unconfirmed lists the settlements that never got a final answer (counted in
	// Stats.Failed): abandoned at the hard stop, or out of retries. Each may or may
	// not have happened; sending it again is safe.
	Unconfirmed []Unconfirmed
	// AnswerLost is a consume cut while the node may have been answering it (at the
	// hard stop, or a node that did not answer a stop in time): messages it leased,
	// if any, come back only when their lease runs out.
	AnswerLost bool
}

// Outcome classifies the run: interrupted first, then failures (a fatal error, a
// handler's failure, a settlement that failed, a double settlement), then a timeout
// before Count, then lost leases (lease_lost or ack_gone), else OK. When the handler
// counted Count messages finished, only how those ended counts, not the failed
// attempts along the way (a message retried, then acked or dead-lettered).
func (r Result) Outcome() Outcome {
	s := r.Stats
	if r.Counted && !r.CountUnmet && r.Reason != StopInterrupted {
		switch {
		case r.Reason == StopFailed, r.FinishedFailed > 0, r.SettleFailed > 0, s.Bugs > 0:
			return OutcomeFailed
		case s.LeaseLost > 0, s.AckGone > 0:
			return OutcomeLeaseGone
		}
		return OutcomeOK
	}
	switch {
	case r.Reason == StopInterrupted:
		return OutcomeInterrupted
	case r.Reason == StopFailed, r.Declined > 0, s.Failed > 0, s.TimedOut > 0, s.Bugs > 0:
		return OutcomeFailed
	case r.Reason == StopTimeout && r.CountUnmet:
		return OutcomeCountUnmet
	case s.LeaseLost > 0, s.AckGone > 0:
		return OutcomeLeaseGone
	}
	return OutcomeOK
}

// DefaultAnswerGrace is Options.AnswerGrace when not set.
const DefaultAnswerGrace = 2 * time.Second

func (o Options) withDefaults() (Options, error) {
	if o.Topic == "" {
		return o, errors.New("consumer: no topic")
	}
	if o.Max == 0 {
		o.Max = MaxBatch
	}
	if o.Max < 1 || o.Max > MaxBatch {
		return o, fmt.Errorf("consumer: max %d is outside 1..%d", o.Max, MaxBatch)
	}
	if o.Count < 0 || o.Wait < 0 || o.Timeout < 0 || o.Rate < 0 || o.Lease < 0 {
		return o, errors.New("consumer: count, wait, timeout and lease must not be negative")
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 2 * time.Minute
	}
	if o.IdlePause <= 0 {
		o.IdlePause = 100 * time.Millisecond
	}
	if o.PollMax <= 0 {
		o.PollMax = time.Second
	}
	if o.AnswerGrace <= 0 {
		o.AnswerGrace = DefaultAnswerGrace
	}
	if o.LastTry <= 0 {
		o.LastTry = 500 * time.Millisecond
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = 5 * time.Second
	}
	return o, nil
}

// Run consumes o.Topic and hands what it takes to h until Count is reached, the queue
// is drained, Timeout runs out, o.Stop is closed, ctx is cancelled, h's output closes
// or an error is fatal. Before it returns, every delivery is settled: what h left is
// given back. The error is the fatal one (Result.Reason StopFailed), as the client
// returned it (a *client.Error for 401/403/404).
//
// A stop other than ctx lets a consume in flight finish and gives back what it
// brings; ctx's cancellation (the hard stop) cuts it, abandons settlement retries and
// makes Run return promptly even when the node is gone.
func Run(ctx context.Context, src Source, h Handler, o Options) (Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Result{Reason: StopFailed}, err
	}
	var c counters
	s, release := newSettler(ctx, src, o, &c)
	defer release()
	if o.Live != nil {
		o.Live(Live{c: &c, s: s})
	}
	stopKeeping := func() {}
	if !o.NoAck {
		stopKeeping = s.keep(ctx, o.Lease)
	}
	pl := h.Pipelining()

	// take is the context of waiting to take messages (for slots, between polls):
	// cancelled by any stop. A consume request itself is not (see taker.consume).
	take, cancelTake := context.WithCancel(ctx)
	defer cancelTake()
	w := newStopWatch(ctx, o, cancelTake)
	if pl.StopOn != nil {
		pl.StopOn(w.stopping)
	}
	if pl.GraceOver != nil && o.Abandon != nil {
		// s.abandon is cancelled before Done closes, so a give-back sent on it is a
		// last try (requestContext), never one the abandon cuts.
		pl.GraceOver(s.abandon.Done())
	}
	go w.watch(pl.OutputGone)

	t := &taker{ctx: ctx, take: take, stopping: w.stopping, src: src, h: h, pl: pl, s: s, c: &c, o: o, reached: o.Reached}
	reason, fatal := t.run()
	w.tookLast()
	if reason == StopDrained && fatal == nil && s.parkedNow() > 0 {
		// What the handler parked waits for the end of the run: this is it.
		w.stop(StopDrained)
	}
	reason = w.stopFor(reason, fatal)
	if fatal != nil && o.OnFatal != nil {
		o.OnFatal(fatal)
	}
	t.collect()
	if err := h.Finish(ctx, w.stopping); err != nil && fatal == nil {
		fatal, reason = err, StopFailed
	}
	w.end()
	if reason == StopCount && w.reason() == StopTimeout {
		// Count messages were taken, but the timeout came while they were still being
		// handled (lines waiting for a pipe's reader) and gave some back.
		reason = StopTimeout
	}
	stopKeeping()
	// The safety net: whatever a handler did not settle goes back now rather than
	// waiting for its lease to lapse. A well-behaved handler leaves nothing.
	if left := s.unsettled(); len(left) > 0 {
		_ = NackAll(left, GiveBack)
	}
	if reason != StopFailed && (w.soft.Load() || chans.Closed(o.Stop) || ctx.Err() != nil) {
		reason = StopInterrupted
	}
	return t.result(reason), fatal
}

// stopWatch is the run's watcher goroutine and the early stop it owns: the soft stop
// (Options.Stop), Timeout, the handler's output going away and the hard stop each
// close stopping (once, with the reason) and cancel the loop's waiting.
type stopWatch struct {
	ctx      context.Context
	o        Options
	stopping chan struct{}
	once     sync.Once
	cancel   context.CancelFunc // the loop's take
	early    atomic.Int32       // the Reason of an early stop, set before stopping closes
	soft     atomic.Bool        // the soft stop came
	last     sync.Once          // Options.OnStopTaking called
	done     chan struct{}      // the run tells the watcher to end
	exited   chan struct{}      // the watcher ended
}

func newStopWatch(ctx context.Context, o Options, cancelTake context.CancelFunc) *stopWatch {
	return &stopWatch{ctx: ctx, o: o, stopping: make(chan struct{}), cancel: cancelTake,
		done: make(chan struct{}), exited: make(chan struct{})}
}

// stop is the early stop, for why; only the first one counts.
func (w *stopWatch) stop(why Reason) {
	w.once.Do(func() {
		w.early.Store(int32(why))
		close(w.stopping)
		w.cancel()
	})
	w.tookLast()
}

// tookLast says, once, that nothing more is taken (Options.OnStopTaking).
func (w *stopWatch) tookLast() {
	if w.o.OnStopTaking != nil {
		w.last.Do(w.o.OnStopTaking)
	}
}

// reason is the early stop's reason; 0 when there was none.
func (w *stopWatch) reason() Reason { return Reason(w.early.Load()) }

// watch waits for a stop until end.
func (w *stopWatch) watch(outputGone <-chan struct{}) {
	defer close(w.exited)
	var timeout <-chan time.Time
	if w.o.Timeout > 0 {
		t := time.NewTimer(w.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	softStop := w.o.Stop
	for {
		select {
		case <-softStop:
			w.soft.Store(true)
			w.stop(StopInterrupted)
			softStop = nil
		case <-timeout:
			w.stop(StopTimeout)
			timeout = nil
		case <-outputGone:
			w.stop(StopOutputClosed)
			outputGone = nil
		case <-w.ctx.Done():
			w.stop(StopInterrupted)
			return
		case <-w.done:
			return
		}
	}
}

// stopFor makes the end of the loop a stop, so that the handler's Finish knows it:
// it returns the run's reason so far.
func (w *stopWatch) stopFor(reason Reason, fatal error) Reason {
	switch {
	case fatal != nil:
		w.stop(StopFailed)
		return StopFailed
	case reason == StopOutputClosed, reason == StopInterrupted:
		w.stop(reason)
	case reason == 0:
		// The loop saw its context end: the stop's own reason says why.
		w.stop(StopInterrupted) // no-op unless ctx itself ended
		return w.reason()
	}
	return reason
}

// end ends the watcher and waits for it.
func (w *stopWatch) end() {
	close(w.done)
	<-w.exited
}

// result is the run's Result once it ended for reason.
func (t *taker) result(reason Reason) Result {
	o, s, c := t.o, t.s, t.c
	st := c.snapshot()
	res := Result{
		Reason:       reason,
		Stats:        st,
		Declined:     c.declined.Load(),
		CountUnmet:   o.Count > 0 && st.Received-st.Nacked < int64(o.Count),
		Unconfirmed:  s.unconfirmedList(),
		AnswerLost:   t.answerLost,
		SettleFailed: c.settleFailed.Load(),
	}
	if t.pl.Counted != nil && o.Count > 0 {
		n, _ := t.pl.Counted()
		res.Counted, res.Finished, res.FinishedFailed = true, int64(n.Finished), int64(n.Failed)
		res.CountUnmet = n.Finished < o.Count
	}
	return res
}

// taker is the loop that takes messages and hands them over.
type taker struct {
	ctx, take  context.Context // the hard stop; any stop
	stopping   <-chan struct{} // closed by any stop
	src        Source
	h          Handler
	pl         Pipelining // h's, asked once
	s          *settler
	c          *counters
	o          Options
	answerLost bool
	lost       error // the connection error while the node is gone
	undecodable

	orders   chan *call    // consumes to send, taken by the senders
	results  chan *call    // consumes that came back
	senders  int           // goroutines sending consumes, each one at a time
	out      int           // consumes on their way
	asked    int           // messages they asked for
	received int           // messages taken and handed over
	reached  bool          // the node answered once
	backoff  time.Duration // the next pause while the node is lost
	single   bool          // the node answers one message per consume
	wait     time.Duration // what each consume asks the node to wait for messages
	aside    *call         // a consume that came back, for the loop's next turn
	rate     *takeRate     // nil: no --rate
}

// call is one consume on its way.
type call struct {
	n int // messages asked for
	// quiet is a consume sent while nothing of this run was held, being settled or
	// asked for: an empty answer to it means the node has nothing ready for us.
	quiet   bool
	settled <-chan struct{} // closed at the first settlement that ends after it was sent
	res     *client.ConsumeResult
	err     error
	// ds are the messages it brought, held by the run (and so kept, see keeper) from
	// the moment they arrived, though the loop may take them up later.
	ds []Delivery
}

// run takes and hands over until a stop. It returns the reason (0 when a stop ended
// it, leaving the reason to whoever stopped it) or a fatal error. The timeout running
// out while the node is gone is the node's error: the run did not end cleanly.
func (t *taker) run() (Reason, error) {
	t.wait = min(t.o.Wait, t.o.PollMax)
	if t.o.Rate > 0 {
		t.rate = newTakeRate(t.o.Rate, t.o.Max)
	}
	if t.o.Drain {
		t.wait = 0
	}
	t.orders = make(chan *call, onTheirWay+1)
	t.results = make(chan *call, onTheirWay+1)
	defer close(t.orders) // the senders end; collect has taken every answer by then
	reason, err := t.loop()
	if reason == 0 && err == nil && t.lost != nil && !chans.Closed(t.o.Stop) && t.ctx.Err() == nil {
		return 0, t.lost
	}
	return reason, err
}

// verdict is what a piece of the loop's turn decided.
type verdict int

const (
	goOn     verdict = iota // carry on with this turn
	nextTurn                // start the next turn
	endLoop                 // the loop ends, with the reason and error given
)

// loop takes turns until one ends it: each turn makes sure a consume is on its way,
// waits for the next answer and hands over what it brought.
func (t *taker) loop() (Reason, error) {
	for {
		if v, reason, err := t.turn(); v == endLoop {
			return reason, err
		}
	}
}

// turn is one pass of the loop.
func (t *taker) turn() (verdict, Reason, error) {
	if v, reason, err := t.askFirst(); v != goOn {
		return v, reason, err
	}
	c := t.next()
	if v, reason, err := t.answered(c.err); v != goOn {
		return v, reason, err
	}
	if c.res == nil || len(c.res.Messages) == 0 {
		return t.empty(c)
	}
	if c.res.Single {
		t.learnSingle()
	}
	return t.handOver(c)
}

// askFirst stops the loop at Count or a stop, and otherwise, with nothing on its way,
// sends a consume for what the handler can take (Slots), --count needs and --rate
// allows.
func (t *taker) askFirst() (verdict, Reason, error) {
	o := t.o
	if o.Count > 0 {
		need, changed := t.need()
		if need <= 0 && changed == nil {
			return endLoop, StopCount, nil
		}
		if need <= 0 && t.out == 0 {
			// Every message still needed is in hand: wait for one to finish, or to
			// go back and be needed again.
			select {
			case <-changed:
				return nextTurn, 0, nil
			case <-t.take.Done():
				return endLoop, 0, nil
			}
		}
	}
	// The watcher may not have seen a stop that came before this turn yet; a stop
	// must mean nothing more is taken, so look here too.
	if chans.Closed(o.Stop) {
		return endLoop, StopInterrupted, nil
	}
	if t.take.Err() != nil {
		return endLoop, 0, nil
	}
	if t.out > 0 {
		return goOn, 0, nil
	}
	free, err := t.h.Slots(t.take)
	if err != nil {
		if t.take.Err() != nil {
			return endLoop, 0, nil
		}
		return endLoop, 0, err
	}
	n := min(o.Max, max(free, 1))
	if o.Count > 0 {
		need, _ := t.need()
		if need <= 0 {
			return nextTurn, 0, nil // it changed while Slots waited
		}
		n = min(n, need)
	}
	if t.rate != nil {
		if n, err = t.rate.wait(t.take, n); err != nil {
			return endLoop, 0, nil
		}
	}
	t.send(n)
	return goOn, 0, nil
}

// answered decides on a consume's error: a node once reached and now lost is waited
// out (until a stop), as is one that served and now keeps answering busy (but not
// with Drain); one never reached fails the run, anything else is fatal.
func (t *taker) answered(err error) (verdict, Reason, error) {
	o := t.o
	switch {
	case err == nil:
	case errors.Is(err, client.ErrAnswerLost):
		t.answerLost = true
		return endLoop, 0, nil
	case t.reached && client.IsUnreachable(err):
		// A node that answered before is restarting or briefly gone: wait it out
		// (until a stop) rather than end a long-running consumer.
		return t.nodeLost(err)
	case !t.reached && client.IsUnreachable(err):
		// A node never reached fails the run, also when --timeout or a stop ended
		// the retries: the user's address is wrong or the node is down.
		return endLoop, 0, err
	case t.reached && client.IsBusy(err) && !o.Drain:
		// A node that served and now answers 503 (or 502, 421, 429) past the retry
		// budget cannot serve for now, as while a partition owner is down or moving:
		// a long-running consumer waits that out as it waits out a restart. Only
		// --drain, a run that must end, ends on it.
		return t.nodeLost(err)
	case t.take.Err() != nil, errors.Is(err, client.ErrStopped):
		return endLoop, 0, nil
	default:
		return endLoop, 0, err
	}
	t.reached = true
	if t.lost != nil {
		t.lost = nil
		if o.OnNodeBack != nil {
			o.OnNodeBack()
		}
	}
	return goOn, 0, nil
}

// nodeLost pauses, with a backoff, after a consume found the node gone.
func (t *taker) nodeLost(err error) (verdict, Reason, error) {
	first := t.lost == nil
	t.lost = err
	if t.take.Err() != nil {
		return endLoop, 0, nil
	}
	if first {
		t.backoff = min(firstReconnect, t.o.ReconnectMax)
		if t.o.OnNodeLost != nil {
			t.o.OnNodeLost(err)
		}
	}
	if t.out > 0 {
		return nextTurn, 0, nil // the others come back the same way; one pause is enough
	}
	if !pause(t.take, t.backoff) {
		return endLoop, 0, nil
	}
	t.backoff = min(2*t.backoff, t.o.ReconnectMax)
	return nextTurn, 0, nil
}

// empty decides on an answer that brought nothing: with Drain, the end once the node
// has nothing ready for us; else a pause before the next consume if it did not wait.
func (t *taker) empty(c *call) (verdict, Reason, error) {
	if t.out > 0 {
		// Others are on their way: their answers say more. No new consume is sent
		// after an empty answer until one brings messages.
		return nextTurn, 0, nil
	}
	if t.o.Drain {
		if c.quiet {
			return endLoop, StopDrained, nil
		}
		// Something of this run was held, being settled or asked for when we asked,
		// and the node may have had nothing to give only because of it (a
		// partition's in-flight cap): ask again once a settlement has ended.
		select {
		case <-c.settled:
		case <-t.take.Done():
			return endLoop, 0, nil
		}
		return nextTurn, 0, nil
	}
	if t.wait == 0 && !pause(t.take, t.o.IdlePause) {
		return endLoop, 0, nil
	}
	return nextTurn, 0, nil
}

// handOver hands the handler what c brought (with what came back meanwhile, from a
// node that answers one message per consume), after sending the next consumes ahead.
func (t *taker) handOver(c *call) (verdict, Reason, error) {
	ds := c.ds
	if t.single {
		ds = t.joinReady(ds)
	}
	t.received += len(ds)
	t.c.received.Add(int64(len(ds)))
	// Stopped while this answer was on its way: take nothing more means these go back
	// at once, unhandled. The soft stop is looked at here too, as in askFirst: the
	// watcher may not have cancelled take yet (a loaded machine can delay it for
	// milliseconds), and a batch that arrived after the signal was printed and acked.
	if t.take.Err() != nil || chans.Closed(t.o.Stop) {
		_ = NackAll(ds, GiveBack)
		return endLoop, 0, nil
	}
	t.sendAhead(len(ds), len(ds) < c.n)
	if err := t.h.Handle(t.ctx, ds); err != nil {
		if errors.Is(err, ErrOutputClosed) {
			return endLoop, StopOutputClosed, nil
		}
		if errors.Is(err, ErrStopped) {
			return endLoop, 0, nil
		}
		return endLoop, 0, err
	}
	return nextTurn, 0, nil
}

// send starts a consume of up to n messages; next receives its answer. The consumes
// go out through senders kept for the run, one more whenever all are busy: a
// goroutine per consume cost its start and the growth of its stack every time.
func (t *taker) send(n int) {
	held, settled := t.s.pending()
	c := &call{n: n, quiet: held == 0 && t.out == 0, settled: settled}
	t.out++
	t.asked += n
	if t.senders < t.out {
		t.senders++
		go t.sender()
	}
	t.orders <- c
}

// sender sends the consumes ordered until the run ends.
func (t *taker) sender() {
	// One context for every consume this sender makes, not one each: with one
	// message per consume, a context and a stop watcher per request were a tenth of
	// what a drain allocated. A stop cuts the consume on its way wait+AnswerGrace
	// later (see consume); none is sent after a stop.
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	defer context.AfterFunc(t.take, func() { time.AfterFunc(t.wait+t.o.AnswerGrace, cancel) })()
	var scratch []byte // for checking that messages decode; see setAsideUndecodable
	for c := range t.orders {
		c.res, c.err = t.consume(ctx, c.n)
		if c.err == nil && c.res != nil && len(c.res.Messages) > 0 {
			c.res.Messages = t.giveBackSurplus(c.res.Messages, c.n)
			c.res.Messages, scratch = t.setAsideUndecodable(ctx, c.res.Messages, scratch)
		}
		if c.err == nil && c.res != nil && len(c.res.Messages) > 0 {
			c.ds = t.s.wrap(c.res.Messages)
		}
		t.results <- c
	}
}

// giveBackSurplus keeps the first n of msgs, what the consume asked for, and gives the
// rest back at once: a node that answers 150 messages to max=1 must not make
// `--count 1` print 150, or exec mode with -j 1 run 150 commands. The run never holds
// more than it asked for; OnSurplus hears of it.
func (t *taker) giveBackSurplus(msgs []client.Message, n int) []client.Message {
	if n <= 0 || len(msgs) <= n {
		return msgs
	}
	over := t.s.wrap(msgs[n:])
	t.c.received.Add(int64(len(over)))
	_ = NackAll(over, GiveBack)
	if t.o.OnSurplus != nil {
		t.o.OnSurplus(n, len(msgs))
	}
	return msgs[:n:n]
}

// next waits for a consume on its way to come back.
func (t *taker) next() *call {
	c := t.aside
	t.aside = nil
	if c == nil {
		c = <-t.results
	}
	t.took(c)
	return c
}

// took counts c off what is on its way.
func (t *taker) took(c *call) {
	t.out--
	t.asked -= c.n
}

// collect lets every consume still on its way arrive and gives back at once what it
// brings: the loop takes nothing more. Run calls it once the loop ended and the stop,
// if any, is known, so that a node that does not answer is cut after its grace.
func (t *taker) collect() {
	for t.out > 0 {
		c := t.next()
		switch {
		case c.err != nil:
			if errors.Is(c.err, client.ErrAnswerLost) {
				t.answerLost = true
			}
		case len(c.ds) > 0:
			t.c.received.Add(int64(len(c.ds)))
			_ = NackAll(c.ds, GiveBack)
		}
	}
}

// firstReconnect is the first pause after the node was lost; it doubles up to
// Options.ReconnectMax.
const firstReconnect = 250 * time.Millisecond

// consume asks for up to n messages. A stop does not cancel a request in flight: the
// node may be leasing messages for it, and an answer cut then would strand them until
// their lease ran out. The loop gives back what such an answer brings instead. Only
// the hard stop, or a node that has not answered AnswerGrace past the wait, cuts it:
// ctx, the sender's, ends at either.
//
// An empty answer to a long poll comes back no sooner than IdlePause after it was
// asked, as the loop pauses after one to a request that did not long-poll: a wait of a
// millisecond, a node whose cap is one, or one that answers 204 at once whatever the
// wait, would otherwise have the consumer asking thousands of times a second.
func (t *taker) consume(ctx context.Context, n int) (*client.ConsumeResult, error) {
	asked := time.Now()
	res, err := t.src.Consume(ctx, t.o.Topic, client.ConsumeOptions{Wait: t.wait, Partition: t.o.Partition, Max: n, Stop: t.stopping})
	if err == nil && t.wait > 0 && (res == nil || len(res.Messages) == 0) {
		if d := t.o.IdlePause - time.Since(asked); d > 0 {
			pause(t.take, d)
		}
	}
	return res, err
}

// pause waits d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
