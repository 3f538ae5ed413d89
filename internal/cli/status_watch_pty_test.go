//go:build linux

package cli_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/narad/narad/internal/devbroker"
)

// TestWatchInATerminal: the real binary's status --watch in a pseudo-terminal of
// 80×24. The screen is drawn in place on the alternate screen; a resize redraws it to
// the new width; a node that goes away is said on screen while the last table stays;
// q ends it with exit 0 and the terminal as it was.
func TestWatchInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildNarad(t)
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	cmd := exec.Command(bin, "status", "--watch", "--interval", "100ms", "-s", b.URL())
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "NO_COLOR=1", "TZ=UTC"}
	r := startInPTY(t, cmd, &pty.Winsize{Rows: 24, Cols: 80})
	screen, waitFor := &r.screen, r.waitFor

	waitFor("first screen", contains("refreshed "))
	first := screen.String()
	if !strings.HasPrefix(first, "\x1b[?1049h\x1b[?25l\x1b[H") || !strings.Contains(first, "orders ") ||
		strings.Contains(first, "\x1b[2J") {
		t.Errorf("first screen: %q", first)
	}
	// Two more refreshes: the rates come, and each frame is drawn over the last one.
	waitFor("rates", func(s string) bool { return strings.Count(s, "\x1b[H") >= 2 && strings.Contains(s, " 0.0 ") })

	// Narrower: the title no longer fits and is cut.
	mark := len(screen.String())
	if err := pty.Setsize(r.tty, &pty.Winsize{Rows: 10, Cols: 30}); err != nil {
		t.Fatal(err)
	}
	waitFor("redraw at 30 columns", func(s string) bool { return strings.Contains(s[mark:], "narad status · http://127.0.0…") })

	// The node goes away: said on screen, the table kept.
	mark = len(screen.String())
	b.Close()
	waitFor("node unreachable", func(s string) bool { return strings.Contains(s[mark:], "node unreachable since ") })

	r.typeKeys([]byte("q"))
	werr := r.end("q")
	if werr != nil {
		t.Errorf("exit: %v; the terminal showed %q", werr, screen.String())
	}
	if !strings.HasSuffix(screen.String(), "\x1b[?25h\x1b[?1049l") {
		t.Errorf("the screen was not given back: it ends %q", tail(screen.String(), 200))
	}
	r.modesKept()
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// TestWatchJSONInATerminalQuits: status --watch -o json on a terminal prints a line a
// refresh, as in a pipe, and q ends it with exit 0, as it ends the table's screen,
// with no Enter needed and nothing echoed; the lines stay lines (a newline still
// returns the carriage) and the terminal's modes are given back.
func TestWatchJSONInATerminalQuits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildNarad(t)
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	cmd := exec.Command(bin, "status", "--watch", "-o", "json", "--interval", "1h", "-s", b.URL())
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "NO_COLOR=1", "TZ=UTC"}
	r := startInPTY(t, cmd, &pty.Winsize{Rows: 24, Cols: 80})
	r.waitFor("the first line", contains("\"name\":\"orders\""))
	r.waitFor("the line's end", contains("}\r\n"))
	// The keys are read once the terminal hands them over one by one: only then is a
	// lone q not held for an Enter.
	r.waitFor("keys read at once", func(string) bool {
		m, err := unix.IoctlGetTermios(int(r.tty.Fd()), unix.TCGETS)
		return err == nil && m.Lflag&unix.ICANON == 0
	})
	r.typeKeys([]byte("q"))
	if werr := r.end("q"); werr != nil {
		t.Errorf("exit: %v; the terminal showed %q", werr, r.screen.String())
	}
	if out := r.screen.String(); strings.Contains(out, "q") || strings.Contains(out, "\x1b[?1049h") {
		t.Errorf("q echoed, or a screen taken: %q", out)
	}
	r.modesKept()
}

// TestWatchCountLeavesTheLastScreen: a watch on a terminal that ends by itself
// (--count) gives the alternate screen back and then leaves its last screen on the
// terminal's own, as a snapshot to read once it is over (naming no keys: none work
// any more); q still gives the terminal back as it was (TestWatchInATerminal).
func TestWatchCountLeavesTheLastScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildNarad(t)
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	cmd := exec.Command(bin, "status", "--watch", "--count", "2", "--interval", "100ms", "-s", b.URL())
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "NO_COLOR=1", "TZ=UTC"}
	r := startInPTY(t, cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if werr := r.end("--count 2"); werr != nil {
		t.Errorf("exit: %v; the terminal showed %q", werr, r.screen.String())
	}
	out := r.screen.String()
	i := strings.LastIndex(out, "\x1b[?1049l")
	if i < 0 {
		t.Fatalf("the alternate screen was not given back: %q", out)
	}
	left := out[i+len("\x1b[?1049l"):]
	lines := strings.Split(strings.TrimSuffix(left, "\r\n"), "\r\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "narad status · ") || !strings.HasPrefix(lines[1], "refreshed ") ||
		!strings.HasPrefix(lines[2], "TOPIC ") || !strings.HasPrefix(lines[3], "orders ") {
		t.Errorf("the last screen is not left on the terminal; after the alternate screen: %q", left)
	}
	// The second refresh, with its rates, is the one left.
	if !strings.Contains(left, " 0.0") || strings.Contains(left, "q quits") || strings.Contains(left, "\x1b[H") {
		t.Errorf("left on the terminal: %q", left)
	}
	r.modesKept()
}
