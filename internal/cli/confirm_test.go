package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// stuckStdin is a terminal nobody types on: a read says it began, then never returns
// (until the test ends), as a cooked terminal's read waits for Enter.
type stuckStdin struct {
	reading chan struct{}
	once    sync.Once
	end     chan struct{}
}

func newStuckStdin(t *testing.T) *stuckStdin {
	s := &stuckStdin{reading: make(chan struct{}), end: make(chan struct{})}
	t.Cleanup(func() { close(s.end) })
	return s
}

func (s *stuckStdin) Read([]byte) (int, error) {
	s.once.Do(func() { close(s.reading) })
	<-s.end
	return 0, nil
}

// TestConfirmationObeysTheFirstSignal: Ctrl-C (or SIGTERM) at a confirmation prompt
// ends the command at once, whatever the terminal has not delivered: exit 130 (143),
// one line saying what was not done, and not a request sent.
func TestConfirmationObeysTheFirstSignal(t *testing.T) {
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request after an interrupted prompt: %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(node.Close)
	for _, c := range []struct {
		args []string
		sig  syscall.Signal
		code int
		line string
	}{
		{[]string{"topic", "delete", "orders"}, syscall.SIGINT, ExitInterrupted, "narad: did not delete topic orders (interrupted)"},
		{[]string{"topic", "detach", "orders", "audit"}, syscall.SIGINT, ExitInterrupted, "narad: did not detach audit from orders (interrupted)"},
		{[]string{"user", "rm", "bob"}, syscall.SIGTERM, ExitTerminated, "narad: did not remove user bob (interrupted)"},
		{[]string{"cluster", "decommission", "n2"}, syscall.SIGINT, ExitInterrupted, "narad: did not decommission n2 (interrupted)"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
				t.Setenv(k, "")
			}
			ios, _, out, errOut := iostreams.Test()
			in := newStuckStdin(t)
			ios.In = in
			ios.SetTTY(true, true, true)
			env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml")}
			f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
			go func() {
				<-in.reading // at the prompt
				f.Signals.Trigger(c.sig)
			}()
			done := make(chan int, 1)
			go func() { done <- Run(f, append(c.args, "-s", node.URL)) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(20 * time.Second): // bounds a hang only
				t.Fatal("the prompt still waits for Enter after the signal")
			}
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			if code != c.code || out.String() != "" || len(lines) != 2 || lines[1] != c.line {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q after the prompt", code, out.String(), errOut.String(), c.code, c.line)
			}
		})
	}
}
