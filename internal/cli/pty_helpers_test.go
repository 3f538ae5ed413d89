//go:build linux

package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// lockedBytes is what the terminal showed, safe to read while it is written.
type lockedBytes struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBytes) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBytes) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// buildNarad builds the real binary for a terminal test.
func buildNarad(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "narad")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/narad/narad/cmd/narad").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ptyRun is a command running in a pseudo-terminal: what it showed, and its end.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	tty    *os.File
	before *unix.Termios // the terminal's modes before the command ran
	screen lockedBytes
	read   chan struct{} // closed once the terminal has nothing more to show
	exited chan error
}

// startInPTY starts cmd in a pseudo-terminal of size (nil: the default) and records
// what it shows.
func startInPTY(t *testing.T, cmd *exec.Cmd, size *pty.Winsize) *ptyRun {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{t: t, cmd: cmd, tty: tty, before: before, read: make(chan struct{}), exited: make(chan error, 1)}
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			_, _ = r.screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() { r.exited <- cmd.Wait() }()
	return r
}

// waitFor waits until the screen so far satisfies ok; the bound only turns a hang into
// a failure.
func (r *ptyRun) waitFor(what string, ok func(string) bool) {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(r.screen.String()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = r.cmd.Process.Kill()
			r.t.Fatalf("no %s; the terminal showed %q", what, r.screen.String())
		}
	}
}

// contains is a waitFor condition: the screen shows s.
func contains(s string) func(string) bool {
	return func(v string) bool { return strings.Contains(v, s) }
}

// typeKeys types b at the terminal.
func (r *ptyRun) typeKeys(b []byte) {
	r.t.Helper()
	if _, err := r.tty.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// end waits for the command to exit after what (the keys that should end it) and for
// the terminal to show everything, and returns how it exited.
func (r *ptyRun) end(what string) error {
	r.t.Helper()
	var werr error
	select {
	case werr = <-r.exited:
	case <-time.After(20 * time.Second): // bounds a hang only
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.t.Fatalf("%s did not end it; the terminal showed %q", what, r.screen.String())
	}
	select {
	case <-r.read:
	case <-time.After(5 * time.Second):
	}
	return werr
}

// modesKept checks the command left the terminal's modes as it found them.
func (r *ptyRun) modesKept() {
	r.t.Helper()
	after, err := unix.IoctlGetTermios(int(r.tty.Fd()), unix.TCGETS)
	if err != nil {
		r.t.Fatal(err)
	}
	if after.Lflag != r.before.Lflag || after.Iflag != r.before.Iflag || after.Oflag != r.before.Oflag {
		r.t.Errorf("terminal modes changed: before %+v, after %+v", r.before, after)
	}
}
