package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/iostreams"
)

// LineRenderer appends one output record for m (terminator included) to dst.
type LineRenderer interface {
	Append(dst []byte, m *client.Message) ([]byte, error)
}

// ContextRenderer is a LineRenderer whose rendering of a message can go on until it is
// stopped (a --jq that does not end on it). The Printer renders through AppendContext,
// with a context that ends at the run's early stop (a signal, the timeout, the reader
// gone) or the hard stop; a message whose rendering a stop cut goes back unshown, and
// the run ends as that stop, not as a message that cannot be shown.
type ContextRenderer interface {
	LineRenderer
	AppendContext(ctx context.Context, dst []byte, m *client.Message) ([]byte, error)
}

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

	// acks acks what was written (for a pipe: what the reader took), at most
	// printAcksInFlight requests at once and printAcksQueued lines waiting; one line a
	// request, side by side, once the node turns out to be an older one.
	acks *Acker

	// stop, when set, abandons a write that is blocked (a reader that stopped
	// reading) so a signal still gives the batch back instead of hanging on it.
	stop <-chan struct{}

	// cr is r when it is a ContextRenderer (asked once, not once a message).
	cr ContextRenderer
	// renderCtx ends a ContextRenderer's rendering at the run's early stop (made at the
	// first Handle; endRender ends its watch); onCut hears of a message it cut.
	renderCtx context.Context
	endRender context.CancelFunc
	onCut     func(m *client.Message)

	pipe *pipeState // nil unless w is a pipe narad can see into
	// inline writes on the loop's goroutine even with a stop to obey: w is a file or
	// /dev/null, which no reader can hold up.
	inline bool
}

// abandonGrace is how long a blocked write may still finish after a stop.
const abandonGrace = 200 * time.Millisecond

// stopOn makes a write still blocked when ch closes (Run passes its early stop: a
// signal or the timeout) give up: the batch is given back whole and the run ends. The
// abandoned write may still complete later, so those lines can be printed and
// delivered again: at least once, never lost. For a pipe, the lines waiting behind the
// one in it go back when ch closes.
func (p *Printer) stopOn(ch <-chan struct{}) {
	p.stop = ch
	if p.pipe != nil {
		p.pipe.stop = ch
	}
}

// NewPrinter writes to w what r renders.
func NewPrinter(w io.Writer, r LineRenderer) *Printer {
	p := &Printer{w: w, r: r, inline: iostreams.NeverBlocks(w),
		acks: NewAcker(AckerOptions{InFlight: printAcksInFlight, Queued: printAcksQueued})}
	p.cr, _ = r.(ContextRenderer)
	if probe := pipeOf(w); probe != nil {
		p.pipe = newPipeState(probe, w, p.acks.Ack)
	}
	return p
}

// ShutdownGrace is how long, after a soft stop, the line already in a pipe waits for
// the reader before it is given back (30s unless told), where the run gives no grace
// of its own (Pipelining.GraceOver): that one ends it otherwise.
func (p *Printer) ShutdownGrace(d time.Duration) {
	if p.pipe != nil && d > 0 {
		p.pipe.grace = d
	}
}

// OnRenderCut is called with a message whose rendering the run's stop cut (a --jq
// that had not ended on it): it goes back unshown.
func (p *Printer) OnRenderCut(f func(m *client.Message)) { p.onCut = f }

// render appends m's record to buf; a ContextRenderer's rendering ends at the run's
// early stop or ctx's end (the hard stop).
func (p *Printer) render(ctx context.Context, buf []byte, m *client.Message) ([]byte, error) {
	cr := p.cr
	if cr == nil {
		return p.r.Append(buf, m)
	}
	if p.renderCtx == nil {
		p.renderCtx, p.endRender = chans.Context(ctx, p.stop)
	}
	return cr.AppendContext(p.renderCtx, buf, m)
}

// cut reports that err is a rendering of m that the stop ended, and says so: m and
// the rest of its batch go back, and the run ends as the stop, not on m.
func (p *Printer) cut(err error, m *client.Message) bool {
	if err == nil || p.renderCtx == nil || p.renderCtx.Err() == nil || !errors.Is(err, context.Canceled) {
		return false
	}
	if p.onCut != nil {
		p.onCut(m)
	}
	return true
}

// AcksWhenRead reports whether a line is acked only once the reader took it out of the
// pipe (a pipe on Linux), rather than once it was written.
func (p *Printer) AcksWhenRead() bool { return p.pipe != nil }

// Pipelining: the Printer takes ahead (ahead), obeys the early stop in a write that
// blocks, acks one line a request side by side for an older node, and runs on one P,
// to a pipe too: past its first lines a pipe's writer waits for the reader once a page,
// not once a line. For a pipe, its output goes away when the reader does, even while
// the loop waits for messages.
func (p *Printer) Pipelining() Pipelining {
	pl := Pipelining{Ahead: p.ahead, StopOn: p.stopOn, OnSingle: p.acks.OneByOne, OneP: true}
	if p.pipe != nil {
		pl.OutputGone = p.pipe.gone
		pl.GraceOver = func(over <-chan struct{}) { p.pipe.graceOver = over }
	}
	return pl
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
		return p.pipe.handle(ctx, p, ds)
	}
	buf, ends := p.buf[:0], p.ends[:0]
	var renderErr error
	for _, d := range ds {
		m := d.Message()
		b, err := p.render(ctx, buf, m)
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
	p.acks.Ack(ds[:written])
	switch {
	case werr != nil && IsClosedOutput(werr):
		return fmt.Errorf("%w: %w", ErrOutputClosed, werr)
	case werr != nil:
		return fmt.Errorf("write output: %w", werr)
	case renderErr != nil && p.cut(renderErr, ds[len(ends)].Message()):
		return fmt.Errorf("%w: %w", ErrStopped, renderErr)
	}
	return renderErr
}

// ahead is how many more messages the Printer can take without waiting: for a pipe,
// what its bound on lines waiting for the reader leaves (none once the reader went
// away); otherwise a few batches, which only wait for their acks.
//
// What is taken ahead may wait in hand behind a write that blocks (a full pipe and a
// reader slower than the lease, a paused terminal): the run must keep its leases
// (Options.Lease), as the long pipes soak showed when it did not.
func (p *Printer) ahead() int {
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
	// An ack asked for after this (the pipe watcher's last look) still gets an acker.
	p.acks.Close()
	if p.endRender != nil {
		p.endRender()
	}
	return nil
}

// IsClosedOutput reports a write to a reader that went away (`| head`, a closed
// file): the end of the output, not a failure. The CLI asks the same question.
func IsClosedOutput(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
