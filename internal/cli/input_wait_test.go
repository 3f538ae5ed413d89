//go:build unix

package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// inputWaitFactory is a Factory whose first signal has already come, with its own
// config file and a node that is never asked (nothing may be sent after a signal).
func inputWaitFactory(t *testing.T, stdin io.Reader) (*Factory, *bytes.Buffer) {
	ios, _, _, errOut := iostreams.Test()
	ios.In = stdin
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml"), "NARAD_ADDR": "http://127.0.0.1:1"}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	f.Signals.Trigger(syscall.SIGINT)
	return f, errOut
}

// A command that waits for a line or a document on a stdin that gives nothing yet
// (`sleep 60 | narad user add ci --password-stdin`) ends at Ctrl-C with 130, as
// --password-stdin does, instead of waiting on, deaf to it, and then failing on the
// empty input. The stdin is an io.Pipe inside a synctest bubble: a command still
// waiting on it blocks every goroutine of the bubble, which synctest reports as a
// deadlock, so the test fails at once instead of hanging.
func TestSignalEndsWaitForStdin(t *testing.T) {
	for _, args := range [][]string{
		{"user", "add", "ci", "--grant", "produce:ci", "--password-stdin"},
		{"user", "passwd", "ci", "--password-stdin"},
		{"topic", "edit", "orders", "--schema", "-"},
		{"-u", "admin", "--password-stdin", "topic", "ls"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr, pw := io.Pipe()
				f, stderr := inputWaitFactory(t, pr)
				code := Run(f, args)
				pw.Close() // ends the read left waiting, so the bubble can end
				if code != ExitInterrupted {
					t.Errorf("exit %d, want %d (stderr %q)", code, ExitInterrupted, stderr.String())
				}
			})
		})
	}
}

// Opening a FIFO no one writes to waits in the system, where no signal reaches:
// `narad produce orders --file fifo` (and topic edit --schema fifo) ends at Ctrl-C
// with 130 all the same. badHangBound turns a command that never ends into a failure.
func TestSignalEndsWaitForFIFO(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "orders", "--file", "FIFO"},
		{"produce", "orders", "--lines", "--file", "FIFO"},
		{"topic", "edit", "orders", "--schema", "FIFO"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			for i, a := range args {
				if a == "FIFO" {
					args[i] = fifo
				}
			}
			f, stderr := inputWaitFactory(t, strings.NewReader(""))
			done := make(chan int, 1)
			go func() { done <- Run(f, args) }()
			select {
			case code := <-done:
				if code != ExitInterrupted {
					t.Errorf("exit %d, want %d (stderr %q)", code, ExitInterrupted, stderr.String())
				}
			case <-time.After(badHangBound):
				t.Errorf("still waiting for the FIFO's writer %s after the signal", badHangBound)
			}
			// A writer that comes and goes ends the open still waiting.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		})
	}
}

// A command that reads its input from a stdin that is a terminal says so first, and
// how to end it, as produce does: ack - and topic edit --schema - waited there for
// what was typed without a word.
func TestReadingATerminalSaysSo(t *testing.T) {
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"ack", "orders", "-"}, "narad: reading handles, one a line, from stdin until end of input (Ctrl-D)\n"},
		{[]string{"nack", "orders", "-"}, "narad: reading handles, one a line, from stdin until end of input (Ctrl-D)\n"},
		{[]string{"topic", "edit", "orders", "--schema", "-"}, "narad: reading the schema from stdin until end of input (Ctrl-D)\n"},
		{[]string{"produce", "orders"}, "narad: reading one message from stdin until end of input (Ctrl-D)\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			ios.In = strings.NewReader("") // Ctrl-D at once: what it then says is not this test's
			ios.SetTTY(true, false, false)
			env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml"), "NARAD_ADDR": "http://127.0.0.1:1"}
			f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
			Run(f, c.args)
			if !strings.HasPrefix(errOut.String(), c.line) {
				t.Errorf("stderr %q, want it to start with %q", errOut.String(), c.line)
			}
		})
	}
}
