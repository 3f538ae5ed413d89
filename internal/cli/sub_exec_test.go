package cli

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// acceptingNode is a node that takes connections and never answers, like the silent
// fault node, and says when it took the first one: the point where a run waits on it.
func acceptingNode(t *testing.T) (url string, took <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if conns = append(conns, c); len(conns) == 1 {
				close(ch)
			}
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), ch
}

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
