//go:build unix

package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
)

// signalLease is the signal topics' lease: long enough for any run, short enough that a
// message left held by a failed check comes back before the next checks.
const signalLease = 5 * time.Second

// signalLimit bounds one signalled run; a run still going then is a hang.
const signalLimit = 30 * time.Second

// exitFor is the exit code each signal must give (CLI.md).
var exitFor = map[syscall.Signal]int{syscall.SIGHUP: 129, syscall.SIGINT: 130, syscall.SIGTERM: 143}

var signalsToSend = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// TestSignals: SIGINT, SIGTERM or SIGHUP at random moments of sub (text, raw, json),
// sub | head, exec mode and produce --lines, plus double SIGINT: nothing printed, read
// or done is left unacked, nothing is acked that was not, everything held is available
// again at once, no command outlives narad, produce summaries are exact, and the exit
// code names the signal.
func TestSignals(t *testing.T) {
	skipShort(t)
	rnd := newRand(t)
	rp := &report{title: "Signals: SIGINT, SIGTERM or SIGHUP at random moments (double: SIGINT twice)"}
	defer rp.print(t)
	runs := scale(3, 50)
	s := &signalSuite{rnd: rnd, b: startBroker(t, false)}

	cases := []struct {
		name string
		fn   func(t *testing.T, v *verdict, r *row, tag string)
	}{
		{"sub text", func(t *testing.T, v *verdict, r *row, tag string) { s.sub(t, v, r, tag, "text", 1) }},
		{"sub raw", func(t *testing.T, v *verdict, r *row, tag string) { s.sub(t, v, r, tag, "raw", 1) }},
		{"sub json", func(t *testing.T, v *verdict, r *row, tag string) { s.sub(t, v, r, tag, "json", 1) }},
		{"sub | head", s.subHead},
		{"exec", s.execDone},
		{"exec, grandchildren", func(t *testing.T, v *verdict, r *row, tag string) { s.execTree(t, v, r, tag, 1) }},
		{"produce --lines -j 8", func(t *testing.T, v *verdict, r *row, tag string) { s.produceLines(t, v, r, tag, 1) }},
		{"double SIGINT: sub text", func(t *testing.T, v *verdict, r *row, tag string) { s.sub(t, v, r, tag, "text", 2) }},
		{"double SIGINT: exec, grandchildren", func(t *testing.T, v *verdict, r *row, tag string) { s.execTree(t, v, r, tag, 2) }},
		{"double SIGINT: produce --lines -j 8", func(t *testing.T, v *verdict, r *row, tag string) { s.produceLines(t, v, r, tag, 2) }},
		{"double SIGINT: sub, acks 503", s.ackRefused},
	}
	for ci, c := range cases {
		r := rp.add(c.name)
		t.Run(c.name, func(t *testing.T) {
			v := newVerdict(t)
			for i := range runs {
				c.fn(t, v, r, fmt.Sprintf("s%dr%d", ci, i))
				r.runs++
				// The first failing run says enough; its figures are in the table.
				if t.Failed() {
					return
				}
			}
		})
	}
}

type signalSuite struct {
	rnd *rand.Rand
	b   *devbroker.Broker
	mu  sync.Mutex
}

func (s *signalSuite) intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.IntN(n)
}

func (s *signalSuite) pickSignal() syscall.Signal { return signalsToSend[s.intn(len(signalsToSend))] }

// moment is a random delay up to max: a signal lands while narad prints, acks, waits on
// an empty topic or runs commands.
func (s *signalSuite) moment(max time.Duration) time.Duration {
	return time.Duration(s.intn(int(max/time.Millisecond)+1)) * time.Millisecond
}

// trickle produces a message every interval into topic until stopped, so that a signal
// can land while a consume is answered; ids continue from first.
type trickle struct {
	stop func() []string // stops producing and returns the ids produced
}

func startTrickle(b *devbroker.Broker, topic, tag string, first, size int, every time.Duration) *trickle {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []string)
	go func() {
		var ids []string
		for i := first; ctx.Err() == nil; i++ {
			id := payloadID(tag, i)
			if _, _, err := b.Produce(topic, "", []byte(pad(id, size))); err != nil {
				break
			}
			ids = append(ids, id)
			ctxSleep(ctx, every)
		}
		done <- ids
	}()
	return &trickle{stop: func() []string { cancel(); return <-done }}
}

// started is a narad process running in the background.
type started struct {
	cmd   *exec.Cmd
	start time.Time
	done  chan outcome
}

func startNarad(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	return startNaradFor(t, cmd, signalLimit)
}

// startNaradFor is startNarad with its own bound.
func startNaradFor(t *testing.T, cmd *exec.Cmd, limit time.Duration) *started {
	t.Helper()
	p := &started{cmd: cmd, start: time.Now(), done: make(chan outcome, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- waitBounded(cmd, p.start, limit) }()
	return p
}

// signal sends sig unless narad already ended; it reports whether it was sent.
func (p *started) signal(sig syscall.Signal) bool {
	select {
	case o := <-p.done:
		p.done <- o
		return false
	default:
	}
	return p.cmd.Process.Signal(sig) == nil
}

// awaitRequest waits until the broker has seen a request of op beyond before: narad is
// up and has its signal handlers, so a signal now tests narad, not Go's default.
func awaitRequest(b *devbroker.Broker, op string, before int) bool {
	return waitFor(10*time.Second, func() bool { return b.Requests(op) > before })
}

// afterExit checks what must hold the moment narad is gone: nothing of the topic held.
// If something is (a stranded batch), it waits for the leases to run out so that the
// set checks that follow still see every message.
func afterExit(t *testing.T, v *verdict, r *row, b *devbroker.Broker, topic, what string) {
	st := stats(t, b, topic)
	r.count("left held at exit", st.InFlight())
	if !v.check(st.InFlight() == 0, "%s: %d messages still held right after narad exited", what, st.InFlight()) {
		waitFor(3*signalLease, func() bool { return stats(t, b, topic).InFlight() == 0 })
	}
}

func (s *signalSuite) checkExit(v *verdict, r *row, o outcome, want []int, what string, stderr []byte) {
	r.exit(o)
	ok := !o.hung && o.signal == ""
	if ok {
		ok = false
		for _, w := range want {
			ok = ok || o.code == w
		}
	}
	v.check(ok, "%s: exit %s, want one of %v; stderr: %s", what, o.exitName(), want, tail(stderr))
}

// sub: a backlog and a trickle, narad sub to a file, one or two signals at a random
// moment. Every message is then exactly one of: printed and acked, or available.
func (s *signalSuite) sub(t *testing.T, v *verdict, r *row, tag, format string, signals int) {
	b := s.b
	newTopic(t, b, tag, signalLease)
	backlog := scale(200, 2000)
	ids := fill(t, b, tag, tag, backlog, 0)
	tr := startTrickle(b, tag, tag, backlog, 0, 2*time.Millisecond)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := naradCmd(t, b.URL(), "sub", tag, "-o", format)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	before := b.Requests(devbroker.OpConsume)
	p := startNarad(t, cmd)
	awaitRequest(b, devbroker.OpConsume, before)
	sig, second := s.stop(p, 400*time.Millisecond, signals, nil)
	o := <-p.done
	ids = append(ids, tr.stop()...)
	r.messages += len(ids)
	what := fmt.Sprintf("%s after %v", sig, o.elapsed)
	s.checkExit(v, r, o, []int{exitFor[sig]}, what, stderr.Bytes())
	if signals == 2 && !o.hung {
		s.noteSlowest(r, p.start.Add(o.elapsed).Sub(second))
	}
	afterExit(t, v, r, b, tag, what)

	printed, _ := os.ReadFile(out.Name())
	s.settledExactly(t, v, r, tag, ids, idsIn(printed), what)
}

// settledExactly checks that what narad printed (or had done) is exactly what the node
// has acked: printed ones are not available, the others are, and none was printed twice.
func (s *signalSuite) settledExactly(t *testing.T, v *verdict, r *row, topic string, ids, printed []string, what string) {
	seen := counted(printed)
	d := duplicates(seen)
	r.dup += d
	if d > 0 {
		r.why = "printed twice in one run"
	}
	v.check(d == 0, "%s: %d messages printed or done twice", what, d)
	st := stats(t, s.b, topic)
	rest := setOf(takeRest(t, s.b, topic))
	unacked, lost := map[string]bool{}, map[string]bool{}
	for _, id := range ids {
		switch {
		case seen[id] > 0 && rest[id]:
			unacked[id] = true
		case seen[id] == 0 && !rest[id]:
			lost[id] = true
		}
	}
	r.lost += len(lost)
	v.check(len(unacked) == 0, "%s: %d printed or done but not acked (available again): %s", what, len(unacked), sample(unacked))
	v.check(len(lost) == 0, "%s: %d acked but never printed or done: %s", what, len(lost), sample(lost))
	v.check(st.Acked() == len(seen), "%s: the node acked %d, narad printed or did %d", what, st.Acked(), len(seen))
}

// secondPress sends the second SIGINT as a person would, 100-250 ms after the first (two
// signals closer than the process is scheduled merge into one in the kernel), and
// returns when it was sent.
func (s *signalSuite) secondPress(p *started) time.Time {
	time.Sleep(100*time.Millisecond + s.moment(150*time.Millisecond))
	at := time.Now()
	p.signal(syscall.SIGINT)
	return at
}

// stop sends narad its stop at a random moment within the next within: a random signal,
// or with presses 2 SIGINT twice (a moment apart, after beforeSecond when set). It
// returns the first signal and when the last was sent.
func (s *signalSuite) stop(p *started, within time.Duration, presses int, beforeSecond func()) (syscall.Signal, time.Time) {
	time.Sleep(s.moment(within))
	sig := s.pickSignal()
	if presses == 2 {
		sig = syscall.SIGINT
	}
	p.signal(sig)
	last := time.Now()
	if presses == 2 {
		if beforeSecond != nil {
			beforeSecond()
		}
		last = s.secondPress(p)
	}
	return sig, last
}

// noteSlowest keeps the longest time from the last signal to narad's exit.
func (s *signalSuite) noteSlowest(r *row, d time.Duration) {
	r.slowest = max(r.slowest, d, 0) // below 0: it ended before the last signal
}

// headLine is the size of each message in the sub | head runs: big enough that what
// head reads ahead (8 KiB at a time) is a few lines, not the whole run.
const headLine = 1000

// subHead: narad sub -o raw | head -n K, messages trickling in, a signal at a random
// moment unless head ended it first. What head printed is acked; narad acked at most
// what head can have read ahead; the rest is available at once.
func (s *signalSuite) subHead(t *testing.T, v *verdict, r *row, tag string) {
	b := s.b
	newTopic(t, b, tag, signalLease)
	ids := fill(t, b, tag, tag, 5, headLine)
	tr := startTrickle(b, tag, tag, 5, headLine, 20*time.Millisecond)
	k := 1 + s.intn(40)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	head := exec.Command("head", "-n", strconv.Itoa(k))
	var headOut bytes.Buffer
	head.Stdin, head.Stdout = pr, &headOut
	if err := head.Start(); err != nil {
		t.Fatal(err)
	}
	headDone := make(chan struct{})
	go func() { head.Wait(); close(headDone) }()
	cmd := naradCmd(t, b.URL(), "sub", tag, "-o", "raw", "--stats=json")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	before := b.Requests(devbroker.OpConsume)
	p := startNarad(t, cmd)
	pr.Close() // head and narad hold the pipe's ends now
	pw.Close()
	awaitRequest(b, devbroker.OpConsume, before)
	time.Sleep(s.moment(600 * time.Millisecond))
	sig := s.pickSignal()
	headEnded := false
	select {
	case <-headDone:
		headEnded = true
	default:
	}
	sent := p.signal(sig)
	o := <-p.done
	select {
	case <-headDone:
	case <-time.After(signalLimit):
		head.Process.Kill()
		v.check(false, "head -n %d never ended", k)
		<-headDone
	}
	ids = append(ids, tr.stop()...)
	r.messages += len(ids)
	what := fmt.Sprintf("head -n %d, %s after %v", k, sig, o.elapsed)
	want := []int{exitFor[sig]}
	switch {
	case !sent:
		want = []int{0}
	case headEnded:
		want = append(want, 0) // narad may have been ending on the closed pipe already
	}
	s.checkExit(v, r, o, want, what, stderr.Bytes())
	afterExit(t, v, r, b, tag, what)

	shown := idsIn(headOut.Bytes())
	st := stats(t, b, tag)
	rest := setOf(takeRest(t, b, tag))
	unacked := map[string]bool{}
	for _, id := range shown {
		if rest[id] {
			unacked[id] = true
		}
	}
	v.check(len(unacked) == 0, "%s: %d lines head printed were not acked: %s", what, len(unacked), sample(unacked))
	acked := len(ids) - len(rest)
	v.check(acked == st.Acked(), "%s: %d messages neither acked nor available (node acked %d)", what, acked-st.Acked(), st.Acked())
	// head reads at most 8 KiB past the line it stops at: anything acked beyond that sat
	// unread in the pipe when head exited.
	readAhead := 8192/(headLine+1) + 2
	v.check(acked <= len(shown)+readAhead,
		"%s: acked %d, head printed %d and can have read at most %d more: the rest sat unread in the pipe",
		what, acked, len(shown), readAhead)
	r.count("shown by head", len(shown))
	r.count("acked", acked)
}

// execDone: exec mode -j 4, commands that record their message when done, a signal at
// a random moment: what was done is exactly what was acked.
func (s *signalSuite) execDone(t *testing.T, v *verdict, r *row, tag string) {
	b := s.b
	newTopic(t, b, tag, signalLease)
	ids := fill(t, b, tag, tag, scale(60, 400), 0)
	done := filepath.Join(t.TempDir(), "done")
	cmd := naradCmd(t, b.URL(), "sub", tag, "-j", "4", "--", "sh", "-c", `p=$(cat); sleep 0.05; printf '%s\n' "$p" >>`+shellQuote(done))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	before := b.Requests(devbroker.OpConsume)
	p := startNarad(t, cmd)
	awaitRequest(b, devbroker.OpConsume, before)
	time.Sleep(s.moment(800 * time.Millisecond))
	sig := s.pickSignal()
	p.signal(sig)
	o := <-p.done
	r.messages += len(ids)
	what := fmt.Sprintf("%s after %v", sig, o.elapsed)
	s.checkExit(v, r, o, []int{exitFor[sig]}, what, stderr.Bytes())
	afterExit(t, v, r, b, tag, what)
	did, _ := os.ReadFile(done)
	s.settledExactly(t, v, r, tag, ids, idsIn(did), what)
}

// execTree: exec mode whose commands start background jobs and never end; one signal
// (then --shutdown-grace runs out) or two stop them: every process they started is gone
// when narad is, nothing is acked, everything is available again.
func (s *signalSuite) execTree(t *testing.T, v *verdict, r *row, tag string, signals int) {
	b := s.b
	newTopic(t, b, tag, signalLease)
	ids := fill(t, b, tag, tag, 12, 0)
	pids := filepath.Join(t.TempDir(), "pids")
	script := `echo $$ >>P; sleep 30 & echo $! >>P; sleep 30 & echo $! >>P; wait`
	script = strings.ReplaceAll(script, "P", shellQuote(pids))
	args := []string{"sub", tag, "-j", "4", "--kill-grace", "1s"}
	if signals == 1 {
		args = append(args, "--shutdown-grace", "300ms")
	}
	cmd := naradCmd(t, b.URL(), append(args, "--", "sh", "-c", script)...)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	p := startNarad(t, cmd)
	// Wait for some commands to have started their jobs, then a random moment more.
	waitFor(10*time.Second, func() bool { return len(readPids(pids)) >= 3 })
	// With two presses, the second once narad said it is waiting: then the first was
	// surely handled, however busy the machine.
	sig, last := s.stop(p, 300*time.Millisecond, signals, func() {
		waitFor(5*time.Second, func() bool { return bytes.Contains(stderr.Bytes(), []byte("again to stop them")) })
	})
	o := <-p.done
	r.messages += len(ids)
	what := fmt.Sprintf("%s after %v", sig, o.elapsed)
	s.checkExit(v, r, o, []int{exitFor[sig]}, what, stderr.Bytes())
	if !o.hung {
		s.noteSlowest(r, p.start.Add(o.elapsed).Sub(last))
	}
	afterExit(t, v, r, b, tag, what)

	started := readPids(pids)
	// The group's SIGKILL is delivered by the kernel; give it a moment on a busy machine.
	var alive []int
	waitFor(3*time.Second, func() bool { alive = livePids(started); return len(alive) == 0 })
	for _, pid := range alive {
		syscall.Kill(pid, syscall.SIGKILL) // leave nothing behind, whatever the verdict
	}
	v.check(len(alive) == 0, "%s: %d of %d processes the commands started outlived narad: %v", what, len(alive), len(started), alive)
	r.count("processes checked", len(started))
	s.settledExactly(t, v, r, tag, ids, nil, what)
}

// produceLines: lines streamed into produce --lines -j 8 without end, a signal (or two)
// at a random moment: the summary's count is what the node stored (the second signal
// may leave some unknown: stored between produced and produced+unknown), and the stored
// messages are exactly the lines before the resume point when the summary names one.
func (s *signalSuite) produceLines(t *testing.T, v *verdict, r *row, tag string, signals int) {
	b := s.b
	newTopic(t, b, tag, signalLease)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := naradCmd(t, b.URL(), "produce", tag, "--lines", "-j", "8")
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, io.Discard, &stderr
	before := b.Requests(devbroker.OpProduce)
	p := startNarad(t, cmd)
	pr.Close()
	written := make(chan int, 1)
	go func() {
		// Lines until narad stops reading (the write then fails), at most a bound.
		n := 0
		for ; n < 2_000_000; n++ {
			if _, err := fmt.Fprintln(pw, payloadID(tag, n+1)); err != nil {
				break
			}
		}
		pw.Close()
		written <- n
	}()
	awaitRequest(b, devbroker.OpProduce, before)
	sig, last := s.stop(p, 500*time.Millisecond, signals, nil)
	o := <-p.done
	if signals == 2 && !o.hung {
		s.noteSlowest(r, p.start.Add(o.elapsed).Sub(last))
	}
	pw.Close()
	<-written
	what := fmt.Sprintf("%s after %v", sig, o.elapsed)
	s.checkExit(v, r, o, []int{exitFor[sig]}, what, stderr.Bytes())

	st := stats(t, b, tag)
	stored := st.Messages()
	r.messages += stored
	m := producedPattern.FindSubmatch(stderr.Bytes())
	if !v.check(m != nil, "%s: no summary on stderr: %s", what, tail(stderr.Bytes())) {
		return
	}
	summary, _ := strconv.Atoi(string(m[1]))
	unknown := 0
	if u := unknownPattern.FindSubmatch(stderr.Bytes()); u != nil {
		unknown, _ = strconv.Atoi(string(u[1]))
	}
	r.count("unknown", unknown)
	v.check(summary <= stored && stored <= summary+unknown,
		"%s: summary says %d produced (%d unknown), the node stored %d", what, summary, unknown, stored)
	r.count("summary short of stored", stored-summary)
	got := counted(takeRest(t, b, tag))
	r.dup += duplicates(got)
	v.check(duplicates(got) == 0, "%s: %d lines stored twice", what, duplicates(got))
	if rm := resumePattern.FindSubmatch(stderr.Bytes()); rm != nil {
		resume, _ := strconv.Atoi(string(rm[1]))
		wrong := map[string]bool{}
		for i := 1; i < resume; i++ {
			if got[payloadID(tag, i)] == 0 {
				wrong["missing "+payloadID(tag, i)] = true
			}
		}
		// After a second signal the abandoned batches are unknown, and batches sent
		// after them may have finished: the summary names both ("may or may not have
		// been stored", "were stored too"), so a line stored past the resume point must
		// be inside one of those spans, and no more of them than it counts.
		spans := [][3]int{} // first, last, count
		if u := unknownSpanPattern.FindSubmatch(stderr.Bytes()); u != nil {
			spans = append(spans, span(u))
		}
		if st := storedTooPattern.FindSubmatch(stderr.Bytes()); st != nil {
			spans = append(spans, span(st))
		}
		past, allowed := 0, 0
		for _, sp := range spans {
			allowed += sp[2]
		}
		for id := range got {
			n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
			if n < resume {
				continue
			}
			past++
			inside := false
			for _, sp := range spans {
				inside = inside || (sp[0] <= n && n <= sp[1])
			}
			if !inside {
				wrong["beyond, unreported "+id] = true
			}
		}
		r.count("stored past the resume point", past)
		v.check(past <= allowed, "%s: %d lines stored past line %d, the summary accounts for %d", what, past, resume, allowed)
		v.check(len(wrong) == 0, "%s: resuming at line %d would not give each line once: %s", what, resume, sample(wrong))
	}
}

var (
	producedPattern = regexp.MustCompile(`produced ([0-9]+) message`)
	unknownPattern  = regexp.MustCompile(`, ([0-9]+) unknown`)
	resumePattern   = regexp.MustCompile(`resume with tail -n \+([0-9]+)`)
	// "8 messages from lines 1166-1173 may or may not have been stored", "1 message
	// from line 250 was stored too".
	unknownSpanPattern = regexp.MustCompile(`([0-9]+) messages? from lines? ([0-9]+)(?:-([0-9]+))? may or may not`)
	storedTooPattern   = regexp.MustCompile(`([0-9]+) messages? from lines? ([0-9]+)(?:-([0-9]+))? (?:was|were) stored too`)
	handleInJSON       = regexp.MustCompile(`"receipt_handle":"([^"]+)"`)
)

// span reads a count, a first and an optional last line out of a summary match.
func span(m [][]byte) [3]int {
	count, _ := strconv.Atoi(string(m[1]))
	first, _ := strconv.Atoi(string(m[2]))
	last := first
	if len(m[3]) > 0 {
		last, _ = strconv.Atoi(string(m[3]))
	}
	return [3]int{first, last, count}
}

// ackRefused: acks always answered 503, narad sub -o json, SIGINT twice: narad stops
// retrying at once, exits 130, and names on stderr each printed message whose ack was
// never confirmed, so none is silently left to come back.
func (s *signalSuite) ackRefused(t *testing.T, v *verdict, r *row, tag string) {
	b := startBroker(t, false, "ack=503:1")
	newTopic(t, b, tag, signalLease)
	ids := fill(t, b, tag, tag, 20, 0)
	cmd := naradCmd(t, b.URL(), "sub", tag, "-o", "json", "--max", "5")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := b.Requests(devbroker.OpAck)
	// Bounded well past the 5 s it is given after the second SIGINT, well short of the
	// minutes its retries would take.
	p := startNaradFor(t, cmd, 12*time.Second)
	awaitRequest(b, devbroker.OpAck, before)
	time.Sleep(s.moment(300 * time.Millisecond))
	p.signal(syscall.SIGINT)
	last := s.secondPress(p)
	o := <-p.done
	r.messages += len(ids)
	what := fmt.Sprintf("SIGINT twice after %v", o.elapsed)
	s.checkExit(v, r, o, []int{130}, what, stderr.Bytes())
	if !o.hung {
		d := p.start.Add(o.elapsed).Sub(last)
		s.noteSlowest(r, d)
		v.check(d < 5*time.Second, "%s: exit %v after the second SIGINT", what, d.Round(time.Millisecond))
	}
	unnamed := map[string]bool{}
	for _, m := range handleInJSON.FindAllSubmatch(stdout.Bytes(), -1) {
		if !bytes.Contains(stderr.Bytes(), m[1]) {
			unnamed[string(m[1])] = true
		}
	}
	v.check(len(unnamed) == 0, "%s: %d printed messages whose ack never got through are not named on stderr: %s",
		what, len(unnamed), sample(unnamed))
}

// syncBuffer is a bytes.Buffer a test may read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// Bytes is a copy of what was written so far.
func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// readPids is the pids the exec commands recorded.
func readPids(file string) []int {
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// livePids is the pids still running (a zombie nobody reaps counts as gone).
func livePids(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		alive = append(alive, pid)
	}
	return alive
}

// shellQuote quotes a path for sh -c.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
