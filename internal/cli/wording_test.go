package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// runIn runs narad in-process against server with stdin and the terminal facts given.
func runIn(t *testing.T, stdin string, stdinTTY bool, args ...string) cliResult {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	ios.SetTTY(stdinTTY, false, false)
	env := map[string]string{"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml")}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

// Each line a user reads says a thing once, in words, and says it right.
func TestErrorLinesSayItOnceAndRight(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0",
		Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}, {Name: "audit", Partitions: 3}},
		Users: []devbroker.User{
			mustUser(t, "ops:pw:admin"),
			mustUser(t, "app:pw:consume:orders,produce:orders"),
		},
		Faults: []devbroker.FaultRule{mustFault(t, "produce=503:1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := b.URL()
	for _, tc := range []struct {
		args []string
		code int
		line string
	}{
		// The line starts with narad: already.
		{[]string{"sub"}, ExitUsage, "narad: sub takes a topic (see narad sub --help)"},
		{[]string{"topic", "info"}, ExitUsage, "narad: topic info takes one topic (see narad topic info --help)"},
		{[]string{"cluster"}, ExitUsage, "narad: cluster needs a subcommand: members, moves or decommission (see narad cluster --help)"},
		{[]string{"context", "add", "x"}, ExitUsage, "narad: context add needs --server URL (see narad context add --help)"},
		// The node said which grant is missing: no hint that says it again.
		{[]string{"topic", "create", "x", "-s", s, "-u", "app", "-p", "pw"}, ExitFailed,
			`narad: create topic: 403 user "app" lacks a create grant for topic "x"`},
		// Said to an admin: the node's reason, not "needs admin".
		{[]string{"user", "rm", "ops", "--yes", "-s", s, "-u", "ops", "-p", "pw"}, ExitFailed,
			`narad: delete user: 403 the root admin "ops" cannot be deleted`},
		// A bad number in words, not the Go parser's error.
		{[]string{"sub", "orders", "--count", "abc"}, ExitUsage, `narad: invalid --count "abc": not a whole number (see --help)`},
		{[]string{"sub", "orders", "--wait", "soon"}, ExitUsage, `narad: invalid --wait "soon": not a duration (e.g. 500ms, 30s, 1h30m) (see --help)`},
		{[]string{"sub", "orders", "-j", "99999999999999999999", "--", "true"}, ExitUsage, `narad: invalid --concurrency "99999999999999999999": out of range (see --help)`},
		// Only the flag that was typed.
		{[]string{"sub", "orders", "--offset", "3"}, ExitUsage, "narad: --offset needs --peek (or use narad replay)"},
		{[]string{"sub", "orders", "--from-beginning"}, ExitUsage, "narad: --from-beginning needs --peek (or use narad replay)"},
	} {
		r := runIn(t, "", false, tc.args...)
		if r.code != tc.code || r.stderr != tc.line+"\n" {
			t.Errorf("narad %s: exit %d, stderr %q\nwant exit %d, %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.line)
		}
	}

	// An injected fault does not say its status twice.
	r := runIn(t, "", false, "produce", "orders", "m", "-s", s, "-u", "app", "-p", "pw")
	if r.code != ExitFailed || strings.Contains(r.stderr, "503 Service Unavailable") || !strings.Contains(r.stderr, "503 injected fault") {
		t.Errorf("produce into a fault: exit %d, stderr %q", r.code, r.stderr)
	}

	// No "orders's": the prompt names the topics without a possessive.
	r = runIn(t, "n\n", true, "topic", "detach", "orders", "audit", "-s", s, "-u", "ops", "-p", "pw")
	if !strings.HasPrefix(r.stderr, "Stop copying the new messages of orders into audit? [y/N] ") {
		t.Errorf("detach prompt: %q", r.stderr)
	}
}

func mustUser(t *testing.T, spec string) devbroker.User {
	u, err := devbroker.ParseUser(spec)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustFault(t *testing.T, spec string) devbroker.FaultRule {
	r, err := devbroker.ParseFault(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
