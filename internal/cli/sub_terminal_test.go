package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// subBroker starts a devbroker with topic t holding the given payloads.
func subBroker(t *testing.T, payloads ...string) *devbroker.Broker {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, p := range payloads {
		if _, _, err := b.Produce("t", "", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// runTTY runs narad in-process with stdout and stderr terminals as given; during, if
// set, runs alongside with the run's Signals.
func runTTY(t *testing.T, stdoutTTY, stderrTTY bool, during func(*Signals), args ...string) cliResult {
	t.Helper()
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(false, stdoutTTY, stderrTTY)
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	if during != nil {
		go during(f.Signals)
	}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

func TestSubOnATerminalSaysWhatItDoes(t *testing.T) {
	b := subBroker(t, "a", "b")
	r := runTTY(t, true, true, nil, "sub", "t", "-s", b.URL(), "--count", "2", "-o", "raw")
	want := "consuming t on " + b.URL() + ": acked once printed (Ctrl-C to stop)\n" +
		"received 2, acked 2\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	// --peek takes nothing, and says so.
	r = runTTY(t, true, true, nil, "sub", "t", "-s", b.URL(), "--peek", "--from-beginning", "--count", "2")
	if want := "watching t on " + b.URL() + ": takes nothing (Ctrl-C to stop)\n"; r.code != 0 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("peek: exit %d, stderr %q, want it to start with %q", r.code, r.stderr, want)
	}
	if _, _, err := b.Produce("t", "", []byte("c")); err != nil {
		t.Fatal(err)
	}
	r = runTTY(t, true, true, nil, "sub", "t", "-s", b.URL(), "--count", "1", "--no-ack")
	if !strings.Contains(r.stderr, ": not acked (--no-ack) (Ctrl-C to stop)") {
		t.Errorf("--no-ack: stderr %q", r.stderr)
	}
}

func TestSubNotATerminalSaysNothing(t *testing.T) {
	b := subBroker(t, "a")
	r := runTTY(t, false, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw")
	if r.code != 0 || r.stderr != "" || r.stdout != "a\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want the message and nothing on stderr", r.code, r.stdout, r.stderr)
	}
}

// TestSubStatsTableFits: --stats on a terminal is the table, and it fits in 80
// columns (a bordered one-row table of every counter would not).
func TestSubStatsTableFits(t *testing.T) {
	b := subBroker(t, "a")
	r := runTTY(t, true, true, nil, "sub", "t", "-s", b.URL(), "--count", "1", "--stats", "--color", "always")
	summary := r.stderr
	if _, after, ok := strings.Cut(r.stderr, "(Ctrl-C to stop)\n"); ok {
		summary = after // the banner says what the issue asks for, at the URL's length
	}
	for _, line := range strings.Split(summary, "\n") {
		if w := len([]rune(stripSGR(line))); w > 80 {
			t.Errorf("line of %d columns: %q", w, line)
		}
	}
	if !strings.Contains(r.stderr, "lease_lost") {
		t.Errorf("no table: %q", r.stderr)
	}
}

// stripSGR drops colour escapes, to measure what the terminal shows.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestSubFatalErrorWithoutZeroSummary: a run that failed before anything happened
// prints the error alone, not a row of zeros in front of it.
func TestSubFatalErrorWithoutZeroSummary(t *testing.T) {
	b := subBroker(t)
	r := runTTY(t, true, true, nil, "sub", "nosuch", "-s", b.URL(), "--count", "1")
	if r.code != ExitFailed || strings.Contains(r.stderr, "received") {
		t.Errorf("exit %d, stderr:\n%s\nwant the error alone", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "narad: ") {
		t.Errorf("no error line: %q", r.stderr)
	}
}

// TestSubSummaryAfterCtrlC: the terminal echoes ^C where the cursor is; the summary
// starts on a fresh line.
func TestSubSummaryAfterCtrlC(t *testing.T) {
	// stderr is checked whole: no line about the consume out, which a loaded machine
	// can answer more than a second past its long poll (the line then says so).
	noteStoppingAfter(t, time.Hour, nil)
	b := subBroker(t)
	r := runTTY(t, true, true, func(s *Signals) {
		for deadline := time.Now().Add(20 * time.Second); b.Requests("consume") == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		s.Trigger(syscall.SIGINT)
	}, "sub", "t", "-s", b.URL(), "--wait", "30s")
	if !strings.HasSuffix(r.stderr, "(Ctrl-C to stop)\n\nreceived 0, acked 0\n") {
		t.Errorf("stderr %q: want the summary on a line of its own after ^C", r.stderr)
	}
}

// TestRawOnATerminalIsEscaped: -o raw to a terminal cannot set the window title or
// clear the screen, unless --unsafe-raw; to a file or pipe the bytes are exact.
func TestRawOnATerminalIsEscaped(t *testing.T) {
	hostile := "\x1b]0;pwned\x07\x1b[2J\u202eok"
	b := subBroker(t, hostile, hostile, hostile)
	r := runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw")
	if want := `\x1b]0;pwned\x07\x1b[2J\u202eok` + "\n"; r.stdout != want {
		t.Errorf("terminal: %q, want %q", r.stdout, want)
	}
	r = runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw", "--unsafe-raw")
	if r.stdout != hostile+"\n" {
		t.Errorf("--unsafe-raw: %q", r.stdout)
	}
	r = runTTY(t, false, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw")
	if r.stdout != hostile+"\n" {
		t.Errorf("not a terminal: %q", r.stdout)
	}
	r = runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "--unsafe-raw")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--unsafe-raw needs -o raw") {
		t.Errorf("--unsafe-raw without -o raw: exit %d, %q", r.code, r.stderr)
	}
}

// TestTagCharactersAreEscaped: the Unicode tag characters (U+E0000..U+E007F, which
// spell out ASCII no one sees) and the other invisible format characters in a key or
// a payload reach a terminal as visible escapes, as bidi controls do; -o json keeps the
// same string (escaped as JSON spells a character beyond the BMP), and -o raw to a file
// or pipe the exact bytes.
func TestTagCharactersAreEscaped(t *testing.T) {
	hidden := "ok\U000E0069\U000E0067\U000E006E\U000E007F\u2062\u206a\u180e\U0001D173!"
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for range 4 {
		if _, _, err := b.Produce("t", "k"+hidden, []byte(hidden)); err != nil {
			t.Fatal(err)
		}
	}
	const shown = `ok\U000e0069\U000e0067\U000e006e\U000e007f\u2062\u206a\u180e\U0001d173!`
	r := runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1")
	if !strings.Contains(r.stdout, "key=k"+shown) || !strings.HasSuffix(r.stdout, " "+shown+"\n") {
		t.Errorf("text on a terminal: %q, want key and payload %q", r.stdout, shown)
	}
	r = runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw")
	if r.stdout != shown+"\n" {
		t.Errorf("raw on a terminal: %q, want %q", r.stdout, shown+"\n")
	}
	r = runTTY(t, false, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "raw")
	if r.stdout != hidden+"\n" {
		t.Errorf("raw, not a terminal: %q, want the exact bytes", r.stdout)
	}
	r = runTTY(t, true, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-o", "json")
	var got struct{ Key, Payload string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Key != "k"+hidden || got.Payload != hidden {
		t.Errorf("json: %q (%v): want the same key and payload", r.stdout, err)
	}
	if !strings.Contains(r.stdout, `"payload":"ok\udb40\udc69\udb40\udc67\udb40\udc6e\udb40\udc7f\u2062\u206a\u180e\ud834\udd73!"`) {
		t.Errorf("json: %q, want the invisible characters escaped", r.stdout)
	}
}

// What sub and narad dev say on a terminal fits its width: at the default address a
// line each within 80 columns; a topic name too long for one line is broken at spaces.
func TestBannersFitTheTerminal(t *testing.T) {
	b := subBroker(t, "a")
	for _, args := range [][]string{
		{"sub", "t", "--count", "1", "--no-ack"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "1"},
	} {
		r := runTTY(t, true, true, nil, append(args, "-s", b.URL())...)
		for _, l := range strings.Split(r.stderr, "\n") {
			if w := len([]rune(l)); w > 80 {
				t.Errorf("%q: line of %d columns: %q", args, w, l)
			}
		}
	}
	// The default address is the longest a local one gets: each banner fits as one line.
	long := "http://127.0.0.1:7942"
	for _, what := range []string{"acked once printed", "acked once read", "not acked (--no-ack)"} {
		if line := "consuming orders on " + long + ": " + what + " (Ctrl-C to stop)"; len(line) > 80 {
			t.Errorf("banner of %d columns: %q", len(line), line)
		}
	}
}

// The dev banner is two lines at most 80 wide, whatever the terminal does not say.
func TestDevBannerFits(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := &Factory{IO: ios, Getenv: func(string) string { return "" }, Now: time.Now, Signals: NewSignals()}
	f.runEnv().notice("narad dev: listening on http://127.0.0.1:7942 (Ctrl-C to stop)\n  auth on, 2 users; topics: orders, payments, " + strings.Repeat("x", 30) + ", invoices")
	for _, l := range strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n") {
		if len(l) > 80 {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
	if n := strings.Count(errOut.String(), "\n"); n != 3 {
		t.Errorf("%d lines, want 3 (the topics wrapped once):\n%s", n, errOut.String())
	}
}

// Exec mode on a terminal says what it runs, how many at once, and that Ctrl-C lets
// running commands finish; off a terminal it says nothing.
func TestExecOnATerminalSaysWhatItRuns(t *testing.T) {
	b := subBroker(t, "a")
	r := runTTY(t, false, true, nil, "sub", "t", "-s", b.URL(), "--count", "1", "-j", "4", "--", "true")
	want := "running true for each message of t (-j 4: 4 at a time)\n" +
		"  on " + b.URL() + "; Ctrl-C lets running commands finish (up to 30s)\n"
	if r.code != 0 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant it to start with:\n%s", r.code, r.stderr, want)
	}
	if _, _, err := b.Produce("t", "", []byte("b")); err != nil {
		t.Fatal(err)
	}
	r = runTTY(t, false, false, nil, "sub", "t", "-s", b.URL(), "--count", "1", "--", "true")
	if r.code != 0 || strings.Contains(r.stderr, "running") {
		t.Errorf("off a terminal: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRoundDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * time.Second: "30s", time.Minute: "1m", 90 * time.Minute: "1h30m", time.Hour: "1h", 1500 * time.Millisecond: "1.5s"} {
		if got := roundDuration(d); got != want {
			t.Errorf("roundDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestBannersWriteTheGraceAsTyped: exec mode's and the canary's banners name
// --shutdown-grace as a user writes it ("1m", not Go's "1m0s").
func TestBannersWriteTheGraceAsTyped(t *testing.T) {
	b := subBroker(t, "a", "b")
	for _, args := range [][]string{
		{"sub", "t", "--count", "1", "--shutdown-grace", "1m"},
		{"sub", "t", "--peek", "--from-beginning", "--count", "1", "--shutdown-grace", "1m"},
	} {
		r := runTTY(t, true, true, nil, append(args, "-s", b.URL(), "--", "true")...)
		if r.code != 0 || !strings.Contains(r.stderr, "(up to 1m)") || strings.Contains(r.stderr, "1m0s") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant the grace as (up to 1m)", args, r.code, r.stderr)
		}
	}
}
