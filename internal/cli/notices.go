package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// Lines for a person on stderr: what a long-running command is doing, and what
// happened to the node or a message along the way.

// nodeNotices are the lines a long-running sub (and a follow read) writes when the
// node it reached stops answering, and when it is back.
func (e runEnv) nodeNotices(c *client.Client) (lost func(error), back func()) {
	lost = func(err error) { io.WriteString(e.IO.ErrOut, nodeLostLine(c, err)) }
	back = func() { io.WriteString(e.IO.ErrOut, nodeBackLine) }
	return lost, back
}

// nodeLostLine and nodeBackLine are the lines of nodeNotices.
func nodeLostLine(c *client.Client, err error) string {
	why := describeErr(err)
	for _, op := range []string{"consume: ", "replay: "} {
		why = strings.TrimPrefix(why, op)
	}
	return fmt.Sprintf("narad: lost node %s: %s; retrying\n", render.Escape(c.BaseURL()), render.Escape(why))
}

const nodeBackLine = "narad: node is back\n"

// surplusNotice says, once a run, that the node answered a consume with more messages
// than it asked for (those over were given back): a node that ignores max.
func (e runEnv) surplusNotice() func(asked, got int) {
	var once sync.Once
	return func(asked, got int) {
		once.Do(func() {
			fmt.Fprintf(e.IO.ErrOut, "narad: the node answered %d messages to a consume for %d; the %d over were given back (said once)\n",
				got, asked, got-asked)
		})
	}
}

// undecodableNotice reports a message the run could not decode, and what became of it:
// "narad: message p1 @8: payload is not valid base64: ...; given back; the others go on".
func (e runEnv) undecodableNotice(m *client.Message, why error, fate string) {
	fmt.Fprintf(e.IO.ErrOut, "narad: message p%d @%d cannot be decoded (%s): %s\n", m.Partition, m.Offset,
		render.Escape(render.Cut(why.Error(), 300)), fate)
}

// announce says on stderr what a long-running command is doing, on a terminal only:
// a person watching should know whether messages are being taken.
func (e runEnv) announce(format string, topic, server string) {
	if !e.IO.IsStderrTTY() {
		return
	}
	e.notice(fmt.Sprintf(format+" (Ctrl-C to stop)", render.Escape(topic), render.Escape(server)))
}

// notice writes a line for a person on stderr, broken at spaces to the terminal's
// width (80 columns off a terminal), continued lines indented: nothing narad says runs
// past the edge of the terminal.
func (e runEnv) notice(line string) {
	_, _ = io.WriteString(e.IO.ErrOut, render.Wrap(line, e.IO.StderrWidth(), "  ")+"\n")
}

// announceSub is sub's announce: what happens to each message printed.
func (e runEnv) announceSub(c *client.Client, topic string, acksWhenRead, noAck bool) {
	what := "acked once printed"
	switch {
	case noAck:
		what = "not acked (--no-ack)"
	case acksWhenRead:
		what = "acked once read"
	}
	e.announce("consuming %s on %s: "+what, topic, c.BaseURL())
}

// settleRetries knows whether acks or nacks are being retried (a retry asked for and
// no settling answer since): what a first signal still waits for in a consuming sub,
// which says so (announceSettleStop) rather than go quiet for the grace.
type settleRetries struct{ acks, nacks atomic.Bool }

func (s *settleRetries) flag(op client.Op) *atomic.Bool {
	switch op {
	case client.OpAck:
		return &s.acks
	case client.OpNack:
		return &s.nacks
	}
	return nil
}

func (s *settleRetries) OnRetry(e client.RetryEvent) {
	if f := s.flag(e.Op); f != nil {
		f.Store(true)
	}
}

func (s *settleRetries) OnAnswer(e client.AnswerEvent) {
	if client.BusyStatus(e.Status) {
		return // retried: still pending
	}
	if f := s.flag(e.Op); f != nil {
		f.Store(false)
	}
}

// announceSettleStop says at the first signal, when acks or nacks are being retried,
// that they go on for up to --shutdown-grace and how to give them up sooner; the func
// it returns ends the watch.
func (e runEnv) announceSettleStop(s *settleRetries, grace time.Duration) (stop func()) {
	return e.atFirstSignal(func(line func(string) string) {
		var what string
		switch acks, nacks := s.acks.Load(), s.nacks.Load(); {
		case acks && nacks:
			what = "acks and nacks"
		case acks:
			what = "acks"
		case nacks:
			what = "nacks"
		default:
			return
		}
		again := e.again("Ctrl-C again to give them up", "a second signal gives them up")
		e.notice(line(fmt.Sprintf("narad: stopping: retrying %s for up to %s more; %s", what, roundDuration(grace), again)))
	})
}

// again is how a stop line names the second signal: ctrlC after a Ctrl-C (SIGINT),
// other after any other signal, which no Ctrl-C may follow (a service manager's).
func (e runEnv) again(ctrlC, other string) string {
	if e.Signals.Received() != syscall.SIGINT {
		return other
	}
	return ctrlC
}

// atFirstSignal runs say once the first signal came, unless the returned func was
// called first. say's line func puts a line for after the terminal's ^C.
func (e runEnv) atFirstSignal(say func(line func(string) string)) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-e.Signals.Soft:
		case <-done:
			return
		}
		say(func(l string) string {
			if e.IO.IsStderrTTY() {
				return "\n" + l // after the terminal's ^C
			}
			return l
		})
	}()
	return func() { close(done) }
}

// readingTerminal is the line a command that reads its input from stdin says first
// when stdin is a terminal (what: "handles, one a line,"): it waits for what is typed
// there, and would otherwise wait without a word.
func readingTerminal(what string) string {
	return fmt.Sprintf("narad: reading %s from stdin until end of input (Ctrl-D)", what)
}
