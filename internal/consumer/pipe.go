package consumer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// pipeProbe sees into the pipe a Printer writes to (pipe_linux.go).
type pipeProbe interface {
	// unread is how many bytes written to the pipe the reader has not taken yet.
	unread() (int, error)
	// readerGone waits up to d and reports whether the reader has gone away.
	readerGone(d time.Duration) (bool, error)
}

// When stdout is a pipe, a line counts as printed only once the reader took it out of
// the pipe: bytes written minus bytes still unread (FIONREAD) is how far the reader got,
// and each record whose last byte lies within that is acked. What the reader never took
// is given back the moment it goes away, and a reader that goes away while narad waits
// for messages ends the run at once.
//
// Lines waiting in the pipe hold their leases, so a slow reader (`| while read`) must
// not see them lapse: the run keeps them (see keeper, which sub asks for), and no more
// is taken while pipeHoldMax lines wait unread, which bounds what is held however slow
// the reader is.
const (
	// pipeEvery is how often a pipe with lines in it is looked at. A fast reader's lines
	// are mostly acked on the next batch's turn; this bounds the wait of the last ones.
	pipeEvery = 5 * time.Millisecond
	// pipeIdle is how often the watcher wakes when nothing waits: only to notice that the
	// run ended, since the reader going away wakes it at once.
	pipeIdle = 100 * time.Millisecond
	// pipeGrace is how long, after a stop, the reader may still take what waits in the
	// pipe before it is given back.
	pipeGrace = 500 * time.Millisecond
	// pipeGoneGrace is how long a consume on its way when the reader went away may
	// still be answered before it is cancelled.
	pipeGoneGrace = 250 * time.Millisecond
	// pipeHoldMax is how many lines may wait unread before no more is taken. A fast
	// reader is often a batch or two behind only because it was not scheduled yet, and
	// waiting for it then costs a third of the rate; a slow one holds this many leases
	// at most, extended in a request or two.
	pipeHoldMax = 10 * MaxBatch
)

// waitingLine is a record written (or being written) to the pipe and not yet taken.
type waitingLine struct {
	d   Delivery
	end int64 // the stream offset just past its last byte
}

// pipeState is a Printer's view of the pipe it writes to.
type pipeState struct {
	probe     pipeProbe
	every     time.Duration
	idle      time.Duration
	grace     time.Duration
	goneGrace time.Duration

	// ack acks in the background (Printer.ackLater), counted in the Printer's WaitGroup.
	ack func([]Delivery)

	start sync.Once
	done  chan struct{} // closed by Finish: the watcher stops

	// caughtUp is the last batch coming back short of a full one: the node had no more.
	caughtUp atomic.Bool

	mu       sync.Mutex
	wg       *sync.WaitGroup
	written  int64 // bytes written so far
	waiting  []waitingLine
	gone     chan struct{} // closed once the reader went away and what it left was settled
	goneOnce sync.Once
	left     []Delivery // what a reader that went away never took: given back by finish
	isGone   bool
	writing  bool          // a write is in progress: the stream's length is not known
	finished bool          // Finish gave back what waited: nothing is taken from now on
	changed  chan struct{} // closed and replaced whenever waiting shrinks
}

func newPipeState(probe pipeProbe, wg *sync.WaitGroup, ack func([]Delivery)) *pipeState {
	return &pipeState{
		probe: probe, wg: wg, ack: ack,
		every: pipeEvery, idle: pipeIdle, grace: pipeGrace, goneGrace: pipeGoneGrace,
		done: make(chan struct{}), gone: make(chan struct{}), changed: make(chan struct{}),
	}
}

// watch starts the watcher once: it notices the reader going away, and acks what the
// reader takes while narad waits for messages.
func (ps *pipeState) watch() {
	ps.start.Do(func() { go ps.watcher() })
}

func (ps *pipeState) watcher() {
	for {
		ps.mu.Lock()
		d := ps.idle
		if len(ps.waiting) > 0 {
			d = ps.every
		}
		ps.mu.Unlock()
		gone, err := ps.probe.readerGone(d)
		select {
		case <-ps.done:
			return
		default:
		}
		if gone {
			ps.readerGone()
			return
		}
		if err != nil {
			// Polling failed: keep checking what was taken, at the idle pace.
			time.Sleep(ps.idle)
		}
		ps.settleTaken()
	}
}

// add records the lines of a write about to start at the current end of the stream.
// False means the reader is gone (or the run finished): nothing was recorded.
func (ps *pipeState) add(ds []Delivery, ends []int) (base int64, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.isGone || ps.finished {
		return 0, false
	}
	base = ps.written
	for i, end := range ends {
		ps.waiting = append(ps.waiting, waitingLine{d: ds[i], end: base + int64(end)})
	}
	ps.writing = true
	return base, true
}

// wrote records that a write begun at base put n bytes in the pipe, and gives back the
// lines of that write that did not make it out whole. If the reader went away during
// the write, it settles everything that waits, now that the stream's length is known.
func (ps *pipeState) wrote(base int64, n int, abandoned bool) {
	ps.mu.Lock()
	ps.writing = false
	if ps.finished {
		ps.mu.Unlock()
		return
	}
	cut := base + int64(n)
	if abandoned {
		// How much of a write still blocked will go out is not known: give it all back.
		cut = base
	} else {
		ps.written = cut
	}
	var back []Delivery
	i := len(ps.waiting)
	for i > 0 && ps.waiting[i-1].end > cut {
		i--
		back = append(back, ps.waiting[i].d)
	}
	ps.waiting = ps.waiting[:i]
	var acks []Delivery
	gone := ps.isGone
	if gone {
		var more []Delivery
		acks, more = ps.takeAll()
		back = append(back, more...)
	}
	ps.wg.Add(1)
	ps.mu.Unlock()
	defer ps.wg.Done()
	if gone {
		ps.announceGone()
	}
	ps.ack(acks)
	// Only a run that is ending gives back here (a reader gone, a write abandoned or
	// failed): a consume of it on its way (sent ahead) that is handed one of these is
	// let arrive, and gives it back again.
	_ = NackAll(back, GiveBack)
}

// taken is how far the reader got in the stream, or -1 when that cannot be known.
// Bytes of a write still in progress count as unread, so this errs towards too little.
func (ps *pipeState) taken() int64 {
	unread, err := ps.probe.unread()
	if err != nil {
		return -1
	}
	return ps.written - int64(unread)
}

// settleTaken acks every waiting line the reader has taken.
func (ps *pipeState) settleTaken() {
	ps.mu.Lock()
	if ps.isGone || ps.finished || len(ps.waiting) == 0 {
		ps.mu.Unlock()
		return
	}
	taken := ps.taken()
	i := 0
	for i < len(ps.waiting) && ps.waiting[i].end <= taken {
		i++
	}
	if i == 0 {
		ps.mu.Unlock()
		return
	}
	acks := linesOf(ps.waiting[:i])
	ps.waiting = append(ps.waiting[:0:0], ps.waiting[i:]...)
	ps.signal()
	ps.wg.Add(1)
	ps.mu.Unlock()
	defer ps.wg.Done()
	ps.ack(acks)
}

// takeAll splits everything waiting into what the reader took and what it did not, and
// leaves nothing waiting. Called with mu held, once the reader is gone.
func (ps *pipeState) takeAll() (acks, back []Delivery) {
	taken := ps.taken()
	i := 0
	for i < len(ps.waiting) && ps.waiting[i].end <= taken {
		i++
	}
	acks, back = linesOf(ps.waiting[:i]), linesOf(ps.waiting[i:])
	ps.waiting = nil
	ps.signal()
	return acks, back
}

// readerGone settles everything waiting when the reader went away: what it took is
// acked now, the rest is given back once the loop has stopped taking (Finish). Given
// back now, it could be handed to a consume of this very run while that is being
// cancelled, and stay leased to nobody. During a write all of this is left to the
// write's end, when the length of the stream is known again.
//
// The run is told after pipeGoneGrace, or at once when the loop asks for slots: a
// consume on its way is then most likely answered first (what it brings, Handle gives
// back), rather than cancelled while the node answers it; a long poll with nothing to
// bring is cancelled when the grace ends.
func (ps *pipeState) readerGone() {
	ps.mu.Lock()
	if ps.isGone || ps.finished {
		ps.mu.Unlock()
		return
	}
	ps.isGone = true
	if ps.writing {
		ps.mu.Unlock()
		return
	}
	acks, back := ps.takeAll()
	ps.left = append(ps.left, back...)
	ps.wg.Add(1)
	ps.mu.Unlock()
	defer ps.wg.Done()
	time.AfterFunc(ps.goneGrace, ps.announceGone)
	ps.ack(acks)
}

// announceGone tells the run that the reader went away.
func (ps *pipeState) announceGone() { ps.goneOnce.Do(func() { close(ps.gone) }) }

// giveBack gives back every line still waiting, and what the reader left when it went
// away, and takes nothing more: the run is over.
func (ps *pipeState) giveBack() {
	ps.mu.Lock()
	ps.finished = true
	back := append(linesOf(ps.waiting), ps.left...)
	ps.waiting, ps.left = nil, nil
	ps.signal()
	ps.mu.Unlock()
	_ = NackAll(back, GiveBack)
}

// waitingCount is how many lines wait in the pipe; gone reports the reader gone.
func (ps *pipeState) waitingCount() (n int, gone bool, changed <-chan struct{}) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.waiting), ps.isGone, ps.changed
}

// signal wakes whoever waits for the pipe to empty. Called with mu held.
func (ps *pipeState) signal() {
	close(ps.changed)
	ps.changed = make(chan struct{})
}

// slots is Slots for a pipe: no more is taken while pipeHoldMax lines wait unread, and,
// once a batch came back short (the node had no more ready, so the next consume is
// likely to long-poll), none until the reader took every line. A reader that goes
// away during a long poll then leaves nothing to give back: a give-back while this
// run's long poll is being cancelled could be handed to that very poll and stay
// leased to nobody until the lease runs out.
func (ps *pipeState) slots(ctx context.Context) (int, error) {
	pause := 50 * time.Microsecond
	for {
		ps.settleTaken()
		n, gone, changed := ps.waitingCount()
		if gone {
			// No consume is on its way now: end the run at once (Run watches gone), and
			// let the loop's context say so.
			ps.announceGone()
			<-ctx.Done()
			return 0, ctx.Err()
		}
		if n == 0 || (n < pipeHoldMax && !ps.caughtUp.Load()) {
			return MaxBatch, nil
		}
		// A reader keeping up takes a line within microseconds; a slow one is looked
		// at less and less often.
		t := time.NewTimer(pause)
		pause = min(2*pause, ps.every)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
		t.Stop()
	}
}

// ahead is Ahead for a pipe: what pipeHoldMax leaves beside the lines waiting unread,
// none once a batch came back short (see slots) or the reader went away.
func (ps *pipeState) ahead() int {
	ps.settleTaken()
	n, gone, _ := ps.waitingCount()
	if gone || ps.caughtUp.Load() {
		return 0
	}
	return pipeHoldMax - n
}

// finish waits for the reader to take every waiting line, to go away, or, after a
// stop, for the grace to pass; what still waits then is given back. Nothing is waited
// for once ctx (the hard stop) ends.
func (ps *pipeState) finish(ctx context.Context, stopping <-chan struct{}) {
	defer close(ps.done)
	var grace <-chan time.Time
	for {
		ps.settleTaken()
		n, gone, changed := ps.waitingCount()
		if n == 0 || gone {
			break
		}
		t := time.NewTimer(ps.every)
		select {
		case <-changed:
		case <-t.C:
		case <-stopping:
			stopping = nil
			g := time.NewTimer(ps.grace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			ps.giveBack()
		case <-ctx.Done():
			ps.giveBack()
		}
		t.Stop()
	}
	ps.giveBack() // nothing waits now; this only marks the run finished
}

func linesOf(ls []waitingLine) []Delivery {
	ds := make([]Delivery, len(ls))
	for i, l := range ls {
		ds[i] = l.d
	}
	return ds
}
