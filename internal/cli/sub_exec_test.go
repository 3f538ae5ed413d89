package cli

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestExecFirstSignalEndsTheLooks: before exec mode takes anything, it looks up the
// topic's lease and the --dead-letter topic; with nothing held or running yet, the
// first Ctrl-C ends that look, as it does plain sub's, instead of leaving a node that
// never answers to hold the run for minutes of retries.
func TestExecFirstSignalEndsTheLooks(t *testing.T) {
	for _, args := range [][]string{
		{"sub", "t", "--", "true"},
		{"sub", "t", "--lease", "10s", "--max-attempts", "2", "--dead-letter", "dl", "--", "true"},
	} {
		url, took := acceptingNode(t)
		var second atomic.Bool
		r := runTTY(t, false, false, func(s *Signals) {
			<-took
			s.Trigger(syscall.SIGINT)
			// Only a bound on a hang: the first signal should have ended the run.
			time.Sleep(20 * time.Second)
			second.Store(true)
			s.Trigger(syscall.SIGINT)
		}, append([]string{"-s", url}, args...)...)
		if r.code != ExitInterrupted || second.Load() {
			t.Errorf("%v: exit %d (second signal needed: %v), stderr:\n%s\nwant exit 130 at the first signal", args, r.code, second.Load(), r.stderr)
		}
	}
}
