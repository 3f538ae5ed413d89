package consumer

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/narad/narad/internal/chans"
)

// pipeProbe sees into the pipe a Printer writes to (pipe_linux.go).
type pipeProbe interface {
	// unread is how many bytes written to the pipe the reader has not taken yet.
	unread() (int, error)
	// waitTaken waits up to about d for the reader to take everything in the pipe.
	waitTaken(d time.Duration) (taken, gone bool, err error)
	// readerGone waits up to d and reports whether the reader has gone away.
	readerGone(d time.Duration) (bool, error)
	// shrink makes the pipe hold one buffer where the system allows, so that waitTaken
	// can sleep until the reader took it; restore undoes it once the run is over.
	shrink()
	restore()
}

// When stdout is a pipe narad can see into (Linux), a line counts as printed only once
// the reader took it out of the pipe, and no line goes into the pipe while an earlier
// one is still in it. A reader that reads blocks (`head -n 2`, `grep -m 3`, `sed 3q`,
// jq) then never finds more than one line to take, so everything it took it could
// use: `narad sub t | head -n 2` acks exactly two and gives back the rest at once.
//
// The lines wait in narad instead, rendered, with their leases kept (Options.Lease):
// at most pipeHoldMax of them, or pipeHoldBytes, so a slow reader bounds what is held.
// Taking goes on while they wait (the loop takes ahead, on older nodes too), so a
// reader that keeps up is fed as fast as it reads.
//
// That costs a wake-up of the reader and of narad for every line, which would make a
// long drain through `| cat` several times slower than into a file. So once a reader
// has taken pipeOneByOne lines one at a time, lines go in up to a page at a time
// (pipeBlock), and a page counts as read only once the reader came back for what
// follows it: a reader that reads line by line, or a block at a time, asks for more
// only once it is done with what it has. A reader that stops early past the first
// pipeOneByOne lines leaves its last page unconfirmed: it goes back, so at most those
// lines come again on a later run (at least once), and none is acked unused. A page is
// written only with a line behind it, which confirms it, so a drain ends one line at a
// time and leaves nothing unconfirmed.
//
// Goroutines: the loop's Handle renders and queues; one writer (pipeState.writer)
// writes each line or page, waits until the reader took it and acks what that shows
// was used (the Printer's Acker);
// one watcher polls the pipe while the writer is idle, to notice a reader that went
// away while narad waits for messages. State is under mu.
const (
	// pipeHoldMax is how many lines may wait in narad for the reader before no more is
	// taken; pipeHoldBytes bounds the bytes they take (a batch always fits).
	pipeHoldMax   = 10 * MaxBatch
	pipeHoldBytes = 16 << 20
	// pipeTick is how long the writer waits for the reader in one go before it looks at
	// the run again (a hard stop, the grace after a soft one).
	pipeTick = 50 * time.Millisecond
	// pipeIdle is how often the watcher looks for a reader gone while the writer has
	// nothing to write; the reader going away wakes it at once.
	pipeIdle = 100 * time.Millisecond
	// pipeGrace is how long, after a soft stop, the line in the pipe waits for the
	// reader before it is given back, unless the Printer is told another grace.
	pipeGrace = 30 * time.Second
	// pipeGraceBehind is how much later than the grace the pipe's own timer ends, so
	// that the run's grace, where it has one, always ends first (see finish).
	pipeGraceBehind = time.Second
	// pipeOneByOne is how many lines a reader takes one at a time, each counted as used
	// once taken, before lines go into the pipe a page at a time: `head -n N` and its
	// kind are exact up to here.
	pipeOneByOne = 10 * MaxBatch
	// pipeBlockShare bounds a page to the lines taken so far over this, so that a reader
	// stopping early past pipeOneByOne gets at most a sixteenth of what it read again.
	pipeBlockShare = 16
)

// pipeBlock is the most a write of several lines puts into the pipe: one page, which a
// pipe shrunk to one page takes in one write.
var pipeBlock = os.Getpagesize()

// pipeLine is a rendered record and the delivery it prints.
type pipeLine struct {
	d Delivery
	b []byte
}

// pipeWrite is what one write puts into the pipe: one line, or a page of them.
type pipeWrite struct {
	lines []pipeLine
	b     []byte
	one   [1]pipeLine // lines' backing array for one line: one allocation a line
}

// page reports whether w holds several lines, which count as used only once the reader
// came back for what follows them.
func (w *pipeWrite) page() bool { return len(w.lines) > 1 }

// pipeState is a Printer's view of the pipe it writes to, and the lines waiting for it.
type pipeState struct {
	probe pipeProbe
	w     io.Writer
	// ack acks in the background (the Printer's Acker, which Finish closes).
	ack   func([]Delivery)
	grace time.Duration
	// graceOver is closed when the run's grace after a stop is over (nil if it has
	// none): the line in the pipe goes back then, as a last try.
	graceOver <-chan struct{}
	// stop is the run's early stop (nil if it has none): what waits behind the line in
	// the pipe goes back when it closes (see giveBackAtStop), and nothing more is
	// queued after it.
	stop <-chan struct{}

	start sync.Once
	// wroteAll is closed when the writer ends: every line was written and taken, or
	// the reader went away, or the run gave up on the pipe.
	wroteAll chan struct{}
	gone     chan struct{} // closed once the reader went away: the run ends
	goneOnce sync.Once

	mu    sync.Mutex
	queue []pipeLine // rendered, not yet in the pipe
	bytes int        // the bytes in queue
	cur   *pipeWrite // what is in the pipe (or being written), not yet taken
	// curWritten: cur's write returned whole, so an empty pipe means the reader took
	// it. Before that, an empty pipe only means it is not in there yet.
	curWritten bool
	// unconfirmed is the page the reader took last, not yet known to be used: acked
	// once the reader takes the write after it, given back if it goes away first.
	unconfirmed []Delivery
	// lines is how many lines the reader took, for when pages may start.
	lines int
	buf   []byte     // the writer's page
	left  []Delivery // what a reader that went away never took: given back by finish
	err   error      // the write that failed, for the loop to report
	// closing: the loop hands over nothing more (Finish); the writer ends once it has
	// written and seen taken what it has. ended: the pipe is given up (reader gone,
	// a write failed, or the run gave back what waited): nothing is written any more.
	closing, ended bool
	wake           chan struct{} // cap 1: a line was queued, or the run changed state
	changed        chan struct{} // closed and replaced when the held lines shrink, if watched
	watched        bool          // someone waits on changed (slots, drain)
	// taken are lines the reader took whose acks wait to go out together: one ack
	// request and one acker wake-up per line made a pipe drain several times slower.
	// They go to the ackers at a full batch, whenever the writer would wait (nothing
	// queued, or a reader slower than a tick) and whenever the run settles the pipe.
	taken []Delivery
}

func newPipeState(probe pipeProbe, w io.Writer, ack func([]Delivery)) *pipeState {
	probe.shrink()
	return &pipeState{
		probe: probe, w: w, ack: ack, grace: pipeGrace,
		wroteAll: make(chan struct{}), gone: make(chan struct{}),
		wake: make(chan struct{}, 1), changed: make(chan struct{}),
	}
}

// run starts the writer and the watcher, once.
func (ps *pipeState) run() {
	ps.start.Do(func() {
		go ps.writer()
		go ps.watcher()
		if ps.stop != nil {
			go ps.giveBackAtStop()
		}
	})
}

// giveBackAtStop gives back what waits behind the line in the pipe as soon as the run's
// early stop comes. The loop calls Finish only after the consumes still on their way
// have come back, a long poll's wait later (up to a second), which could outlast a
// short --shutdown-grace and leave the give-back a last try.
func (ps *pipeState) giveBackAtStop() {
	select {
	case <-ps.stop:
		ps.giveBackQueued()
	case <-ps.wroteAll:
	}
}

// push queues lines for the writer. False means the pipe was given up: nothing was
// queued, and the caller gives them back.
func (ps *pipeState) push(ls []pipeLine) bool {
	ps.mu.Lock()
	if ps.ended || ps.closing || chans.Closed(ps.stop) {
		ps.mu.Unlock()
		return false
	}
	for _, l := range ls {
		ps.bytes += len(l.b)
	}
	ps.queue = append(ps.queue, ls...)
	ps.mu.Unlock()
	ps.poke()
	return true
}

// poke wakes the writer.
func (ps *pipeState) poke() {
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

// signal wakes whoever waits for the held lines to shrink. Called with mu held.
func (ps *pipeState) signal() {
	if !ps.watched {
		return
	}
	ps.watched = false
	close(ps.changed)
	ps.changed = make(chan struct{})
}

// tookLocked records that the reader used ds; it returns a full batch of acks to send.
// Called with mu held.
func (ps *pipeState) tookLocked(ds ...Delivery) []Delivery {
	ps.taken = append(ps.taken, ds...)
	if len(ps.taken) >= MaxBatch {
		return ps.takenLocked()
	}
	return nil
}

// tookWriteLocked records that the reader took w: the page before it was used, and so
// is w if it is one line; a page waits for the next write to be taken. It returns a
// full batch of acks to send. Called with mu held.
func (ps *pipeState) tookWriteLocked(w *pipeWrite) []Delivery {
	used := ps.unconfirmed
	ps.unconfirmed = nil
	ps.lines += len(w.lines)
	if w.page() {
		ps.unconfirmed = linesOf(w.lines)
	} else {
		used = append(used, w.lines[0].d)
	}
	return ps.tookLocked(used...)
}

// leftLocked settles cur and the unconfirmed page when the writer stops for good (the
// reader went away, or the run gave up the pipe): what the reader certainly used is
// returned for acks, the rest goes to back. Called with mu held.
func (ps *pipeState) leftLocked(back []Delivery) (acks, _ []Delivery) {
	acks = ps.takenLocked()
	if w := ps.cur; w != nil {
		unread, err := ps.probe.unread()
		// The reader took some of w, so it was done with the page before it; w itself
		// was used only if it is one line, taken whole.
		cameBack := ps.curWritten && err == nil && unread < len(w.b)
		if cameBack {
			acks = append(acks, ps.unconfirmed...)
			ps.unconfirmed = nil
		}
		if cameBack && unread == 0 && !w.page() {
			acks = append(acks, w.lines[0].d)
		} else {
			back = append(back, linesOf(w.lines)...)
		}
		ps.cur = nil
	}
	back = append(back, ps.unconfirmed...)
	ps.unconfirmed = nil
	return acks, back
}

// takenLocked hands over the acks waiting to go out. Called with mu held.
func (ps *pipeState) takenLocked() []Delivery {
	ds := ps.taken
	ps.taken = nil
	return ds
}

// flush sends the acks waiting to go out.
func (ps *pipeState) flush() {
	ps.mu.Lock()
	ds := ps.takenLocked()
	ps.mu.Unlock()
	ps.ack(ds)
}

// writer puts a line (or a page of them) at a time into the pipe and acks each once
// the reader took it (a page: once the reader took the write after it).
func (ps *pipeState) writer() {
	defer close(ps.wroteAll)
	defer ps.flush()
	for {
		w, ok := ps.next()
		if !ok {
			return
		}
		if len(w.b) == 0 {
			// An empty record (a --jq that printed nothing) is written as soon as its
			// turn comes: there is nothing for the reader to take.
			ps.mu.Lock()
			var full []Delivery
			if ps.cur == w {
				ps.cur = nil
				ps.signal()
				full = ps.tookLocked(w.lines[0].d)
			}
			ps.mu.Unlock()
			ps.ack(full)
			continue
		}
		if len(w.b) > pipeBlock {
			// A line longer than the pipe holds may wait in write for a slow reader.
			ps.flush()
		}
		n, err := ps.w.Write(w.b)
		if err == nil && n < len(w.b) {
			err = io.ErrShortWrite
		}
		if err != nil {
			ps.writeFailed(w, err)
			return
		}
		ps.mu.Lock()
		if ps.cur == w {
			ps.curWritten = true
		}
		ps.mu.Unlock()
		if !ps.waitTaken(w) {
			return
		}
	}
}

// pageLocked is how many lines at the head of the queue go into the pipe in one write:
// one until the reader took pipeOneByOne, then as many as fit a page, a share of what
// it took, and leave one line behind to confirm them. Called with mu held.
func (ps *pipeState) pageLocked() int {
	if ps.lines < pipeOneByOne || len(ps.queue) < 3 {
		return 1
	}
	most := min(len(ps.queue)-1, ps.lines/pipeBlockShare)
	n, bytes := 0, 0
	for n < most {
		b := len(ps.queue[n].b)
		if b == 0 || bytes+b > pipeBlock {
			break
		}
		bytes += b
		n++
	}
	return max(n, 1)
}

// next takes the next line, or page of lines, off the queue and makes it what is in the
// pipe, waiting while there is none; false once the writer has nothing more to do.
func (ps *pipeState) next() (*pipeWrite, bool) {
	for {
		ps.mu.Lock()
		switch {
		case ps.ended:
			ps.mu.Unlock()
			return nil, false
		case len(ps.queue) > 0:
			n := ps.pageLocked()
			w := &pipeWrite{}
			if n == 1 {
				w.lines = w.one[:]
			} else {
				w.lines = make([]pipeLine, n)
			}
			copy(w.lines, ps.queue[:n])
			clear(ps.queue[:n])
			ps.queue = ps.queue[n:]
			if n == 1 {
				w.b = w.lines[0].b
			} else {
				ps.buf = ps.buf[:0]
				for _, l := range w.lines {
					ps.buf = append(ps.buf, l.b...)
				}
				w.b = ps.buf
			}
			ps.bytes -= len(w.b)
			ps.cur, ps.curWritten = w, false
			ps.mu.Unlock()
			return w, true
		case ps.closing:
			ps.ended = true
			// A page is written only with a line behind it, so none is left
			// unconfirmed here; should one be, it goes back rather than be acked unused.
			ps.left = append(ps.left, ps.unconfirmed...)
			ps.unconfirmed = nil
			ps.mu.Unlock()
			return nil, false
		}
		acks := ps.takenLocked()
		ps.mu.Unlock()
		ps.ack(acks)
		<-ps.wake
	}
}

// waitTaken waits until the reader took w, then acks what that shows it used; false
// when the writer ends instead (the reader went away, or the run gave w back).
func (ps *pipeState) waitTaken(w *pipeWrite) bool {
	for {
		taken, gone, err := ps.probe.waitTaken(pipeTick)
		ps.mu.Lock()
		if ps.cur != w {
			// The run gave it back meanwhile (finish): it is not ours to settle.
			ps.mu.Unlock()
			return false
		}
		switch {
		case taken:
			ps.cur = nil
			ps.signal()
			full := ps.tookWriteLocked(w)
			ps.mu.Unlock()
			ps.ack(full)
			return true
		case gone || err != nil:
			// Gone, or the pipe cannot be looked into any more, which is given up the
			// same way: what the reader may not have taken goes back.
			ps.mu.Unlock()
			ps.readerGone()
			return false
		}
		// A reader slower than a tick: what it took meanwhile is acked now, not after it.
		acks := ps.takenLocked()
		ps.mu.Unlock()
		ps.ack(acks)
	}
}

// writeFailed gives up the pipe after a failed write of w (EPIPE: the reader went
// away; anything else is reported by the loop).
func (ps *pipeState) writeFailed(w *pipeWrite, err error) {
	ps.mu.Lock()
	if ps.cur == w {
		// A write cut short was never whole in the pipe: the reader cannot be known to
		// have used it, nor, for want of a write after it, the page before it.
		ps.cur = nil
		ps.left = append(ps.left, linesOf(w.lines)...)
		ps.left = append(ps.left, ps.unconfirmed...)
		ps.unconfirmed = nil
	}
	if !IsClosedOutput(err) {
		ps.err = err
	}
	ps.mu.Unlock()
	ps.readerGone()
}

// readerGone settles what the reader left when it went away: the line in the pipe is
// acked if the reader took it, the rest is given back once the loop has stopped
// taking (finish): given back now, it could be handed to a consume of this very run
// on its way, and stay leased to nobody if that consume were cut.
func (ps *pipeState) readerGone() {
	ps.mu.Lock()
	var acks []Delivery
	acks, ps.left = ps.leftLocked(ps.left)
	ps.left = append(ps.left, linesOf(ps.queue)...)
	ps.queue, ps.bytes = nil, 0
	ps.ended = true
	ps.signal()
	ps.mu.Unlock()
	ps.poke()
	ps.goneOnce.Do(func() { close(ps.gone) })
	ps.ack(acks)
}

// watcher notices a reader that goes away while the writer has nothing in the pipe
// (the writer notices it itself while it waits for a line to be taken).
func (ps *pipeState) watcher() {
	for {
		select {
		case <-ps.wroteAll:
			return
		default:
		}
		gone, err := ps.probe.readerGone(pipeIdle)
		if gone {
			ps.mu.Lock()
			idle := ps.cur == nil
			ps.mu.Unlock()
			if idle {
				ps.readerGone()
				return
			}
			// The writer holds a line in the pipe: it sees the same and settles it.
			time.Sleep(pipeTick)
		}
		if err != nil {
			time.Sleep(pipeIdle)
		}
	}
}

// held is how many lines and bytes wait for the reader; gone reports the pipe given up.
// With watch the caller is about to wait on changed, which is then closed when they
// shrink.
func (ps *pipeState) held(watch bool) (n, bytes int, gone bool, changed <-chan struct{}) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.watched = ps.watched || watch
	n = len(ps.queue) + len(ps.unconfirmed)
	if ps.cur != nil {
		n += len(ps.cur.lines)
	}
	return n, ps.bytes, ps.ended && !ps.closing, ps.changed
}

// slots is Slots for a pipe: it waits while pipeHoldMax lines (or pipeHoldBytes)
// wait for the reader.
func (ps *pipeState) slots(ctx context.Context) (int, error) {
	ps.run()
	for {
		n, bytes, gone, changed := ps.held(true)
		if gone {
			// Run sees gone and ends the run; let its context say so.
			<-ctx.Done()
			return 0, ctx.Err()
		}
		if n < pipeHoldMax && bytes < pipeHoldBytes {
			return min(MaxBatch, pipeHoldMax-n), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// ahead is Ahead for a pipe: what pipeHoldMax leaves beside the lines waiting.
func (ps *pipeState) ahead() int {
	n, bytes, gone, _ := ps.held(false)
	if gone || bytes >= pipeHoldBytes {
		return 0
	}
	return pipeHoldMax - n
}

// writeErr is the write that failed, if one did (EPIPE is not one: the reader left).
func (ps *pipeState) writeErr() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.err
}

// finish lets the writer write and see taken every line, or the reader go away. At a
// soft stop (stopping) the lines not yet in the pipe are given back at once and the one
// in the pipe may still be taken until the grace is over; at the hard stop (ctx) it
// goes back too. What a reader that went away left is given back last, now that the
// loop takes nothing.
//
// The grace is the run's own (graceOver: --shutdown-grace from the signal or the
// timeout), shared with every settlement still retried: a node answering the give-back
// 503 holds the stop up to that grace, not to it and then to the pipe's grace again.
// The pipe's own timer, a second longer, bounds a stop the run gives no grace (a fatal
// error), and never ends first where it does: the line's give-back must follow the
// abandon to get its last try, not be cut by it.
func (ps *pipeState) finish(ctx context.Context, stopping <-chan struct{}) {
	ps.run()
	ps.mu.Lock()
	ps.closing = true
	ps.mu.Unlock()
	ps.poke()
	var own <-chan time.Time
	for done := false; !done; {
		select {
		case <-ps.wroteAll:
			done = true
		case <-stopping:
			stopping = nil
			own = time.After(ps.grace + pipeGraceBehind)
			ps.giveBackQueued()
		case <-own:
			ps.giveBackAll()
			done = true
		case <-ps.graceOver:
			ps.giveBackAll()
			done = true
		case <-ctx.Done():
			ps.giveBackAll()
			done = true
		}
	}
	ps.mu.Lock()
	left := ps.left
	ps.left = nil
	ps.mu.Unlock()
	_ = NackAll(left, GiveBack)
	ps.probe.restore()
}

// giveBackQueued gives back the lines not yet in the pipe, but for the one that will
// confirm a page the reader has (or may yet) take.
func (ps *pipeState) giveBackQueued() {
	ps.mu.Lock()
	keep := 0
	if len(ps.queue) > 0 && (ps.cur != nil && ps.cur.page() || ps.cur == nil && len(ps.unconfirmed) > 0) {
		keep = 1
	}
	back := linesOf(ps.queue[keep:])
	ps.queue = ps.queue[:keep]
	ps.bytes = 0
	for _, l := range ps.queue {
		ps.bytes += len(l.b)
	}
	ps.signal()
	ps.mu.Unlock()
	ps.poke()
	_ = NackAll(back, GiveBack)
}

// giveBackAll gives up the pipe: the line in it is acked if the reader took it after
// all, else given back with everything queued. A write still blocked on it may yet
// complete: that line can then be printed and delivered again (at least once).
func (ps *pipeState) giveBackAll() {
	ps.mu.Lock()
	acks, back := ps.leftLocked(linesOf(ps.queue))
	ps.queue, ps.bytes = nil, 0
	ps.ended = true
	ps.signal()
	ps.mu.Unlock()
	ps.poke()
	ps.ack(acks)
	_ = NackAll(back, GiveBack)
}

// handle renders ds into lines and queues them for the writer. Rendering stops at a
// message that cannot be shown: it and the rest go back for a consumer that can.
func (ps *pipeState) handle(ctx context.Context, p *Printer, ds []Delivery) error {
	ps.run()
	buf := make([]byte, 0, 128*len(ds))
	ends := make([]int, 0, len(ds))
	var renderErr error
	for _, d := range ds {
		b, err := p.render(ctx, buf, d.Message())
		if err != nil {
			renderErr = err
			break
		}
		buf = b
		ends = append(ends, len(buf))
	}
	ls := make([]pipeLine, len(ends))
	start := 0
	for i, end := range ends {
		ls[i] = pipeLine{d: ds[i], b: buf[start:end:end]}
		start = end
	}
	_ = NackAll(ds[len(ends):], GiveBack)
	queued := ps.push(ls)
	if !queued {
		_ = NackAll(linesOf(ls), GiveBack)
	}
	if err := ps.writeErr(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if !queued && (chans.Closed(ps.gone) || !chans.Closed(ps.stop)) {
		return fmt.Errorf("%w: the reader went away", ErrOutputClosed)
	}
	// A stop that came while these were rendered may have cut the rendering: said as
	// at any other stop, whether the lines before it were queued or refused.
	if renderErr != nil && p.cut(renderErr, ds[len(ends)].Message()) {
		return fmt.Errorf("%w: %w", ErrStopped, renderErr)
	}
	if !queued {
		return fmt.Errorf("%w: rendered after the stop", ErrStopped)
	}
	if renderErr != nil {
		// The run ends on it: the lines before it still go out first, as they would
		// have to a file, unless the run is stopped meanwhile.
		ps.drain(ctx, p.stop)
	}
	return renderErr
}

// drain waits until no line waits for the reader, the pipe is given up, or a stop.
func (ps *pipeState) drain(ctx context.Context, stop <-chan struct{}) {
	for {
		n, _, gone, changed := ps.held(true)
		if n == 0 || gone {
			return
		}
		select {
		case <-changed:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// WatchReader notices the reader of a pipe going away while nothing is written to it
// (`narad replay --follow | head -n 1` waiting at the tail): gone is closed then. It
// is nil where w is not a pipe narad can see into; stop ends the watch.
func WatchReader(w io.Writer) (gone <-chan struct{}, stop func()) {
	probe := pipeOf(w)
	if probe == nil {
		return nil, func() {}
	}
	ch, done := make(chan struct{}), make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			g, err := probe.readerGone(pipeIdle)
			if g {
				close(ch)
				return
			}
			if err != nil {
				time.Sleep(pipeIdle)
			}
		}
	}()
	var once sync.Once
	return ch, func() { once.Do(func() { close(done) }) }
}

func linesOf(ls []pipeLine) []Delivery {
	ds := make([]Delivery, len(ls))
	for i, l := range ls {
		ds[i] = l.d
	}
	return ds
}
