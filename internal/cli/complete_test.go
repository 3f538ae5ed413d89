package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// completeEnv runs narad in-process against one config file and environment.
type completeEnv struct {
	t       *testing.T
	env     map[string]string
	timeout time.Duration
}

func newCompleteEnv(t *testing.T, server string) *completeEnv {
	t.Helper()
	return &completeEnv{t: t, env: map[string]string{
		"NARAD_CONFIG": filepath.Join(t.TempDir(), "config.yaml"),
		"NARAD_ADDR":   server,
	}}
}

func (e *completeEnv) run(args ...string) cliResult {
	e.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := &Factory{IO: ios, Getenv: func(k string) string { return e.env[k] }, Now: time.Now, Signals: NewSignals(),
		CompletionTimeout: e.timeout}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

// complete is `narad __complete ARGS...`: the offered values (descriptions cut
// off) and the directive line.
func (e *completeEnv) complete(args ...string) (values []string, directive string) {
	e.t.Helper()
	r := e.run(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if r.code != 0 {
		e.t.Fatalf("__complete %q: exit %d, stderr %q", args, r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "narad:") {
		e.t.Errorf("__complete %q wrote an error: %q", args, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	directive = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}

const noFiles = ":4" // cobra.ShellCompDirectiveNoFileComp

func startBroker(t *testing.T, topics ...string) *devbroker.Broker {
	t.Helper()
	cfg := devbroker.Config{Addr: "127.0.0.1:0"}
	for _, s := range topics {
		spec, err := devbroker.ParseTopicFlag(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Topics = append(cfg.Topics, spec)
	}
	b, err := devbroker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestCompleteTopicsWhereATopicIsExpected(t *testing.T) {
	b := startBroker(t, "orders:5", "payments:3", "other:3")
	e := newCompleteEnv(t, b.URL())

	// Every command whose first argument is a topic (create names a new one).
	root := NewRootCmd(&Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()})
	var paths [][]string
	walkCommands(root, func(c *cobra.Command) {
		if firstArgName(c.Use) == "TOPIC" && c.Name() != "create" {
			paths = append(paths, strings.Fields(c.CommandPath())[1:])
		}
	})
	if len(paths) < 8 {
		t.Fatalf("only %d commands take a TOPIC: %q", len(paths), paths)
	}
	for _, p := range paths {
		got, dir := e.complete(append(p, "o")...)
		if !slices.Equal(got, []string{"orders", "other"}) || dir != noFiles {
			t.Errorf("%q TAB: %q %s, want [orders other] %s", p, got, dir, noFiles)
		}
	}

	for _, tc := range []struct {
		args []string
		want []string
		dir  string
	}{
		{[]string{"topic", "create", ""}, nil, noFiles},
		{[]string{"sub", "orders", ""}, nil, ":0"}, // a command may follow --
		{[]string{"produce", "orders", ""}, nil, noFiles},
		{[]string{"ack", "orders", ""}, nil, noFiles}, // handles: nothing
		{[]string{"replay", "orders", ""}, nil, noFiles},
		{[]string{"sub", "orders", "--partition", ""}, []string{"0", "1", "2", "3", "4"}, noFiles},
		{[]string{"replay", "payments", "--partition", "1"}, []string{"1"}, noFiles},
		{[]string{"sub", "--partition", ""}, nil, noFiles}, // no topic yet
	} {
		got, dir := e.complete(tc.args...)
		if !slices.Equal(got, tc.want) || dir != tc.dir {
			t.Errorf("%q TAB: %q %s, want %q %s", tc.args, got, dir, tc.want, tc.dir)
		}
	}
}

func iostreamsTest() *iostreams.IOStreams {
	ios, _, _, _ := iostreams.Test()
	return ios
}

func TestCompleteFlagValues(t *testing.T) {
	e := newCompleteEnv(t, "http://127.0.0.1:1")
	for _, tc := range []struct {
		args []string
		want []string
		dir  string
	}{
		{[]string{"sub", "x", "-o", ""}, []string{"text", "json", "raw"}, noFiles},
		{[]string{"replay", "x", "--output", "r"}, []string{"raw"}, noFiles},
		{[]string{"topic", "ls", "-o", ""}, []string{"text", "json"}, noFiles},
		{[]string{"ack", "x", "-o", ""}, []string{"text", "json"}, noFiles},
		{[]string{"version", "-o", ""}, []string{"text", "json"}, noFiles},
		{[]string{"--color", ""}, []string{"auto", "always", "never"}, noFiles},
		{[]string{"sub", "x", "--color", "n"}, []string{"never"}, noFiles},
		{[]string{"sub", "x", "--stats="}, []string{"text", "json"}, noFiles},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, noFiles},
		// Values that are not paths offer no file names; paths do.
		{[]string{"sub", "x", "--count", ""}, nil, noFiles},
		{[]string{"sub", "x", "--template", ""}, nil, noFiles},
		{[]string{"produce", "x", "--key", ""}, nil, noFiles},
		{[]string{"-u", ""}, nil, noFiles},
		{[]string{"produce", "x", "--file", ""}, nil, ":0"},
		{[]string{"--config", ""}, nil, ":0"},
		{[]string{"--ca-cert", ""}, nil, ":0"},
		{[]string{"topic", "ls", ""}, nil, noFiles},
	} {
		got, dir := e.complete(tc.args...)
		if !slices.Equal(got, tc.want) || dir != tc.dir {
			t.Errorf("%q TAB: %q %s, want %q %s", tc.args, got, dir, tc.want, tc.dir)
		}
	}
}

func TestCompleteContextsAndServers(t *testing.T) {
	e := newCompleteEnv(t, "")
	for _, args := range [][]string{
		{"context", "add", "local", "--server", "http://127.0.0.1:7942"},
		{"context", "add", "prod", "--server", "https://narad.example.com", "--user", "app", "--password", "s3cret"},
		{"context", "add", "staging", "--server", "staging.example.com:7942"},
	} {
		if r := e.run(args...); r.code != 0 {
			t.Fatalf("%q: exit %d %s", args, r.code, r.stderr)
		}
	}
	// A hand-edited context with a password in its URL is never offered as a server.
	cfg, err := os.ReadFile(e.env["NARAD_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("    leaky:\n        server: http://u:SECRET@leaky.example.com\n")...)
	if err := os.WriteFile(e.env["NARAD_CONFIG"], cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	all := []string{"leaky", "local", "prod", "staging"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"context", "use", ""}, all},
		{[]string{"context", "show", ""}, all},
		{[]string{"context", "rm", "p"}, []string{"prod"}},
		{[]string{"context", "add", ""}, nil}, // a new name
		{[]string{"context", "use", "prod", ""}, nil},
		{[]string{"--context", ""}, all},
		{[]string{"sub", "orders", "--context", "s"}, []string{"staging"}},
		{[]string{"-s", ""}, []string{"http://127.0.0.1:7942", "http://staging.example.com:7942", "https://narad.example.com"}},
	} {
		got, dir := e.complete(tc.args...)
		if !slices.Equal(got, tc.want) || dir != noFiles {
			t.Errorf("%q TAB: %q %s, want %q %s", tc.args, got, dir, tc.want, noFiles)
		}
	}
	r := e.run(cobra.ShellCompRequestCmd, "context", "use", "")
	if !strings.Contains(r.stdout, "local\thttp://127.0.0.1:7942 (current)\n") {
		t.Errorf("the current context is not described as such:\n%s", r.stdout)
	}
	r = e.run(cobra.ShellCompRequestCmd, "-s", "")
	if strings.Contains(r.stdout+r.stderr, "SECRET") {
		t.Errorf("completion showed a password:\n%s%s", r.stdout, r.stderr)
	}
}

// A context's server is a hand-edited file's text: in a completion's description (which
// the shell shows on the terminal) its control characters are escaped, and a newline or
// tab cannot add a completion of its own.
func TestCompleteContextDescriptionsAreEscaped(t *testing.T) {
	e := newCompleteEnv(t, "")
	cfg := "contexts:\n  a:\n    server: \"http://h:1/\\e]0;x\\a\\u009b\\u202e\\nfake\\tentry\"\n"
	if err := os.WriteFile(e.env["NARAD_CONFIG"], []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run(cobra.ShellCompRequestCmd, "context", "use", "")
	if strings.ContainsAny(r.stdout, "\x1b\a\u009b\u202e") {
		t.Errorf("a description carries raw control characters: %q", r.stdout)
	}
	if want := "a\thttp://h:1/\\x1b]0;x\\x07\\u009b\\u202e\\nfake\\tentry\n:4\n"; r.stdout != want {
		t.Errorf("completion %q, want %q", r.stdout, want)
	}
}

// A server completed is typed into the shell's line and shown in its menu: a
// hand-edited context's server with a C1 control or a bidi or zero-width character in
// it is not offered (it would reach the terminal raw), nor taken by a command.
func TestCompleteServersOfferNoInvisibleCharacters(t *testing.T) {
	e := newCompleteEnv(t, "")
	// In the path: a command run before the fix dialled 127.0.0.1, nothing else.
	cfg := "contexts:\n  a:\n    server: \"http://127.0.0.1:1/\\u009bx\"\n  b:\n    server: \"http://127.0.0.1:1/\\u202ep\"\n" +
		"  c:\n    server: \"http://127.0.0.1:1/\\u200b\"\n  d:\n    server: http://127.0.0.1:4\n"
	if err := os.WriteFile(e.env["NARAD_CONFIG"], []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := e.complete("-s", "")
	if want := []string{"http://127.0.0.1:4", "http://127.0.0.1:7942"}; !slices.Equal(got, want) {
		t.Errorf("-s TAB: %q, want %q", got, want)
	}
	for _, name := range []string{"a", "b", "c"} {
		r := e.run("--context", name, "topic", "ls")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "narad: invalid server ") || strings.ContainsAny(r.stderr, "\u009b\u202e\u200b") {
			t.Errorf("context %s: exit %d, stderr %q; want 2, invalid server, escaped", name, r.code, r.stderr)
		}
	}
}

// A node that is down, hangs, or sends names no topic can have completes nothing
// and says nothing; the hang is cut off by the completion timeout.
func TestCompleteTopicsSilentOnFailure(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"topics":[{"name":"ok-topic","partitions":1},{"name":"\u001b]0;owned\u0007","partitions":1},{"name":"a b","partitions":1}]}`))
	}))
	defer hostile.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"forbidden"}`, http.StatusForbidden)
	}))
	defer denied.Close()

	for _, tc := range []struct {
		server string
		want   []string
	}{
		{"http://127.0.0.1:1", nil},
		{hang.URL, nil},
		{denied.URL, nil},
		{hostile.URL, []string{"ok-topic"}},
	} {
		e := newCompleteEnv(t, tc.server)
		e.timeout = 50 * time.Millisecond
		got, dir := e.complete("sub", "")
		if !slices.Equal(got, tc.want) || dir != noFiles {
			t.Errorf("%s: %q %s, want %q %s", tc.server, got, dir, tc.want, noFiles)
		}
	}
}

// The bash script cobra writes needs the bash-completion package; ours also
// carries a way for plain bash, and still defers to the package where it is.
func TestBashCompletionWorksWithoutThePackage(t *testing.T) {
	r := newCompleteEnv(t, "").run("completion", "bash")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "COMP_LINE:0:COMP_POINT") || !strings.Contains(r.stdout, "_get_comp_words_by_ref \"$@\" cur prev words cword") {
		t.Errorf("bash completion lacks the plain-bash fallback or the package call")
	}
}

// Every argument and flag that takes an existing topic completes the node's topics.
// What takes a topic is found here apart from complete.go: an argument the usage line
// names TOPIC, PARENT or CHILD, and a string flag whose text says its value is a topic.
// Only what names a topic that does not exist yet is left out: topic create's own
// TOPIC and narad dev's --topic (it is the node).
func TestEveryTopicArgumentAndFlagCompletesTopics(t *testing.T) {
	b := startBroker(t, "orders:5", "payments:3", "other:3")
	e := newCompleteEnv(t, b.URL())
	want := []string{"orders", "other"}
	checked := 0
	for _, c := range everyCommand() {
		path := strings.Fields(c.CommandPath())[1:]
		if !c.Runnable() || c.Name() == "help" {
			continue
		}
		var names []string // the usage line's arguments, up to its flags
		for _, w := range strings.Fields(c.Use)[1:] {
			if w = strings.Trim(w, "[]"); w == "" || w == "flags" || strings.HasPrefix(w, "-") {
				break
			}
			names = append(names, w)
		}
		for i, n := range names {
			n = strings.TrimSuffix(n, "...")
			if (n != "TOPIC" && n != "PARENT" && n != "CHILD") || (c.Name() == "create" && i == 0) {
				continue
			}
			args := append(slices.Clone(path), slices.Repeat([]string{"payments"}, i)...)
			got, _ := e.complete(append(args, "o")...)
			checked++
			if !slices.Equal(got, want) {
				t.Errorf("narad %s: argument %d (%s) completes %q, want %q", strings.Join(path, " "), i+1, n, got, want)
			}
			if strings.HasSuffix(names[i], "...") {
				// A repeated topic: the next one completes too.
				got, _ := e.complete(append(args, "payments", "o")...)
				if !slices.Equal(got, want) {
					t.Errorf("narad %s: a second %s completes %q", strings.Join(path, " "), n, got)
				}
			}
		}
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			usage := strings.ToLower(fl.Usage)
			takesTopic := (fl.Value.Type() == "string" || fl.Value.Type() == "stringArray") &&
				strings.Contains(strings.ReplaceAll(usage, "topic's", ""), "topic")
			if !takesTopic || (c.Name() == "dev" && fl.Name == "topic") {
				return
			}
			args := append(slices.Clone(path), "payments", "--"+fl.Name, "o")
			got, _ := e.complete(args...)
			checked++
			if !slices.Equal(got, want) {
				t.Errorf("narad %s --%s (%q) completes %q, want %q", strings.Join(path, " "), fl.Name, fl.Usage, got, want)
			}
		})
	}
	if checked < 15 {
		t.Errorf("only %d topic arguments and flags found", checked)
	}
}

// firstArgName is the first argument in a usage line, without brackets:
// "sub TOPIC [flags]" -> "TOPIC", "show [NAME]" -> "NAME".
func firstArgName(use string) string {
	if names := argNames(use); len(names) > 0 {
		return names[0]
	}
	return ""
}
