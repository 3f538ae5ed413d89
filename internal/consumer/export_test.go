package consumer

import "time"

// SetPipeGraceClock makes p's pipe start the grace of the line in it with after, so
// that a test says when it ends. p must write to a pipe.
func SetPipeGraceClock(p *Printer, after func(time.Duration) <-chan time.Time) {
	p.pipe.after = after
}
