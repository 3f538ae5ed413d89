package cli

import (
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/config"
)

// A typo at any level is answered with the near miss, in one line, exit 2.
func TestTyposGetSuggestions(t *testing.T) {
	e := newCompleteEnv(t, "")
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"sbu", "orders"}, `narad: unknown command "sbu" for "narad" (did you mean sub? see narad --help)`},
		{[]string{"topic", "lss"}, `narad: unknown command "lss" for "narad topic" (did you mean ls? see narad topic --help)`},
		{[]string{"topic", "craete", "x"}, `narad: unknown command "craete" for "narad topic" (did you mean create? see narad topic --help)`},
		{[]string{"context", "shwo"}, `narad: unknown command "shwo" for "narad context" (did you mean show? see narad context --help)`},
		{[]string{"topic", "zzzzzz"}, `narad: unknown command "zzzzzz" for "narad topic" (see narad topic --help)`},
		{[]string{"sub", "orders", "--cout", "1"}, `narad: unknown flag: --cout (did you mean --count? see --help)`},
		{[]string{"sub", "orders", "--tmplate", "x"}, `narad: unknown flag: --tmplate (did you mean --template? see --help)`},
		{[]string{"topic", "ls", "--outptu", "json"}, `narad: unknown flag: --outptu (did you mean --output? see --help)`},
		{[]string{"--colr", "never", "version"}, `narad: unknown flag: --colr (did you mean --color? see --help)`},
		{[]string{"topic", "create", "x", "--partitons", "3"}, `narad: unknown flag: --partitons (did you mean --partitions? see --help)`},
		{[]string{"version", "--zzzzzzzz"}, `narad: unknown flag: --zzzzzzzz (see --help)`},
	} {
		r := e.run(tc.args...)
		if r.code != ExitUsage || r.stderr != tc.line+"\n" || r.stdout != "" {
			t.Errorf("%q: exit %d stderr %q stdout %q\nwant exit 2 and %q", tc.args, r.code, r.stderr, r.stdout, tc.line)
		}
	}
}

func TestNearFlags(t *testing.T) {
	root := NewRootCmd(&Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()})
	sub, _, err := root.Find([]string{"sub"})
	if err != nil {
		t.Fatal(err)
	}
	sub.InitDefaultHelpFlag()
	for typed, want := range map[string]string{
		"cout":       "count",
		"Count":      "count",
		"drian":      "drain",
		"from-begin": "from-beginning", // a prefix
		"servr":      "server",         // inherited from the root
	} {
		got := nearFlags(sub.Flags(), typed)
		if len(got) == 0 || got[0] != want {
			t.Errorf("nearFlags(%q) = %q, want %q first", typed, got, want)
		}
	}
	if got := nearFlags(sub.Flags(), "xyzzy-plugh"); len(got) != 0 {
		t.Errorf("nearFlags(xyzzy-plugh) = %q, want none", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"count", "count", 0}, {"cout", "count", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"drian", "drain", 2}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
		if got := editDistance(tc.b, tc.a); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.d)
		}
	}
}

// narad --help lists the commands in groups, as gh does, and every command is in one.
func TestHelpGroupsCommands(t *testing.T) {
	r := newCompleteEnv(t, "").run("--help")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var at []int
	for _, title := range []string{"Messages:", "Topics and admin:", "Local broker:", "Setup:"} {
		i := strings.Index(r.stdout, "\n"+title+"\n")
		if i < 0 {
			t.Fatalf("no group %q in:\n%s", title, r.stdout)
		}
		at = append(at, i)
	}
	for i := 1; i < len(at); i++ {
		if at[i] < at[i-1] {
			t.Errorf("groups out of order:\n%s", r.stdout)
		}
	}
	if strings.Contains(r.stdout, "Additional Commands:") {
		t.Errorf("a command is outside every group:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "gen-docs") {
		t.Errorf("the hidden gen-docs is listed:\n%s", r.stdout)
	}
}

// Every command a user can see shows an example, and every example runs narad.
func TestEveryCommandHasExamples(t *testing.T) {
	root := NewRootCmd(&Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()})
	walkCommands(root, func(c *cobra.Command) {
		if !c.IsAvailableCommand() || c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
			return
		}
		if !strings.Contains(c.Example, c.CommandPath()) {
			t.Errorf("%s: no example runs it:\n%s", c.CommandPath(), c.Example)
		}
	})
}

// extend and nack say what they do to a lease, not only their names.
func TestSettleHelpSaysWhatItDoes(t *testing.T) {
	e := newCompleteEnv(t, "")
	for cmd, words := range map[string][]string{
		"extend": {"visibility timeout", "lease"},
		"nack":   {"given back", "redelivered"},
		"ack":    {"never", "again"},
	} {
		r := e.run(cmd, "--help")
		for _, w := range words {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("narad %s --help does not say %q:\n%s", cmd, w, r.stdout)
			}
		}
	}
}

func TestVersionFlagMatchesVersionCommand(t *testing.T) {
	e := newCompleteEnv(t, "")
	flag, cmd := e.run("--version"), e.run("version")
	if flag.code != 0 || cmd.code != 0 || flag.stdout != cmd.stdout || !strings.HasPrefix(flag.stdout, "narad ") {
		t.Errorf("--version %q (exit %d), version %q (exit %d)", flag.stdout, flag.code, cmd.stdout, cmd.code)
	}
}

// Connection refused at the default address is most likely a first run: the hint
// says how to start a broker. Elsewhere it says to check the address.
func TestRefusedAtDefaultServerSuggestsDev(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: config.DefaultServer + "/v1/topics",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	f := &Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()}
	for server, want := range map[string]string{
		config.DefaultServer:    "(no broker at http://127.0.0.1:7942; start one with narad dev, or pass --server)",
		"http://127.0.0.1:7943": "(cannot reach http://127.0.0.1:7943; check --server or the context)",
	} {
		c, err := client.New(client.Config{BaseURL: server})
		if err != nil {
			t.Fatal(err)
		}
		err = f.runEnv().apiFatal(c, refused, "")
		if !strings.HasSuffix(err.Error(), want) || exitCodeFor(err) != ExitFailed {
			t.Errorf("%s: %q (exit %d), want it to end %q", server, err, exitCodeFor(err), want)
		}
	}
	// Refused somewhere else than the default: no narad dev.
	timeout := &url.Error{Op: "Get", URL: config.DefaultServer, Err: errors.New("i/o timeout")}
	c, _ := client.New(client.Config{BaseURL: config.DefaultServer})
	if err := f.runEnv().apiFatal(c, timeout, ""); strings.Contains(err.Error(), "narad dev") {
		t.Errorf("a timeout suggests narad dev: %v", err)
	}
}

// The help of what creates or grows a topic states the limits a node enforces, so
// nobody learns them from a 400.
func TestHelpStatesTheNodesLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"topic", "create", "--help"}, []string{"3 to 108 partitions", "^[A-Za-z0-9._-]{1,255}$", "3..108"}},
		{[]string{"topic", "edit", "--help"}, []string{"at most 108"}},
		{[]string{"bench", "--help"}, []string{"3..108"}},
		{[]string{"dev", "--help"}, []string{"3..108"}},
	} {
		code, out, _ := runTree(t, tc.args, newRootFor)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), w) {
				t.Errorf("narad %s: exit %d, no %q in:\n%s", strings.Join(tc.args, " "), code, w, out)
			}
		}
	}
}
