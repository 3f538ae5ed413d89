//go:build linux && !narad_pipe_as_file

package consumer

import (
	"os"
	"testing"
	"time"
)

// A reader that keeps the writer waiting longer than pipeSpinUntil is not looked for
// at the next line: the writer sleeps in poll at once, so a slow reader costs no CPU.
// One that took the line by the time the writer asks is taken at once, looking or not.
func TestPipeLooksOnlyForAReaderKeepingUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	p, ok := pipeOf(w).(*linuxPipe)
	if !ok {
		t.Skip("not a pipe narad can see into here")
	}
	p.shrink()
	defer p.restore()
	if !p.oneBuffer {
		t.Skip("the pipe cannot be made one page here")
	}
	if p.slowReader {
		t.Fatal("a new pipe's reader counts as slow")
	}
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	// Nobody reads: the wait ends at its bound, well past pipeSpinUntil.
	if taken, gone, err := p.waitTaken(2 * pipeSpinUntil); taken || gone || err != nil {
		t.Fatalf("waitTaken = %v, %v, %v with nobody reading", taken, gone, err)
	}
	if !p.slowReader {
		t.Error("a reader that kept the writer waiting past the bound is still looked for")
	}
	buf := make([]byte, 64)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	if taken, _, err := p.waitTaken(time.Minute); !taken || err != nil {
		t.Fatalf("waitTaken = %v, %v once the reader took the line", taken, err)
	}
}
