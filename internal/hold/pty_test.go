//go:build linux || darwin

package hold_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/narad/narad/internal/devbroker"
)

// These tests run the real binary in a pseudo-terminal against a broker on 127.0.0.1,
// press keys, and read both the screen (through the small terminal below) and what the
// broker holds.

// buildDir holds the binary the tests build, once; TestMain removes it (a 26 MB
// binary left in the temp directory at every run fills a shared machine's disk).
var buildDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "narad-hold-")
	if err != nil {
		return "", err
	}
	buildDir = dir
	bin := filepath.Join(dir, "narad")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/narad/narad/cmd/narad").CombinedOutput()
	if err != nil {
		return "", &buildError{out}
	}
	return bin, nil
})

type buildError struct{ out []byte }

func (e *buildError) Error() string { return "go build: " + string(e.out) }

func narad(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the binary")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// session is narad running in a pseudo-terminal, its output kept on a screen.
type session struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	scr  *screen
	done chan struct{}
	read chan struct{} // the output was read to its end
	err  error
}

func start(t *testing.T, env []string, cols, rows int, args ...string) *session {
	t.Helper()
	cmd := exec.Command(narad(t), args...)
	home := t.TempDir()
	// An unknown TERM: the renderer keeps to cursor moves and erases, which the screen
	// below understands; NO_COLOR keeps the cells plain.
	cmd.Env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"TERM=narad-test", "NO_COLOR=1"}, env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, tty: tty, scr: newScreen(cols, rows), done: make(chan struct{}), read: make(chan struct{})}
	go func() {
		defer close(s.read)
		buf := make([]byte, 64<<10)
		for {
			n, err := tty.Read(buf)
			s.scr.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
		tty.Close()
	})
	return s
}

func (s *session) press(keys string) {
	s.t.Helper()
	if _, err := s.tty.Write([]byte(keys)); err != nil {
		s.t.Fatal(err)
	}
}

// waitScreen waits until the screen shows want.
func (s *session) waitScreen(want string) {
	s.t.Helper()
	waitFor(s.t, "the screen to show "+strconv.Quote(want), func() bool { return strings.Contains(s.scr.text(), want) },
		func() string { return s.scr.text() })
}

// exit waits for the process to end and returns its exit code.
func (s *session) exit() int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.t.Fatalf("narad did not exit; screen:\n%s", s.scr.text())
	}
	select {
	case <-s.read: // all it wrote is on the screen
	case <-time.After(5 * time.Second):
	}
	if ee, ok := s.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if s.err != nil {
		s.t.Fatal(s.err)
	}
	return 0
}

// waitFor polls cond: the bound is for a broken run, not a measurement.
func waitFor(t *testing.T, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; now:\n%s", what, show())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stats(t *testing.T, b *devbroker.Broker, topic string) devbroker.TopicStats {
	t.Helper()
	st, err := b.Stats(topic)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestHoldModeInATerminal(t *testing.T) {
	// Not shorter: the node hands the message on once no extend came for a lease, and
	// a loaded machine can hold narad's keeper up for a second.
	lease := 3 * time.Second
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3, VisibilityTimeout: lease}, {Name: "dlq", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// One key, so one partition, so one order.
	part := 0
	for _, p := range []string{`{"n": 1, "what": "first"}`, "second, as text", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"} {
		if part, _, err = b.Produce("orders", "k", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	at := func(off int) string { return "orders  p" + strconv.Itoa(part) + " @" + strconv.Itoa(off) + "  key=k" }
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--dead-letter", "dlq", "--stats=json")

	// The first message, JSON indented, and the lease counting down.
	s.waitScreen(`"what": "first"`)
	s.waitScreen(at(0))
	s.waitScreen("lease ")
	// Held on screen longer than its lease: the keeper extends it (three extends are
	// more than a lease), and it is never handed to anyone else meanwhile.
	waitFor(t, "three extends", func() bool { return b.Requests("extend") >= 3 }, s.scr.text)
	if st := stats(t, b, "orders"); st.InFlight() != 1 || st.Available() != 2 {
		t.Fatalf("after a lease and more on screen: in flight %d available %d", st.InFlight(), st.Available())
	}

	// a: acked (the lease was kept: no 410), the node's two 503s retried behind the
	// screen, and the next one is shown, wrapped text.
	b.FailNext("ack", 2, 503)
	s.press("a")
	s.waitScreen(at(1))
	s.waitScreen("second, as text")
	if st := stats(t, b, "orders"); st.Acked() != 1 || b.Requests("ack") != 3 {
		t.Fatalf("after a: acked %d in %d ack requests", st.Acked(), b.Requests("ack"))
	}

	// A resize reflows the screen.
	if err := pty.Setsize(s.tty, &pty.Winsize{Cols: 60, Rows: 20}); err != nil {
		t.Fatal(err)
	}
	s.scr.resize(60, 20)
	s.waitScreen(strings.Repeat("─", 60))

	// d: produced to the dead-letter topic, then acked; the binary one is a hex dump.
	s.press("d")
	s.waitScreen(at(2))
	s.waitScreen("00000000  89 50 4e 47 0d 0a 1a 0a")
	waitFor(t, "the dead letter", func() bool { return stats(t, b, "dlq").Available() == 1 }, s.scr.text)
	if st := stats(t, b, "orders"); st.Acked() != 2 {
		t.Fatalf("after d: acked %d", st.Acked())
	}

	// q: what is held goes back at once, and a summary is left on the terminal.
	s.press("q")
	if code := s.exit(); code != 0 {
		t.Errorf("exit %d; screen:\n%s", code, s.scr.text())
	}
	if st := stats(t, b, "orders"); st.InFlight() != 0 || st.Available() != 1 || st.Acked() != 2 {
		t.Errorf("after q: in flight %d available %d acked %d", st.InFlight(), st.Available(), st.Acked())
	}
	if after := s.scr.afterScreen(); !strings.Contains(after, "acked 1, nacked 0, dead-lettered 1, given back 1\r\n") {
		t.Errorf("no summary after the screen closed: %q", after)
	}
	// The run's own counters: every message settled once, none twice.
	if after := s.scr.afterScreen(); !strings.Contains(after, `"received":3,"acked":2,"nacked":1,`) || !strings.Contains(after, `"bugs":0,`) {
		t.Errorf("counters: %q", after)
	}
}

// d with --dead-letter-format envelope on a message whose envelope would be over the
// node's 1 MiB (a binary payload of 900 KiB, which the envelope holds as base64) goes
// as the payload alone, as exec mode's dead letters do, and the screen says so. The
// node refused the envelope (413) every time, so the message could never be
// dead-lettered from the screen.
func TestHoldModeEnvelopeOverTheLimitGoesAsThePayload(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}, {Name: "dlq", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	payload := bytes.Repeat([]byte{0xff, 0x00, 0x89}, 900<<10/3)
	part, _, err := b.Produce("orders", "", payload)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--dead-letter", "dlq",
		"--dead-letter-format", "envelope")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	s.press("d")
	s.waitScreen("dead-lettered as the payload alone (its envelope, 1.2 MiB, is over 1 MiB)")
	dlq := stats(t, b, "dlq")
	var size int64
	for _, p := range dlq.Partitions {
		size += p.SizeBytes
	}
	if dlq.Available() != 1 || size != int64(len(payload)) {
		t.Errorf("dlq: %d messages of %d bytes, want one of %d", dlq.Available(), size, len(payload))
	}
	if st := stats(t, b, "orders"); st.Acked() != 1 {
		t.Errorf("orders: acked %d, want 1", st.Acked())
	}
	s.press("q")
	if code := s.exit(); code != 0 {
		t.Errorf("exit %d; screen:\n%s", code, s.scr.text())
	}
}

func TestHoldModeLeaseLostAndNodeGone(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3, VisibilityTimeout: 900 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	part, _, err := b.Produce("orders", "", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	// Every extend answers 410 from now on, as when the lease was lost: the screen says
	// so, and a then sends nothing.
	b.FailNext("extend", 1000, 410)
	s.waitScreen("lease lost")
	acks := b.Requests("ack")
	s.press("a")
	s.waitScreen("it is settled already")
	if got := b.Requests("ack"); got != acks {
		t.Errorf("a after the lease was lost sent %d acks", got-acks)
	}
	// The node going away while the screen is open: said on screen, not fatal.
	b.Close()
	s.press("s")
	s.waitScreen("node lost")
	s.press("q")
	if code := s.exit(); code != 4 {
		t.Errorf("exit %d, want 4 (a lease was gone); screen:\n%s", code, s.scr.text())
	}
	if after := s.scr.afterScreen(); !strings.Contains(after, "acked 0, nacked 0, lease lost 1\r\n") {
		t.Errorf("summary: %q", after)
	}
}

// Started on an empty topic, the screen waits, and shows the message produced later:
// a consume that found nothing is followed by another, for as long as it waits.
func TestHoldModeShowsAMessageProducedWhileWaiting(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i")
	s.waitScreen("waiting for a message on orders")
	// A second consume means the first came back empty.
	waitFor(t, "a consume after an empty one", func() bool { return b.Requests("consume") >= 2 }, s.scr.text)
	if _, _, err := b.Produce("orders", "", []byte("late, but here")); err != nil {
		t.Fatal(err)
	}
	s.waitScreen("late, but here")
	s.press("a")
	s.waitScreen("acked 1")
	s.press("q")
	if code := s.exit(); code != 0 {
		t.Errorf("exit %d; screen:\n%s", code, s.scr.text())
	}
	if st := stats(t, b, "orders"); st.Acked() != 1 {
		t.Errorf("acked %d, want 1", st.Acked())
	}
}

// A partition the topic does not have is refused before the screen opens: no full
// screen flashed, no summary of a run that never started.
func TestHoldModeNoSuchPartitionBeforeTheScreen(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, peek := range []bool{false, true} {
		args := []string{"sub", "orders", "-i", "--partition", "9"}
		if peek {
			args = append(args, "--peek")
		}
		s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, args...)
		if code := s.exit(); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		raw := string(s.scr.rawBytes())
		if strings.Contains(raw, "\x1b[?1049h") || strings.Contains(raw, "acked 0") || strings.Contains(raw, "seen 0") {
			t.Errorf("%v: the screen opened: %q", args, raw)
		}
		if !strings.Contains(raw, "narad: no such partition: topic orders has partitions 0..2, not 9 (leave --partition out for all of them)\r\n") {
			t.Errorf("%v: %q", args, raw)
		}
	}
	if n := b.Requests("consume"); n != 0 {
		t.Errorf("%d consumes", n)
	}
}

// --peek -i --count 2: the second message stays on screen until the person moves
// past it, rather than the screen closing the moment it arrives.
func TestHoldModePeekShowsTheLastMessageOfACount(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, p := range []string{"first", "second", "third"} {
		if _, _, err := b.Produce("orders", "k", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--peek", "--from-beginning", "--count", "2")
	s.waitScreen("first")
	s.press("s")
	s.waitScreen("second")
	s.press("?") // still there to answer keys
	s.waitScreen("narad sub orders -i: keys")
	s.press("?")
	s.waitScreen("second")
	s.press("s")
	if code := s.exit(); code != 0 {
		t.Errorf("exit %d; screen:\n%s", code, s.scr.text())
	}
	if after := s.scr.afterScreen(); !strings.Contains(after, "seen 2, took nothing\r\n") {
		t.Errorf("summary: %q", after)
	}
}

// --peek -i whose --timeout comes before its --count exits 3 and says how many it
// saw, as sub --peek does: a script cannot tell it from a count reached otherwise.
func TestHoldModePeekTimeoutBeforeTheCount(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := b.Produce("orders", "k", []byte("only")); err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--peek", "--from-beginning",
		"--count", "5", "--timeout", "1s")
	if code := s.exit(); code != 3 {
		t.Errorf("exit %d, want 3; screen:\n%s", code, s.scr.text())
	}
	if after := s.scr.afterScreen(); !strings.Contains(after, "seen 1, took nothing\r\n") ||
		!strings.Contains(after, "narad: timeout after 1s: 1 of 5 messages\r\n") {
		t.Errorf("after the screen: %q", after)
	}
}

// q twice while an ack is retried behind the screen (the node answers 503): the
// second q leaves at once, and the ack it gives up is named to send again, as plain
// sub names it at a second Ctrl-C, never dropped in silence with exit 0.
func TestHoldModeSecondQGivesUpAnAckAndNamesIt(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	part, _, err := b.Produce("orders", "", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	b.FailNext("ack", 1_000_000, 503)
	s.press("a")
	s.waitScreen("acking…")
	waitFor(t, "a retried ack", func() bool { return b.Requests("ack") >= 2 }, s.scr.text)
	s.press("q")
	s.waitScreen("q again to give up")
	s.press("q")
	if code := s.exit(); code != 1 {
		t.Errorf("exit %d, want 1 (an ack not confirmed); screen:\n%s", code, s.scr.text())
	}
	after := s.scr.afterScreen()
	for _, want := range []string{"acked 0, nacked 0, not confirmed 1\r\n",
		"narad: 1 ack not confirmed by the node; to send again, paste:\r\nnarad ack orders - <<'EOF'\r\n" + strconv.Itoa(part) + ":0:"} {
		if !strings.Contains(after, want) {
			t.Errorf("after the screen, no %q in:\n%s", want, after)
		}
	}
	if st := stats(t, b, "orders"); st.Acked() != 0 {
		t.Errorf("acked %d, with every ack refused", st.Acked())
	}
}

// Bubbletea v1, and lipgloss v2 through the bubbles viewport, ask the terminal about
// itself when their packages initialise, so linking them cost every command a round
// trip (or a `tmux info`). No command that has nothing to show may query the terminal.
func TestNoTerminalQueriesAtStart(t *testing.T) {
	// Inside tmux, a `tmux info` run would leave its mark.
	bin := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "tmux"), []byte("#!/bin/sh\necho \"$@\" >> "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"version"}, {"sub", "--help"}} {
		s := start(t, []string{"NO_COLOR=", "TERM=xterm-256color", "TMUX=/tmp/tmux-0/default,1,0", "PATH=" + bin + ":" + os.Getenv("PATH")}, 80, 24, args...)
		if code := s.exit(); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		raw := s.scr.rawBytes()
		for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b[c", "\x1b[?u", "$p"} {
			if bytes.Contains(raw, []byte(q)) {
				t.Errorf("narad %s sent the terminal the query %q: %q", strings.Join(args, " "), q, raw)
			}
		}
		if ran, err := os.ReadFile(mark); err == nil {
			t.Errorf("narad %s ran tmux %s", strings.Join(args, " "), ran)
		}
	}
}

// screen is as much of a terminal as the renderer uses without capabilities (TERM
// unknown): printing, CR, LF, BS, cursor moves and positions, erases; other sequences
// are skipped.
type screen struct {
	mu      sync.Mutex
	w, h    int
	cells   [][]rune
	r, c    int
	pending []byte
	raw     []byte
}

func newScreen(w, h int) *screen {
	s := &screen{}
	s.resize(w, h)
	return s
}

func (s *screen) resize(w, h int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w, s.h = w, h
	s.cells = make([][]rune, h)
	for i := range s.cells {
		s.cells[i] = []rune(strings.Repeat(" ", w))
	}
	s.r, s.c = min(s.r, h-1), min(s.c, w-1)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := make([]string, len(s.cells))
	for i, row := range s.cells {
		lines[i] = strings.TrimRight(string(row), " ")
	}
	return strings.Join(lines, "\n")
}

// afterScreen is what was written once the full screen was left (the summary).
func (s *screen) afterScreen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := bytes.LastIndex(s.raw, []byte("\x1b[?1049l"))
	if i < 0 {
		return ""
	}
	return string(s.raw[i+len("\x1b[?1049l"):])
}

func (s *screen) rawBytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.raw...)
}

func (s *screen) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = append(s.raw, p...)
	b := append(s.pending, p...)
	i := 0
	for i < len(b) {
		n := s.step(b[i:])
		if n == 0 {
			break // an incomplete sequence: wait for the rest
		}
		i += n
	}
	s.pending = append([]byte(nil), b[i:]...)
}

// step consumes one character or sequence from b and returns its length; 0 when b
// holds only the start of one.
func (s *screen) step(b []byte) int {
	switch c := b[0]; {
	case c == 0x1b:
		if len(b) < 2 {
			return 0
		}
		switch b[1] {
		case '[':
			for j := 2; j < len(b); j++ {
				if b[j] >= 0x40 && b[j] <= 0x7e {
					s.csi(string(b[2:j]), b[j])
					return j + 1
				}
			}
			return 0
		case ']', 'P', '_', '^':
			for j := 2; j < len(b); j++ {
				if b[j] == 0x07 {
					return j + 1
				}
				if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
					return j + 2
				}
			}
			return 0
		case 'M':
			s.r = max(s.r-1, 0)
		}
		return 2
	case c == '\r':
		s.c = 0
	case c == '\n':
		s.lineFeed()
	case c == '\b':
		s.c = max(s.c-1, 0)
	case c < 0x20 || c == 0x7f:
	default:
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 && !utf8.FullRune(b) {
			return 0
		}
		if s.c >= s.w {
			s.c = 0
			s.lineFeed()
		}
		s.cells[s.r][s.c] = r
		s.c++
		return n
	}
	return 1
}

func (s *screen) lineFeed() {
	if s.r < s.h-1 {
		s.r++
		return
	}
	copy(s.cells, s.cells[1:])
	s.cells[s.h-1] = []rune(strings.Repeat(" ", s.w))
}

func (s *screen) csi(params string, final byte) {
	if strings.ContainsAny(params, "?<>=") {
		if final == 'h' && strings.Contains(params, "1049") {
			s.erase(0, 0, s.h-1, s.w-1)
		}
		return
	}
	var ns []int
	for _, f := range strings.Split(params, ";") {
		n, _ := strconv.Atoi(f)
		ns = append(ns, n)
	}
	arg := func(i, def int) int {
		if i < len(ns) && ns[i] > 0 {
			return ns[i]
		}
		return def
	}
	switch final {
	case 'H', 'f':
		s.r, s.c = min(arg(0, 1), s.h)-1, min(arg(1, 1), s.w)-1
	case 'A':
		s.r = max(s.r-arg(0, 1), 0)
	case 'B':
		s.r = min(s.r+arg(0, 1), s.h-1)
	case 'C':
		s.c = min(s.c+arg(0, 1), s.w-1)
	case 'D':
		s.c = max(min(s.c, s.w-1)-arg(0, 1), 0)
	case 'E':
		s.r, s.c = min(s.r+arg(0, 1), s.h-1), 0
	case 'F':
		s.r, s.c = max(s.r-arg(0, 1), 0), 0
	case 'G', '`':
		s.c = min(arg(0, 1), s.w) - 1
	case 'd':
		s.r = min(arg(0, 1), s.h) - 1
	case 'K':
		c := min(s.c, s.w-1)
		switch arg(0, 0) {
		case 0:
			s.erase(s.r, c, s.r, s.w-1)
		case 1:
			s.erase(s.r, 0, s.r, c)
		case 2:
			s.erase(s.r, 0, s.r, s.w-1)
		}
	case 'J':
		c := min(s.c, s.w-1)
		switch arg(0, 0) {
		case 0:
			s.erase(s.r, c, s.h-1, s.w-1)
		case 1:
			s.erase(0, 0, s.r, c)
		default:
			s.erase(0, 0, s.h-1, s.w-1)
		}
	case 'X':
		c := min(s.c, s.w-1)
		s.erase(s.r, c, s.r, min(c+arg(0, 1)-1, s.w-1))
	}
}

// erase blanks the cells from (r0, c0) to (r1, c1), reading order.
func (s *screen) erase(r0, c0, r1, c1 int) {
	for r := r0; r <= r1; r++ {
		from, to := 0, s.w-1
		if r == r0 {
			from = c0
		}
		if r == r1 {
			to = c1
		}
		for c := from; c <= to; c++ {
			s.cells[r][c] = ' '
		}
	}
}

// A signal while an ack is being retried: the ack gets --shutdown-grace, not the
// client's two-minute budget, then it is named for pasting and the exit is 143, as
// plain sub does.
func TestHoldModeSignalBoundsARetriedAckByTheGrace(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	part, _, err := b.Produce("orders", "", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--shutdown-grace", "1s")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	b.FailNext("ack", 1_000_000, 503)
	s.press("a")
	s.waitScreen("acking…")
	waitFor(t, "a retried ack", func() bool { return b.Requests("ack") >= 2 }, s.scr.text)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// No second signal and no key: only the grace ends the wait (exit waits 20s,
	// far less than the retry budget).
	if code := s.exit(); code != 143 {
		t.Errorf("exit %d, want 143; screen:\n%s", code, s.scr.text())
	}
	after := s.scr.afterScreen()
	want := "narad: 1 ack not confirmed by the node; to send again, paste:\r\nnarad ack orders - <<'EOF'\r\n" + strconv.Itoa(part) + ":0:"
	if !strings.Contains(after, want) {
		t.Errorf("after the screen, no %q in:\n%s", want, after)
	}
}

// Ctrl-C on the screen is a key (the terminal is raw), and a first one while an ack
// is being retried waits for it up to --shutdown-grace, as a first signal does, not
// the client's two-minute budget: then it names the ack for pasting, with no second
// key pressed.
func TestHoldModeCtrlCBoundsARetriedAckByTheGrace(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	part, _, err := b.Produce("orders", "", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--shutdown-grace", "1s")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	b.FailNext("ack", 1_000_000, 503)
	s.press("a")
	s.waitScreen("acking…")
	waitFor(t, "a retried ack", func() bool { return b.Requests("ack") >= 2 }, s.scr.text)
	s.press("\x03")
	s.waitScreen("q again to give up")
	if code := s.exit(); code != 1 {
		t.Errorf("exit %d, want 1 (an ack not confirmed); screen:\n%s", code, s.scr.text())
	}
	after := s.scr.afterScreen()
	for _, want := range []string{"acked 0, nacked 0, not confirmed 1\r\n",
		"narad: 1 ack not confirmed by the node; to send again, paste:\r\nnarad ack orders - <<'EOF'\r\n" + strconv.Itoa(part) + ":0:"} {
		if !strings.Contains(after, want) {
			t.Errorf("after the screen, no %q in:\n%s", want, after)
		}
	}
}

// A dead-letter copy still on its way when q is pressed is bounded by --shutdown-grace
// too, as an ack is: the quitting line counts the grace down, and at its end the
// produce is given up (here a node that never answers it), nothing is settled and the
// message goes back, rather than the screen waiting out the produce's own minutes.
func TestHoldModeQuitBoundsADeadLetterProduceByTheGrace(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}, {Name: "dlq", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	part, _, err := b.Produce("orders", "", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	// In front of the broker, a node that takes a produce and never answers it. The
	// rest is the broker's own handler, in this process: the give-back after the grace
	// has one prompt try (consumer.Options.LastTry), and a proxy's hop to the broker's
	// listener made it the more likely to miss it on a loaded machine.
	hung := make(chan struct{})
	var produces, givebacks atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/produce") {
			produces.Add(1)
			select {
			case <-hung:
			case <-r.Context().Done():
			}
			return
		}
		if strings.HasSuffix(r.URL.Path, "/ack") && r.URL.Query().Get("extend") == "0" {
			givebacks.Add(1)
		}
		b.Handler().ServeHTTP(w, r)
	}))
	defer front.Close()
	defer close(hung)
	s := start(t, []string{"NARAD_ADDR=" + front.URL}, 80, 24, "sub", "orders", "-i", "--dead-letter", "dlq", "--shutdown-grace", "1s")
	s.waitScreen("orders  p" + strconv.Itoa(part) + " @0")
	s.press("d")
	waitFor(t, "a produce on its way", func() bool { return produces.Load() >= 1 }, s.scr.text)
	s.press("q")
	s.waitScreen("quitting: 1 dead-letter copy retried, giving up in ")
	code := s.exit()
	after := s.scr.afterScreen()
	if givebacks.Load() != 1 {
		t.Errorf("%d give-backs reached the node, want the message given back once", givebacks.Load())
	}
	st := stats(t, b, "orders")
	if st.Acked() != 0 || stats(t, b, "dlq").Available() != 0 {
		t.Errorf("orders acked %d, dlq holds %d: want nothing settled", st.Acked(), stats(t, b, "dlq").Available())
	}
	// The give-back is sent once the grace is over, with one prompt try: it lands, or,
	// on a machine too loaded to answer within that try, it is named for pasting and
	// the exit is 1. Both are the product's answer; the first is the usual one.
	switch {
	case code == 0:
		if !strings.Contains(after, "acked 0, nacked 0, given back 1\r\n") || st.InFlight() != 0 {
			t.Errorf("summary %q, in flight %d: want the message given back", after, st.InFlight())
		}
	case code == 1 && strings.Contains(after, "acked 0, nacked 0, not confirmed 1\r\n") &&
		strings.Contains(after, "narad: 1 nack not confirmed by the node; to send again, paste:\r\nnarad nack orders - <<'EOF'\r\n"):
		t.Logf("the give-back was not answered within its one try on this machine: %q", after)
	default:
		t.Errorf("exit %d, want 0 (nothing settled, the message given back); screen:\n%s\nafter it: %q", code, s.scr.text(), after)
	}
}

// A screen that closes before its first frame (a --peek whose --until is past, with
// nothing in range) sends no terminal query as it leaves: the query went out after the
// screen was gone, and a terminal that answers it had the answer typed into the shell
// (`^[[?2026;2$y`), with nobody left to read it.
func TestHoldModeClosingAtOnceAsksTheTerminalNothing(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{
		{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := start(t, []string{"NARAD_ADDR=" + b.URL()}, 80, 24, "sub", "orders", "-i", "--peek", "--from-beginning",
		"--until", "2001-01-01T00:00:00Z")
	if code := s.exit(); code != 0 {
		t.Errorf("exit %d, want 0; screen:\n%s", code, s.scr.text())
	}
	if raw := s.scr.rawBytes(); bytes.Contains(raw, []byte("$p")) {
		t.Errorf("the terminal was asked a question as the screen closed: %q", raw)
	}
}
