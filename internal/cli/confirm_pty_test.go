//go:build linux

package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
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

// TestConfirmationCtrlCInATerminal: the real binary at a confirmation prompt in a
// pseudo-terminal; Ctrl-C typed there (the terminal turns it into SIGINT) ends it at
// once with exit 130, sends nothing, and leaves the terminal as it found it.
func TestConfirmationCtrlCInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "narad")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/narad/narad/cmd/narad").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request after an interrupted prompt: %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(node.Close)

	cmd := exec.Command(bin, "topic", "delete", "orders", "-s", node.URL)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1"}
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	var screen lockedBytes
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			_, _ = screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(screen.String(), "Type its name to confirm:"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no prompt; the terminal showed %q", screen.String())
		}
	}
	if _, err := tty.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(20 * time.Second): // bounds a hang only
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("Ctrl-C did not end the prompt; the terminal showed %q", screen.String())
	}
	select {
	case <-read:
	case <-time.After(5 * time.Second):
	}
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	if code != 130 || !strings.Contains(screen.String(), "narad: did not delete topic orders (interrupted)") {
		t.Errorf("exit %d; the terminal showed %q", code, screen.String())
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal modes changed: before %+v, after %+v", before, after)
	}
}
