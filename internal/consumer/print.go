package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

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
}

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
func (p *Printer) Handle(_ context.Context, ds []Delivery) error {
	buf, ends := p.buf[:0], p.ends[:0]
	var renderErr error
	for _, d := range ds {
		m := d.Message()
		b, err := p.r.Append(buf, m)
		if err != nil {
			// Stop at the message that cannot be shown: the ones before it still go
			// out, and it and the rest go back for a consumer that can.
			renderErr = fmt.Errorf("render p%d @%d: %w", m.Partition, m.Offset, err)
			break
		}
		buf = b
		ends = append(ends, len(buf))
	}
	var werr error
	written := 0
	if len(buf) > 0 {
		n, err := p.w.Write(buf)
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

// Finish waits for the acks still on their way.
func (p *Printer) Finish(context.Context, <-chan struct{}) error {
	p.wg.Wait()
	return nil
}

func isClosedPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)
}
