package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// watchTerminal is status --watch on a terminal: the screen redrawn in place (the
// alternate screen, as top and less use, so the shell's scrollback is left as it
// was), keys read raw from stdin. Goroutines: the refresh loop (refreshEvery: sends
// each sample), the key reader (sends each key press; it may stay blocked in a read
// at the end, which the process exit ends) and this one, which owns the view and
// alone writes to the terminal.
func watchTerminal(ctx context.Context, opts *StatusOptions, w *watcher, first watchSample) error {
	out := iostreams.Unwrap(opts.IO.Out) // the terminal itself: its size, raw writes
	width, height := terminalSize(out)
	color := opts.IO.ColorEnabled()
	v := newWatchView(opts.Server, opts.Interval, render.NewStyles(out, color), width, height)
	v.update(first)

	if in, ok := opts.IO.In.(*os.File); ok && opts.IO.IsStdinTTY() {
		if old, err := term.MakeRaw(int(in.Fd())); err == nil {
			defer func() { _ = term.Restore(int(in.Fd()), old) }()
		}
	}
	// The alternate screen, the cursor hidden; both given back however this ends.
	// A watch that ends by itself (--count, --timeout) leaves its last screen on
	// the terminal's own, as a snapshot to read once it is over; one ended by q or
	// Ctrl-C gives the terminal back as it was, as top and less do.
	if _, err := io.WriteString(out, "\x1b[?1049h\x1b[?25l"); err != nil {
		return nil
	}
	keep := false
	defer func() {
		end := "\x1b[?25h\x1b[?1049l"
		if keep {
			v.ended = true
			end += strings.Join(v.view(), "\r\n") + "\r\n" // raw mode until the deferred restore
		}
		_, _ = io.WriteString(out, end)
	}()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	keys := make(chan string, 8)
	if opts.IO.IsStdinTTY() {
		go readKeys(opts.IO.In, keys)
	}
	samples := make(chan watchSample)
	end := newWatchEnd(opts)
	more := !end.done() // the first refresh counts
	if more {
		go refreshEvery(ctx, opts, w, first.At, samples)
	}
	resized, unwire := resizeSignals()
	defer unwire()

	var drawn []byte
	draw := func() error {
		b := frame(v.view())
		if string(b) == string(drawn) {
			return nil // nothing changed: nothing written
		}
		drawn = b
		_, err := out.Write(b)
		return err
	}
	for {
		if err := draw(); err != nil {
			return nil // the terminal went away
		}
		if !more {
			keep = true
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-end.timeout:
			keep = true
			return end.timedOut(opts)
		case k := <-keys:
			if v.key(k) {
				return nil
			}
		case <-resized:
			v.resize(terminalSize(out))
		case s := <-samples:
			if err := refusedEnd(opts, w, s); err != nil {
				return err // said once the screen is given back
			}
			v.resize(terminalSize(out)) // where no resize signal comes (Windows)
			v.update(s)
			if end.done() {
				more = false
			}
		}
	}
}

// refreshEvery refreshes every interval after the refresh made at last, and sends
// each sample, until ctx is done.
func refreshEvery(ctx context.Context, opts *StatusOptions, w *watcher, last time.Time, samples chan<- watchSample) {
	for {
		wait := opts.Interval - opts.Now().Sub(last)
		select {
		case <-ctx.Done():
			return
		case <-opts.timer(max(wait, 0)):
		}
		s := w.refresh(ctx)
		last = s.At
		select {
		case samples <- s:
		case <-ctx.Done():
			return
		}
	}
}

// readKeys sends each key press read from in: an escape sequence (an arrow, PgDn)
// as one key, other bytes one by one. It stops at the end of in.
func readKeys(in io.Reader, keys chan<- string) {
	buf := make([]byte, 64)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if buf[0] == 0x1b {
				keys <- string(buf[:n])
			} else {
				for _, b := range buf[:n] {
					keys <- string(b)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// terminalSize is the size of the terminal out writes to, 80×24 when it cannot tell.
func terminalSize(out io.Writer) (width, height int) {
	if fd, ok := out.(interface{ Fd() uintptr }); ok {
		if w, h, err := term.GetSize(int(fd.Fd())); err == nil && w > 0 && h > 0 {
			return w, h
		}
	}
	return 80, 24
}
