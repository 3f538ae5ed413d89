package consumer

import "runtime"

// This file is the run's pipelining policy, in one place: how much the loop takes
// ahead of the handler, how far an older node is served side by side, how many acks
// are on their way, and what a handler tells the loop about itself (Pipelining).

// Pipelining is what a Handler tells the run about its part in the pipelining: one
// value, asked for once before anything is taken (Handler.Pipelining). Nothing else
// about a handler is looked up. The zero value is a handler that takes what Slots
// says and nothing ahead, whose output does not go away while the loop waits, that
// leaves Count to the loop and has nothing to change when the node is an older one.
type Pipelining struct {
	// Ahead, when set, is how many messages the handler could take now without
	// waiting, counting those handed over that it still holds but not the batch about
	// to be handed over; 0 or less means none until Slots says so. The loop then sends
	// the next consumes before it hands a batch over (see sendAhead), so the node
	// leases the next batch while this one is written and acked. What is taken ahead
	// may wait in hand: the run must keep its leases (Options.Lease).
	Ahead func() int
	// StopOn, when set, is given the run's early stop (a signal, the timeout, the
	// output gone) before anything is taken: for a handler whose Handle can block on
	// something other than the network (a write to a reader that stopped reading).
	StopOn func(stopping <-chan struct{})
	// GraceOver, when set, is given a channel closed when the run's grace after a stop
	// is over (Options.Abandon, or the hard stop), if the run has one: a settlement
	// asked for after it gets one last try. A handler that holds work past a stop (the
	// line in a pipe) gives it back then rather than at a timer of its own, whose end
	// would race the run's abandoning the very give-back it sends.
	GraceOver func(over <-chan struct{})
	// OutputGone, when set, is closed when the handler's output goes away, also while
	// the loop waits for messages (a pipe whose reader exited): the run then ends as
	// StopOutputClosed at once.
	OutputGone <-chan struct{}
	// Counted, when set, makes the handler count Options.Count itself, in messages
	// finished rather than deliveries taken (exec mode: a message that fails and
	// comes back is one message, however many attempts it takes). It says where the
	// count stands, with a channel closed at its next change. The loop then stops once
	// Count are finished and never takes more than Count less those finished and those
	// in hand.
	Counted func() (c MessageCount, changed <-chan struct{})
	// OnSingle, when set, is called once, from the loop, when the node turns out to
	// answer one message per consume (older than v3.1), before the answer that showed
	// it is handed over (the Printer then acks one line per request, side by side).
	OnSingle func()
	// OneP says that the handler's own work is a few microseconds of CPU a message,
	// handed between goroutines, seldom in a system call that waits (a Printer): the
	// process runs such a stream best on one P, until the node
	// turns out to answer one message per consume. The process's tuning reads it
	// (cli's gc.go); the run does not.
	OneP bool
}

// MessageCount is where a handler's own count stands (Pipelining.Counted).
type MessageCount struct {
	// Finished is the distinct messages finished; Failed is those of them that the
	// handler gave up for good as failures.
	Finished, Failed int
	// InHand is the distinct messages held and not finished.
	InHand int
}

const (
	// batchAhead is how many consumes are kept on their way while a batch is handed
	// over, for a node that answers batches: with one, the node idled while each
	// answer was read, decoded and handed on before the next consume could follow it.
	batchAhead = 2
	// legacyParallel is how many consumes are kept on their way at once when the node
	// answers one message per consume (older than v3.1), and how many acks (see
	// Acker's oneByOne): each answer is one message, so round trips run side by side
	// rather than one after another, as that many loops of consume and ack would
	// (docs/performance.md has the figures that chose it). --count bounds them (each
	// asks for one), and the node's own in-flight cap answers the rest empty.
	legacyParallel = 12
	// onTheirWay is the most consumes ever on their way at once.
	onTheirWay = max(legacyParallel, batchAhead)
)

// The Printer's acks (see Acker): printAcksInFlight bounds the ack requests on their
// way at once, and printAcksQueued the written lines waiting for one, so that a slow
// broker slows printing down instead of letting leases pile up. aheadUnbounded is what
// a Printer to a file or a terminal can take at once: its writes do not wait for a
// reader, so only the acks still to send hold leases.
const (
	printAcksInFlight = 4
	printAcksQueued   = printAcksInFlight * MaxBatch
	aheadUnbounded    = 2 * printAcksQueued
)

// need is how many more messages Count still needs taken: Count less those taken, or,
// for a handler that counts messages itself (Pipelining.Counted), less those finished
// and those in hand; changed is closed when that may change, nil when Count is
// reached (or counts deliveries taken, which only the loop changes).
func (t *taker) need() (int, <-chan struct{}) {
	if t.pl.Counted != nil {
		n, changed := t.pl.Counted()
		if n.Finished >= t.o.Count {
			return 0, nil
		}
		return t.o.Count - n.Finished - n.InHand, changed
	}
	return t.o.Count - t.received, nil
}

// learnSingle notes that the node answers one message per consume, once, and tells
// the handler and the run's caller.
func (t *taker) learnSingle() {
	if t.single {
		return
	}
	t.single = true
	if t.pl.OnSingle != nil {
		t.pl.OnSingle()
	}
	if t.o.OnSingle != nil {
		t.o.OnSingle()
	}
}

// sendAhead sends the next consumes before a batch of inHand messages is handed over,
// when the handler can take them (Pipelining.Ahead): up to batchAhead for a node that
// answers batches, unless this batch came back short (the node had no more ready, and
// the next consume would long-poll while lines may wait in a pipe); up to
// legacyParallel for a node that answers one message per consume. What the handler
// holds and what those on their way asked for count against what it can take, and no
// request asks for more than --count still needs.
func (t *taker) sendAhead(inHand int, short bool) {
	if t.pl.Ahead == nil {
		return
	}
	depth := batchAhead
	if t.single {
		depth = legacyParallel
	} else if short {
		return
	}
	if t.out >= depth {
		return
	}
	room := t.pl.Ahead() - inHand - t.asked
	sent := false
	for t.out < depth && room > 0 {
		n := min(t.o.Max, room)
		if t.single {
			n = 1 // each answer is one message whatever max says
		}
		if t.o.Count > 0 {
			n = min(n, t.o.Count-t.received-t.asked)
		}
		if n > 0 && t.rate != nil {
			n = t.rate.now(n)
		}
		if n <= 0 || t.take.Err() != nil {
			break
		}
		t.send(n)
		sent = true
		room -= n
	}
	if sent {
		// Let the senders put their requests on the wire before this batch is written:
		// on one P (see Pipelining.OneP) they would otherwise wait until the loop
		// blocks, after the write and the ack, and the node would idle meanwhile.
		runtime.Gosched()
	}
}

// joinReady adds to ds what the consumes that came back meanwhile brought, up to the
// first that brought nothing or failed, which next returns first (still counted on
// its way until then): one write and one pass of the loop for them all. Only for a
// node that answers one message per consume: a batch is a write of its own already.
func (t *taker) joinReady(ds []Delivery) []Delivery {
	for t.aside == nil && len(t.results) > 0 {
		c := <-t.results
		if c.err != nil || len(c.ds) == 0 {
			t.aside = c
			break
		}
		t.took(c)
		ds = append(ds, c.ds...)
	}
	return ds
}
