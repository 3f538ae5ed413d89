package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/narad/narad/internal/client"
)

// LineRenderer appends one output record for m (terminator included) to dst.
type LineRenderer interface {
	Append(dst []byte, m *client.Message) ([]byte, error)
}

// printAcksInFlight bounds the batches whose ack is still on its way, so a slow
// broker slows printing down instead of letting leases pile up.
const printAcksInFlight = 4

// Printer is the Handler of plain `narad sub`: it writes each batch and acks exactly
// what was written.
//
// A batch is rendered into one buffer and written with one Write, so the records that
// made it out are known from the count Write returns: those are acked, the rest are
// given back at once. The ack of one batch runs while the next one is consumed; it
// starts only after its records were written, and Finish waits for it.
type Printer struct {
	w    io.Writer
	r    LineRenderer
	buf  []byte
	ends []int

	acks chan struct{} // a token per batch whose ack is in flight
	wg   sync.WaitGroup

	// stop, when set, abandons a write that is blocked (a reader that stopped
	// reading) so a signal still gives the batch back instead of hanging on it.
	stop <-chan struct{}
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
	return &Printer{w: w, r: r, acks: make(chan struct{}, printAcksInFlight)}
}

// Slots is always a full batch: printing holds nothing between batches.
func (p *Printer) Slots(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return MaxBatch, nil
}

// Handle prints ds and settles every one of them: acked if written whole, else given
// back. A write error ends the run: a closed pipe as ErrOutputClosed, else as itself.
func (p *Printer) Handle(ctx context.Context, ds []Delivery) error {
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
	if len(buf) > 0 {
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
	if written > 0 {
		p.acks <- struct{}{}
		p.wg.Add(1)
		go func(ds []Delivery) {
			defer p.wg.Done()
			defer func() { <-p.acks }()
			// Its outcome is in the counters; an ack that fails does not stop printing.
			_ = AckAll(ds)
		}(ds[:written])
	}
	switch {
	case werr != nil && isClosedPipe(werr):
		return fmt.Errorf("%w: %w", ErrOutputClosed, werr)
	case werr != nil:
		return fmt.Errorf("write output: %w", werr)
	}
	return renderErr
}

// write writes buf, on the caller's goroutine unless a stop can interrupt it.
func (p *Printer) write(ctx context.Context, buf []byte) (n int, abandoned bool, err error) {
	if p.stop == nil {
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

// Finish waits for the acks still on their way.
func (p *Printer) Finish(context.Context, <-chan struct{}) error {
	p.wg.Wait()
	return nil
}

func isClosedPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)
}
