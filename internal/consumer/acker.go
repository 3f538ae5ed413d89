package consumer

import (
	"sync"
	"time"
)

// Acker is the one ack batcher of the handlers: the Printer's written lines, a pipe's
// lines the reader took, and exec mode's finished commands are all acked through one.
// Acks handed to it wait in a queue; a few ackers, kept until Close, each take what
// waits when they look and send it with AckAll, so that acks that come close together
// share requests while others are on their way. How one AckAll becomes requests (at
// most 100 handles or 64 KiB a batch, single acks for a node that refuses batches,
// 502/503 retried with backoff, given up at the hard stop or Options.Abandon) is the
// client's (client.Settle), through the run's settler, which also names what never got
// a final answer (Result.Unconfirmed).
//
// Leases: an ack waiting here is of a delivery still held (settler.open), so the run's
// keeper extends it; once sent it is held as being acked (settler.acking) until its
// answer, retries included. A 502/503 outage of acks thus never lets a lease lapse.
type Acker struct {
	// window: the first ack queued waits this long for others before an acker may
	// take it, unless MaxBatch wait; 0 none; below 0 every ack is sent at once, alone,
	// by its caller.
	window   time.Duration
	queueMax int // Ack waits while this many wait; 0: no bound
	inFlight int // ackers at once, unless oneByOne
	send     func([]Delivery)
	after    func(time.Duration, func()) // time.AfterFunc, or a test's clock

	mu   sync.Mutex
	room *sync.Cond // signalled when the queue shrinks
	work *sync.Cond // signalled when the queue grows or Close is called
	// queue is what ackers take; dones, when not nil, has one entry per queued ack:
	// closed once the request that carried it was answered (AckWait), or nil.
	queue []Delivery
	dones []chan struct{}
	// gather and its dones are acks inside the window, not yet in queue; gen tells one
	// window's end from the next.
	gather      []Delivery
	gatherDones []chan struct{}
	gen         int
	ackers      int // running, each kept until Close
	idle        int // ackers waiting for work
	closed      bool
	// oneByOne: the node answers one message per consume (older than v3.1), so it
	// settles one handle per request too. Each acker then takes one ack at a time and
	// sends it itself, up to legacyParallel at once, as that many loops of consume and
	// ack would: an acker taking the whole queue had the client send all but the first
	// ack from a goroutine started for each.
	oneByOne bool
	wg       sync.WaitGroup
}

// AckerOptions configure an Acker.
type AckerOptions struct {
	// InFlight is how many acks (requests, or calls of AckAll) may be on their way at
	// once; 0 means 4. An older node gets legacyParallel once OneByOne is called.
	InFlight int
	// Queued bounds the acks waiting for an acker: Ack then waits, so that a slow node
	// slows the handler down instead of letting held leases pile up. 0: no bound.
	Queued int
	// Window is how long the first of a batch of acks waits for others to share its
	// request; a full batch (MaxBatch) goes at once. 0: no wait; below 0: each ack is
	// sent at once, alone.
	Window time.Duration
}

// NewAcker returns an Acker that acks through AckAll.
func NewAcker(o AckerOptions) *Acker {
	return newAcker(o, func(ds []Delivery) { _ = AckAll(ds) })
}

// newAcker is NewAcker with what sends a batch (a test's stand-in).
func newAcker(o AckerOptions, send func([]Delivery)) *Acker {
	if o.InFlight <= 0 {
		o.InFlight = printAcksInFlight
	}
	a := &Acker{window: o.Window, queueMax: o.Queued, inFlight: o.InFlight, send: send,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
	a.room = sync.NewCond(&a.mu)
	a.work = sync.NewCond(&a.mu)
	return a
}

// Ack acks ds in the background (the outcome is in the run's counters). It waits while
// the queue is full.
func (a *Acker) Ack(ds []Delivery) {
	if len(ds) > 0 {
		a.add(ds, nil)
	}
}

// AckWait acks d with whatever other acks share its request, and returns once that
// request was answered (the answer, as for Delivery.Ack, is in the run's counters).
func (a *Acker) AckWait(d Delivery) {
	done := make(chan struct{})
	a.add([]Delivery{d}, done)
	<-done
}

// OneByOne tells the Acker that the node answers one message per consume (see
// Acker.oneByOne); the run does, through Pipelining.OnSingle, when it learns it.
func (a *Acker) OneByOne() {
	a.mu.Lock()
	a.oneByOne = true
	a.mu.Unlock()
}

// Close sends what waits, lets the ackers end once the queue is empty and waits for
// them. An ack handed over after Close still gets an acker: one is started when none
// is left.
func (a *Acker) Close() {
	a.mu.Lock()
	a.closed = true
	a.releaseLocked()
	a.work.Broadcast()
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *Acker) add(ds []Delivery, done chan struct{}) {
	if a.window < 0 {
		a.send(ds)
		if done != nil {
			close(done)
		}
		return
	}
	var waiters []chan struct{} // one for each of ds, or nil
	if done != nil {
		waiters = make([]chan struct{}, len(ds))
		for i := range waiters {
			waiters[i] = done
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.queueMax > 0 && len(a.queue)+len(a.gather) >= a.queueMax {
		a.room.Wait()
	}
	if a.window > 0 && !a.closed {
		if len(a.gather) == 0 {
			a.gen++
			gen := a.gen
			a.after(a.window, func() { a.windowEnded(gen) })
		}
		a.gather, a.gatherDones = appendAcks(a.gather, a.gatherDones, ds, waiters)
		if len(a.gather) >= MaxBatch {
			a.releaseLocked()
		}
		return
	}
	a.queue, a.dones = appendAcks(a.queue, a.dones, ds, waiters)
	a.wakeLocked(len(ds))
}

// appendAcks appends ds to q, and their waiters (nil, or one for each) to dones:
// dones stays nil while nobody waits, as for the Printer, whose acks nobody waits for.
func appendAcks(q []Delivery, dones []chan struct{}, ds []Delivery, waiters []chan struct{}) ([]Delivery, []chan struct{}) {
	if waiters != nil && dones == nil {
		dones = make([]chan struct{}, len(q), len(q)+len(ds))
	}
	if dones != nil {
		if waiters == nil {
			waiters = make([]chan struct{}, len(ds))
		}
		dones = append(dones, waiters...)
	}
	return append(q, ds...), dones
}

// windowEnded hands the acks of window gen to the ackers, unless they went already
// (a full batch, or Close).
func (a *Acker) windowEnded(gen int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen == a.gen {
		a.releaseLocked()
	}
}

// releaseLocked moves the acks inside their window to the queue. Called with mu held.
func (a *Acker) releaseLocked() {
	if len(a.gather) == 0 {
		return
	}
	n := len(a.gather)
	a.gen++ // the window's end, still to come, sends nothing
	a.queue, a.dones = appendAcks(a.queue, a.dones, a.gather, a.gatherDones)
	a.gather, a.gatherDones = nil, nil
	a.wakeLocked(n)
}

// wakeLocked wakes or starts ackers for n acks just queued: one takes everything
// queued, or one ack when oneByOne, when every ack wants an acker of its own. Called
// with mu held.
func (a *Acker) wakeLocked(n int) {
	want := 1
	if a.oneByOne {
		want = n
	}
	if a.idle > 0 {
		if want > 1 {
			a.work.Broadcast()
		} else {
			a.work.Signal()
		}
		want -= a.idle
	}
	for ; want > 0 && a.ackers < a.most(); want-- {
		// Ackers are kept until Close: one a burst cost its start and the growth of
		// its stack every time, which one message per consume made every message.
		a.ackers++
		a.wg.Add(1)
		go a.acker()
	}
}

// most is how many ackers may run at once.
func (a *Acker) most() int {
	if a.oneByOne {
		return legacyParallel
	}
	return a.inFlight
}

// acker acks what waits in the queue until Close.
func (a *Acker) acker() {
	defer a.wg.Done()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		for len(a.queue) == 0 {
			if a.closed {
				a.ackers--
				return
			}
			a.idle++
			a.work.Wait()
			a.idle--
		}
		ds, dones := a.queue, a.dones
		if a.oneByOne && len(ds) > 1 {
			ds = ds[:1:1]
			a.queue = a.queue[1:]
			if dones != nil {
				dones = dones[:1:1]
				a.dones = a.dones[1:]
			}
		} else {
			a.queue, a.dones = nil, nil
		}
		a.room.Broadcast()
		a.mu.Unlock()
		a.send(ds)
		for _, done := range dones {
			if done != nil {
				close(done) // AckWait queues one ack per done
			}
		}
		a.mu.Lock()
	}
}
