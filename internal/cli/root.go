// Package cli wires the narad commands: flags in, Options out, one file per command.
// Behaviour lives in the packages below it (client, consumer, supervisor, render,
// config, devbroker); nothing imports cli.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// Factory carries what every command needs, injected so tests can replace it.
type Factory struct {
	IO      *iostreams.IOStreams
	Getenv  func(string) string
	Now     func() time.Time
	Signals *Signals
	// ReadSecret asks for a password on the terminal without echo (nil: cannot ask).
	ReadSecret func(prompt string) (string, error)
	// CompletionTimeout bounds what TAB asks the node; zero is the default.
	CompletionTimeout time.Duration

	global globalFlags
	// conn is the connection once resolved: the config file is read, and any
	// --insecure warning printed, once per invocation.
	conn *config.Connection
	root *cobra.Command
	// stdinPassword is what --password-stdin read, once.
	stdinPassword *string
	// curlNoted is set once --curl said where this run's credentials came from.
	curlNoted bool
	// tuneClient adjusts every client's config before it is built (tests: instant
	// backoff, short timeouts).
	tuneClient func(*client.Config)
	// requestTimeout bounds a request that does not long-poll; zero means the
	// client's default. Tests shorten it.
	requestTimeout time.Duration
	// export is the compiled --jq of the running command, nil without one (export.go).
	export *render.JQ
}

type globalFlags struct {
	server, user, password, context, configPath, caCert, color string
	insecure, verbose, curl, passwordStdin                     bool
}

// Main runs narad with args and returns the process exit code.
func Main(args []string) int {
	ios := iostreams.System()
	sigs := ProcessSignals()
	defer sigs.Close()
	f := &Factory{IO: ios, Getenv: os.Getenv, Now: time.Now, Signals: sigs, ReadSecret: terminalSecret(ios.ErrOut, sigs.Soft)}
	return Run(f, args)
}

// Run executes one invocation against f and returns the exit code; it prints the
// one fatal line itself so that no command ever prints a stack trace or usage dump.
func Run(f *Factory, args []string) int {
	// The texts are laid out for 80 columns: a terminal of another width gets cobra's.
	if text, ok := quickHelp(args); ok && f.IO.StdoutWidth() == iostreams.DefaultWidth {
		_, _ = io.WriteString(f.IO.Out, text) // as cobra's help, a closed output is no failure
		return 0
	}
	if len(args) == 1 && args[0] == "version" {
		// The plain `narad version` needs no command tree either: it runs what the
		// tree would.
		return finish(f, versionRun(f, &versionOptions{output: "text"}))
	}
	return run(f, args, newRootFor)
}

// run is Run with the command tree from build (a test compares trees).
func run(f *Factory, args []string, build func(*Factory, []string) *cobra.Command) (code int) {
	defer func() {
		// A panic is a bug, but the user still gets one line and a failing code.
		if r := recover(); r != nil {
			fmt.Fprintf(f.IO.ErrOut, "narad: internal error: %v (please report this)\n", r)
			code = ExitFailed
		}
	}()
	root := build(f, args)
	root.SetArgs(args)
	return finish(f, root.Execute())
}

// finish is the exit code of a run that ended with err, after the one line that
// says why, when it failed.
func finish(f *Factory, err error) (code int) {
	code = exitCodeFor(err)
	if err != nil {
		var ee *exitError
		ours := errors.As(err, &ee)
		if !ours || ee.err != nil {
			line := err.Error()
			if !ours {
				line = unknownCommandLine(line) // cobra's own, with its suggestions below
			}
			// Escaped here, once for every command: the line may quote what the user
			// typed (a flag, a file name) or what a node sent.
			fmt.Fprintf(f.IO.ErrOut, "narad: %s\n", render.Escape(firstLine(line)))
		}
	}
	if sig := f.Signals.Received(); sig != 0 && code != ExitUsage {
		code = signalExitCode(sig)
	}
	return code
}

// firstLine is the first line of s, trimmed: a fatal error is one line on stderr.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// NewRootCmd builds a fresh command tree (no global state: tests build many).
func NewRootCmd(f *Factory) *cobra.Command {
	root := newRoot(f)
	knowVersion(root)
	for _, t := range topCommands() {
		addGroup(root, t.group, t.build(f))
	}
	if gen := newGenDocsCmd(f); gen != nil {
		root.AddCommand(gen)
	}
	strictHelp(root)
	teach(root)
	addCompletions(f, root)
	return root
}

// topCommand is a command of the root, with its name and aliases known before it is
// built (a test keeps them equal to what the command says).
type topCommand struct {
	name    string
	aliases []string
	group   string
	build   func(*Factory) *cobra.Command
}

// topCommands are the root's commands, in the order help lists them.
func topCommands() []topCommand {
	settle := func(name string, a client.Action) func(*Factory) *cobra.Command {
		return func(f *Factory) *cobra.Command { return newSettleCmd(f, name, a) }
	}
	return []topCommand{
		{"sub", nil, "messages", newSubCmd},
		{"produce", []string{"pub"}, "messages", newProduceCmd},
		{"ack", nil, "messages", settle("ack", client.Ack)},
		{"extend", nil, "messages", settle("extend", client.Extend)},
		{"nack", nil, "messages", settle("nack", client.Nack)},
		{"replay", nil, "messages", newReplayCmd},
		{"topic", nil, "admin", newTopicCmd},
		{"user", nil, "admin", newUserCmd},
		{"cluster", nil, "admin", newClusterCmd},
		{"status", nil, "admin", newStatusCmd},
		{"bench", nil, "admin", newBenchCmd},
		{"dev", nil, "local", newDevCmd},
		{"demo", nil, "local", newDemoCmd},
		{"context", nil, "setup", newContextCmd},
		{"version", nil, "setup", newVersionCmd},
		{"completion", nil, "setup", newCompletionCmd},
	}
}

// newRootFor builds the root with only the command args run: building all sixteen
// with their flags was most of what narad's start-up cost beyond its libraries'.
// Cobra's own Find picks the command, on stand-ins that carry only the names, so
// the flags before it are read as cobra reads them. Anything else gets the whole
// tree: no command, help, --version, completion and gen-docs (they describe every
// command), a name cobra does not find (its error suggests the near ones). Flag
// completions are only for completion (cobra's __complete), so they are left out.
func newRootFor(f *Factory, args []string) *cobra.Command {
	root := newRoot(f)
	tops := topCommands()
	// The command first, with no flag before it, is the usual case, and is what Find
	// would find: the stand-ins are only for flags before the command.
	i := -1
	if len(args) > 0 {
		i = slices.IndexFunc(tops, func(t topCommand) bool { return t.name == args[0] || slices.Contains(t.aliases, args[0]) })
	}
	if i < 0 {
		for _, t := range tops {
			root.AddCommand(&cobra.Command{Use: t.name, Aliases: t.aliases, Run: func(*cobra.Command, []string) {}})
		}
		found, _, err := root.Find(args)
		i = slices.IndexFunc(tops, func(t topCommand) bool { return found != nil && t.name == found.Name() })
		if err != nil || i < 0 {
			return NewRootCmd(f)
		}
		root.ResetCommands()
	}
	if tops[i].name == "completion" {
		return NewRootCmd(f)
	}
	addGroup(root, tops[i].group, tops[i].build(f))
	strictHelp(root)
	teach(root)
	return root
}

// newRoot is the root command alone, with the global flags.
func newRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "narad",
		Short: "Work with a Narad message broker from the command line",
		Long: "narad consumes, produces and settles messages on a Narad broker over its HTTP API,\n" +
			"supervises a command per message while holding its lease, and runs a local broker.",
		Example: "  # Try it on this machine: a local broker, a message in, the message out\n" +
			"  narad dev --topic orders:3 &\n" +
			"  narad produce orders '{\"order_id\": \"ord_123\", \"amount\": 4999}'\n" +
			"  narad sub orders --count 1\n\n" +
			"  # Talk to a real node from now on\n" +
			"  narad context add prod --server https://narad.example.com --user app\n" +
			"  narad topic ls",
		SilenceErrors: true,
		SilenceUsage:  true,
		// Our own completion command is in the whole tree; a tree of one command would
		// otherwise get cobra's, built at every run and never reachable.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Annotations[instant] == "" {
				f.Signals.Listen()
			}
			switch f.global.color {
			case "auto", "always", "never":
			default:
				return usageErrorf("invalid --color %q (auto, always or never)", f.global.color)
			}
			f.IO.SetColorMode(f.global.color)
			if f.global.passwordStdin && cmd.Flags().Changed("password") {
				return usageErrorf("--password and --password-stdin cannot be used together")
			}
			return f.resolveExport(cmd)
		},
	}
	f.root = root
	f.conn = nil
	f.stdinPassword = nil
	f.export = nil
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetIn(f.IO.In)
	root.SetFlagErrorFunc(flagError)
	wrapHelp(root, f.IO.StdoutWidth())

	pf := root.PersistentFlags()
	pf.StringVarP(&f.global.server, "server", "s", "", "node to talk to (env NARAD_ADDR; default from the context, else "+config.DefaultServer+")")
	pf.StringVarP(&f.global.user, "user", "u", "", "Basic auth user (env NARAD_USER)")
	pf.StringVarP(&f.global.password, "password", "p", "", "Basic auth password (env NARAD_PASS; better --password-stdin)")
	pf.BoolVar(&f.global.passwordStdin, "password-stdin", false, "read the password from the first line of stdin")
	pf.StringVar(&f.global.context, "context", "", "use this saved context instead of the current one (env NARAD_CONTEXT)")
	pf.StringVar(&f.global.configPath, "config", "", "config file (env NARAD_CONFIG; default $XDG_CONFIG_HOME/narad/config.yaml)")
	pf.StringVar(&f.global.caCert, "ca-cert", "", "extra CA certificate (PEM) for https servers")
	pf.BoolVar(&f.global.insecure, "insecure", false, "do not verify the server's TLS certificate")
	pf.StringVar(&f.global.color, "color", "auto", "colour: auto, always or never (NO_COLOR turns it off)")
	pf.BoolVarP(&f.global.verbose, "verbose", "v", false, "log each HTTP request, status and latency on stderr")
	pf.BoolVar(&f.global.curl, "curl", false, "before each request, print the curl command that makes it on stderr (credentials as $NARAD_USER:$NARAD_PASS)")

	// Groups in the order `narad --help` lists them, as gh does.
	root.AddGroup(
		&cobra.Group{ID: "messages", Title: "Messages:"},
		&cobra.Group{ID: "admin", Title: "Topics and admin:"},
		&cobra.Group{ID: "local", Title: "Local broker:"},
		&cobra.Group{ID: "setup", Title: "Setup:"},
	)
	root.SetHelpCommandGroupID("setup")
	root.Flags().Bool("version", false, "print the version, as narad version does")
	return root
}

// wrapHelp lays out the flags of every command's help for a terminal cols wide (80
// columns off a terminal): each flag's text is wrapped beside its name, as cobra's
// own template does not.
// Its prose is reflowed to the width too; lists and examples are kept as written (a
// test keeps them within 80 columns).
func wrapHelp(root *cobra.Command, cols int) {
	wrapped := fmt.Sprintf(".FlagUsagesWrapped %d", cols-1)
	root.SetUsageTemplate(strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages", wrapped))
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		long := c.Long
		c.Long = render.Reflow(long, cols)
		defer func() { c.Long = long }()
		help(c, args)
	})
}

// instant marks (in Annotations) a command that answers at once: it never waits on
// anything a signal should stop, so signals are not wired for it (see Signals.Listen).
const instant = "narad/instant"

// knowVersion makes --version work on root, printing what `narad version` does. Only
// the whole tree needs it: --version is the root's own flag, and the build info it
// reads costs every other run for nothing.
func knowVersion(root *cobra.Command) {
	v := buildInfo()
	root.Version = v.Version
	root.SetVersionTemplate(versionLine(v) + "\n")
}

func addGroup(root *cobra.Command, id string, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.GroupID = id
		root.AddCommand(c)
	}
}

// strictHelp makes `narad help TOPIC` refuse a topic that is not a command (exit 2,
// one line) instead of printing the usage with exit 0 as cobra's own does.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	help, _, err := root.Find([]string{"help"})
	if err != nil || help == root {
		return
	}
	help.Run = nil
	help.RunE = func(_ *cobra.Command, args []string) error {
		cmd, _, err := root.Find(args)
		if err != nil || cmd == nil {
			return usageErrorf("unknown help topic %q (see narad --help)", strings.Join(args, " "))
		}
		return cmd.Help()
	}
}

// Context is cancelled at the first signal: for commands with nothing to give back.
func (f *Factory) Context() (context.Context, context.CancelFunc) {
	return f.Signals.softContext()
}

// ConfigPath is --config, else NARAD_CONFIG, else the default location.
func (f *Factory) ConfigPath() (string, error) {
	if f.global.configPath != "" {
		return f.global.configPath, nil
	}
	if p := f.Getenv("NARAD_CONFIG"); p != "" {
		return p, nil
	}
	return config.DefaultPath(f.Getenv)
}

// Config loads the config file.
func (f *Factory) Config() (*config.File, error) {
	path, err := f.ConfigPath()
	if err != nil {
		return nil, err
	}
	return config.Load(path)
}

// Connection resolves where to connect and with which credentials.
func (f *Factory) Connection() (config.Connection, error) {
	if f.conn != nil {
		return *f.conn, nil
	}
	cfg, err := f.Config()
	if err != nil {
		return config.Connection{}, exitWith(ExitUsage, err)
	}
	flags := f.connectionFlags()
	if f.global.passwordStdin {
		pw, err := f.passwordFromStdin()
		if err != nil {
			return config.Connection{}, err
		}
		// A flag in rank, without being in argv.
		flags.Password = config.Flag[string]{Value: pw, Set: true}
		flags.PasswordStdin = true
	}
	conn, err := config.Resolve(flags, cfg, f.Getenv)
	if err != nil {
		return config.Connection{}, exitWith(ExitUsage, err)
	}
	if conn.Insecure && strings.HasPrefix(conn.Server, "https:") {
		fmt.Fprintln(f.IO.ErrOut, "narad: warning: TLS certificate verification is off (--insecure)")
	}
	if w := cfg.PermissionWarning(); w != "" {
		fmt.Fprintf(f.IO.ErrOut, "narad: warning: %s\n", render.Escape(w))
	}
	if conn.User != "" && config.CleartextCredentials(conn.Server) {
		fmt.Fprintf(f.IO.ErrOut, "narad: warning: the password goes to %s over plain http, readable on the network (use https://)\n",
			render.Escape(config.RedactURL(conn.Server)))
	}
	f.conn = &conn
	return conn, nil
}

// connectionFlags is what the connection flags said, for config.Resolve and
// config.SelectContext.
func (f *Factory) connectionFlags() config.Flags {
	pf := f.root.PersistentFlags()
	str := func(name, v string) config.Flag[string] { return config.Flag[string]{Value: v, Set: pf.Changed(name)} }
	g := f.global
	return config.Flags{
		Server:   str("server", g.server),
		User:     str("user", g.user),
		Password: str("password", g.password),
		Context:  str("context", g.context),
		CACert:   str("ca-cert", g.caCert),
		Insecure: config.Flag[bool]{Value: g.insecure, Set: pf.Changed("insecure")},
	}
}

// Client builds an API client for the resolved connection, with the hooks that
// show its work: the retry notice always, -v and --curl when asked for, and the
// command's own (extra).
func (f *Factory) Client(extra ...client.Hook) (*client.Client, error) {
	return f.clientWith(nil, extra...)
}

// clientWith is Client with the command's own adjustment of the config (nil: none),
// made before the tests' tuneClient.
func (f *Factory) clientWith(adjust func(*client.Config), extra ...client.Hook) (*client.Client, error) {
	conn, err := f.Connection()
	if err != nil {
		return nil, err
	}
	out := &stderrLines{w: f.IO.ErrOut}
	notice := &retryNotice{out: out, after: retryNoticeAfter}
	hooks := []client.Hook{notice}
	if f.global.verbose {
		hooks = append(hooks, verboseLog{out})
	}
	if f.global.curl {
		hooks = append(hooks, curlPrinter{out})
		f.noteCurlCredentials(conn)
	}
	hooks = append(hooks, extra...)
	name := "narad/" + versionString()
	cfg := client.Config{
		BaseURL:    conn.Server,
		User:       conn.User,
		Password:   conn.Password,
		CACertFile: conn.CACert,
		Insecure:   conn.Insecure,
		UserAgent:  name,
		ClientName: name,
		Hooks:      hooks,
		Timeout:    f.requestTimeout,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	if f.tuneClient != nil {
		f.tuneClient(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, exitWith(ExitUsage, err)
	}
	notice.base = c.BaseURL()
	return c, nil
}

// maxPasswordLine bounds what --password-stdin reads (Narad takes up to 72 bytes).
const maxPasswordLine = 4096

// passwordFromStdin is the first line of stdin, for --password-stdin, without its
// line ending: read once, a byte at a time so nothing after the line is consumed.
// On a terminal it is asked for without echo instead. A signal stops the wait for a
// line that may never come.
func (f *Factory) passwordFromStdin() (string, error) {
	if f.stdinPassword != nil {
		return *f.stdinPassword, nil
	}
	var pw string
	if f.IO.IsStdinTTY() && f.ReadSecret != nil {
		var err error
		if pw, err = f.ReadSecret("password: "); err != nil {
			return "", exitWith(ExitFailed, fmt.Errorf("cannot read the password: %v", err))
		}
	} else {
		type result struct {
			line []byte
			err  error
		}
		done := make(chan result, 1)
		go func() {
			line, err := readFirstLine(f.IO.In, maxPasswordLine)
			done <- result{line, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-f.Signals.Soft:
			return "", exitWith(ExitFailed, nil) // the exit code says it
		}
		switch {
		case r.err != nil:
			return "", exitWith(ExitUsage, fmt.Errorf("--password-stdin: cannot read stdin: %v", r.err))
		case len(r.line) > maxPasswordLine:
			return "", usageErrorf("--password-stdin: the first line of stdin is longer than a password can be")
		}
		pw = strings.TrimSuffix(string(r.line), "\r")
	}
	if pw == "" {
		return "", usageErrorf("--password-stdin: no password on the first line of stdin")
	}
	f.stdinPassword = &pw
	return pw, nil
}

// readFirstLine reads r up to the first newline (not returned) or its end, a byte at
// a time, and at most limit+1 bytes (more than limit: too long).
func readFirstLine(r io.Reader, limit int) ([]byte, error) {
	var line []byte
	buf := make([]byte, 1)
	for len(line) <= limit {
		n, err := r.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				break
			}
			line = append(line, buf[0])
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return line, nil
}

// claimStdin is for a command about to read its input (what) from stdin: refused
// when --password-stdin has it, since one stream cannot be both.
func (f *Factory) claimStdin(what, instead string) error {
	if f.global.passwordStdin {
		return usageErrorf("--password-stdin takes stdin, so %s cannot come from it too (%s)", what, instead)
	}
	return nil
}

// exactArgs is cobra.ExactArgs with the usage exit code and a hint.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s (see %s --help)", commandName(cmd), names, cmd.CommandPath())
		}
		return nil
	}
}

// commandName is cmd's path without the leading "narad", which every error line
// already starts with ("narad: sub takes a topic").
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// minArgs is cobra.MinimumNArgs with the usage exit code and a hint.
func minArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s takes %s (see %s --help)", commandName(cmd), names, cmd.CommandPath())
		}
		return nil
	}
}
