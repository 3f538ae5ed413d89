package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/narad/narad/internal/client"
)

// LineRenderer appends one output record for m (terminator included) to dst.
type LineRenderer interface {
	Append(dst []byte, m *client.Message) ([]byte, error)
}

// printAcksInFlight bounds the ack requests on their way at once, and
// printAcksQueued the written lines waiting for one, so that a slow broker slows
// printing down instead of letting leases pile up.
const (
	printAcksInFlight = 4
	printAcksQueued   = printAcksInFlight * MaxBatch
)

// aheadUnbounded is what a Printer to a file or a terminal can take at once: its
// writes do not wait for a reader, so only the acks still to send hold leases.
const aheadUnbounded = 2 * printAcksQueued

// Printer is the Handler of plain `narad sub`: it writes each batch and acks exactly
// what was written.
//
// A batch is rendered into one buffer and written with one Write, so the records that
// made it out are known from the count Write returns: those are acked, the rest are
// given back at once. The ack of one batch runs while the next one is consumed; it
// starts only after its records were written, and Finish waits for it.
//
// When the output is a pipe whose unread bytes the system can count (Linux), "written"
// means taken out of the pipe by the reader: see pipe.go.
type Printer struct {
	w    io.Writer
	r    LineRenderer
	buf  []byte
	ends []int

	// Written lines wait in ackQueue for an acker: at most printAcksInFlight run at
	// once, each sending everything queued when it looks, so acks of small batches
	// share requests while others are on their way (but see oneByOne).
	ackMu    sync.Mutex
	ackRoom  *sync.Cond // signalled when the queue shrinks
	ackWork  *sync.Cond // signalled when the queue grows or the run ends
	ackQueue []Delivery
	ackers   int // running, each kept until Finish
	idle     int // ackers waiting for work
	ackDone  bool
	// oneByOne: the node answers one message per consume (older than v3.1), so it
	// settles one handle per request too. Each acker then takes one line at a time
	// and sends its ack itself, up to legacyParallel at once, as that many loops of
	// consume and ack would: an acker taking the whole queue had the client send all
	// but the first ack from a goroutine started for each.
	oneByOne bool
	wg       sync.WaitGroup

	// stop, when set, abandons a write that is blocked (a reader that stopped
	// reading) so a signal still gives the batch back instead of hanging on it.
	stop <-chan struct{}

	pipe *pipeState // nil unless w is a pipe narad can see into
	// inline writes on the loop's goroutine even with a stop to obey: w is a file or
	// /dev/null, which no reader can hold up.
	inline bool
}

// abandonGrace is how long a blocked write may still finish after a stop.
const abandonGrace = 200 * time.Millisecond

// StopOn makes a write still blocked when ch closes (Run passes its early stop: a
// signal or the timeout) give up: the batch is given back whole and the run ends. The
// abandoned write may still complete later, so those lines can be printed and
// delivered again: at least once, never lost.
func (p *Printer) StopOn(ch <-chan struct{}) { p.stop = ch }

// NewPrinter writes to w what r renders.
func NewPrinter(w io.Writer, r LineRenderer) *Printer {
	p := &Printer{w: w, r: r, inline: neverBlocks(w)}
	p.ackRoom = sync.NewCond(&p.ackMu)
	p.ackWork = sync.NewCond(&p.ackMu)
	if probe := pipeOf(w); probe != nil {
		p.pipe = newPipeState(probe, w, p.ackLater)
	}
	return p
}

// ShutdownGrace is how long, after a soft stop, the line already in a pipe waits for
// the reader before it is given back (30s unless told).
func (p *Printer) ShutdownGrace(d time.Duration) {
	if p.pipe != nil && d > 0 {
		p.pipe.grace = d
	}
}

// AcksWhenRead reports whether a line is acked only once the reader took it out of the
// pipe (a pipe on Linux), rather than once it was written.
func (p *Printer) AcksWhenRead() bool { return p.pipe != nil }

// OutputGone is closed when the reader of the pipe goes away, even while the loop
// waits for messages (Run ends the run then); nil when the output is not a pipe.
func (p *Printer) OutputGone() <-chan struct{} {
	if p.pipe == nil {
		return nil
	}
	return p.pipe.gone
}

// Slots is a full batch, at once for a file or a terminal. For a pipe it waits while a
// full batch still waits unread, so a slow reader bounds what is held.
func (p *Printer) Slots(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if p.pipe != nil {
		return p.pipe.slots(ctx)
	}
	return MaxBatch, nil
}

// Handle prints ds and settles every one of them: acked if written whole (for a pipe:
// once the reader takes it), else given back. A write error ends the run: a closed
// pipe as ErrOutputClosed, else as itself.
func (p *Printer) Handle(ctx context.Context, ds []Delivery) error {
	if p.pipe != nil {
		return p.pipe.handle(ctx, p.r, ds, p.stop)
	}
	buf, ends := p.buf[:0], p.ends[:0]
	var renderErr error
	for _, d := range ds {
		m := d.Message()
		b, err := p.r.Append(buf, m)
		if err != nil {
			// Stop at the message that cannot be shown: the ones before it still go
			// out, and it and the rest go back for a consumer that can.
			renderErr = err // it names the message already
			break
		}
		buf = b
		ends = append(ends, len(buf))
	}
	var werr error
	written := 0
	if len(buf) == 0 {
		// Nothing to write (a --jq that printed nothing for these messages): each
		// record, empty, is written, and so is acked.
		written = len(ends)
	} else {
		n, abandoned, err := p.write(ctx, buf)
		if abandoned {
			p.buf, p.ends = nil, nil // the stuck write still owns buf
			_ = NackAll(ds, GiveBack)
			return fmt.Errorf("%w: a write was still blocked", ErrStopped)
		}
		if err == nil && n < len(buf) {
			err = io.ErrShortWrite
		}
		werr = err
		for written < len(ends) && ends[written] <= n {
			written++
		}
	}
	p.buf, p.ends = buf, ends
	if rest := ds[written:]; len(rest) > 0 {
		_ = NackAll(rest, GiveBack)
	}
	p.ackLater(ds[:written])
	switch {
	case werr != nil && IsClosedOutput(werr):
		return fmt.Errorf("%w: %w", ErrOutputClosed, werr)
	case werr != nil:
		return fmt.Errorf("write output: %w", werr)
	}
	return renderErr
}

// ackLater acks ds in the background, at most printAcksInFlight requests at once; it
// blocks while printAcksQueued lines already wait for an ack. Finish waits for them.
func (p *Printer) ackLater(ds []Delivery) {
	if len(ds) == 0 {
		return
	}
	p.ackMu.Lock()
	for len(p.ackQueue) >= printAcksQueued {
		p.ackRoom.Wait()
	}
	p.ackQueue = append(p.ackQueue, ds...)
	// An acker sends everything queued, or one line when oneByOne: then every line
	// wants an acker of its own.
	want := 1
	if p.oneByOne {
		want = len(ds)
	}
	if p.idle > 0 {
		if want > 1 {
			p.ackWork.Broadcast()
		} else {
			p.ackWork.Signal()
		}
		want -= p.idle
	}
	for ; want > 0 && p.ackers < p.ackersMax(); want-- {
		// Ackers are kept until Finish: one a burst cost its start and the growth of
		// its stack every time, which one message per consume made every message.
		p.ackers++
		p.wg.Add(1)
		go p.acker()
	}
	p.ackMu.Unlock()
}

// acker acks what waits in the queue until Finish.
func (p *Printer) acker() {
	defer p.wg.Done()
	p.ackMu.Lock()
	defer p.ackMu.Unlock()
	for {
		for len(p.ackQueue) == 0 {
			if p.ackDone {
				p.ackers--
				return
			}
			p.idle++
			p.ackWork.Wait()
			p.idle--
		}
		ds := p.ackQueue
		if p.oneByOne {
			ds = ds[:1:1]
			p.ackQueue = p.ackQueue[1:]
		} else {
			p.ackQueue = nil
		}
		p.ackRoom.Broadcast()
		p.ackMu.Unlock()
		// Its outcome is in the counters; an ack that fails does not stop printing.
		_ = AckAll(ds)
		p.ackMu.Lock()
	}
}

// OneByOne tells the Printer that the node answers one message per consume (see
// oneByOne); the run does when it learns it.
func (p *Printer) OneByOne() {
	p.ackMu.Lock()
	p.oneByOne = true
	p.ackMu.Unlock()
}

// ackersMax is how many acks may be on their way at once.
func (p *Printer) ackersMax() int {
	if p.oneByOne {
		return legacyParallel
	}
	return printAcksInFlight
}

// stopAckers lets the ackers end once the queue is empty.
func (p *Printer) stopAckers() {
	p.ackMu.Lock()
	p.ackDone = true
	p.ackWork.Broadcast()
	p.ackMu.Unlock()
}

// Ahead is how many more messages the Printer can take without waiting: for a pipe,
// what its bound on lines waiting for the reader leaves (none once the reader went
// away); otherwise a few batches, which only wait for their acks.
//
// What is taken ahead may wait in hand behind a write that blocks (a full pipe and a
// reader slower than the lease, a paused terminal): the run must keep its leases
// (Options.Lease), as the long pipes soak showed when it did not.
func (p *Printer) Ahead() int {
	if p.pipe != nil {
		return p.pipe.ahead()
	}
	return aheadUnbounded
}

// write writes buf, on the caller's goroutine unless a stop can interrupt it.
func (p *Printer) write(ctx context.Context, buf []byte) (n int, abandoned bool, err error) {
	if p.stop == nil || p.inline {
		n, err = p.w.Write(buf)
		return n, false, err
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := p.w.Write(buf)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, false, r.err
	case <-p.stop:
	case <-ctx.Done():
	}
	select {
	case r := <-done:
		return r.n, false, r.err
	case <-time.After(abandonGrace):
		return 0, true, nil
	}
}

// Finish waits for the acks still on their way. For a pipe it first waits for the
// reader to take what waits for it (see pipeState.finish).
func (p *Printer) Finish(ctx context.Context, stopping <-chan struct{}) error {
	if p.pipe != nil {
		p.pipe.finish(ctx, stopping)
	}
	// An ack asked for after this (the pipe watcher's last look, which Wait waits
	// for) still gets an acker: one is started when none is left.
	p.stopAckers()
	p.wg.Wait()
	return nil
}

// IsClosedOutput reports a write to a reader that went away (`| head`, a closed
// file): the end of the output, not a failure. The CLI asks the same question.
func IsClosedOutput(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
