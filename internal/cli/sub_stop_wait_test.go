package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// A sub that stops (its --timeout, or the first signal) while its consume waits on a
// node that took the connection and never answers waits for that answer a while, as
// the node may be leasing messages for it: it says so on stderr, as produce and bench
// do after a stop, rather than nothing until the end.
func TestSubStopSaysItWaitsForTheConsumeOut(t *testing.T) {
	noteStoppingAfter(t, 10*time.Millisecond, nil)
	const note = "narad: stopping: waiting for the requests already out to be answered"
	for _, c := range []struct {
		name string
		args []string
		sig  syscall.Signal
		code int
		how  string
	}{
		// (Exit 1: the node never answered anything, a failure at --timeout.)
		{"timeout", []string{"--timeout", "100ms"}, 0, ExitFailed, "(Ctrl-C twice to abandon them)"},
		{"signal", nil, syscall.SIGINT, ExitInterrupted, "(Ctrl-C again to abandon them)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, took := acceptingNode(t)
			env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "c.yaml")}
			ios, _, _, errOut := iostreams.Test()
			f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
			done := make(chan int, 1)
			go func() { done <- Run(f, append([]string{"sub", "t", "-s", url}, c.args...)) }()
			if c.sig != 0 {
				<-took // the consume is out
				f.Signals.Trigger(c.sig)
			}
			if code := <-done; code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, errOut)
			}
			if got := errOut.String(); strings.Count(got, note) != 1 || !strings.Contains(got, note+" "+c.how+"\n") {
				t.Errorf("stderr %q\nwant once %q", got, note+" "+c.how)
			}
		})
	}
}
