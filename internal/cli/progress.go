package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressLine is a status line on a terminal's stderr, rewritten in place and
// cleared before any other line is written.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

// run redraws text every `every` once `after` has passed, until stop is called.
func (p *progressLine) run(after, every time.Duration, text func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(after)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				fmt.Fprintf(p.w, "\r\x1b[K%s", text())
				p.shown = true
				p.mu.Unlock()
				t.Reset(every)
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		p.println("")
	}
}

// println clears the progress line and writes line (if any) in its place.
func (p *progressLine) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
	io.WriteString(p.w, line)
}
