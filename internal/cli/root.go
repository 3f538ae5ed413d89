// Package cli wires the narad commands: flags in, Options out, one file per command.
// Behaviour lives in the packages below it (client, consumer, supervisor, render,
// config, devbroker); nothing imports cli.
package cli

import (
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

// Main runs narad with args and returns the process exit code.
func Main(args []string) int {
	ios := iostreams.System()
	sigs := ProcessSignals()
	defer sigs.Close()
	// The second signal (the first, for a command that holds nothing) must end the run
	// even when a reader of stdout or stderr stopped reading.
	ios.StdoutGivesUpAt(sigs.Streams())
	ios.StderrGivesUpAt(sigs.Streams())
	f := &Factory{IO: ios, Getenv: os.Getenv, Now: time.Now, Signals: sigs, ReadSecret: terminalSecret(ios.ErrOut, sigs.Soft),
		tune: newProcessTuning(os.Getenv)}
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
		return finish(f, versionRun(&VersionOptions{runEnv: f.runEnv(), Output: "text"}))
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
	for _, n := range f.slow {
		n.close() // nothing is awaited any more
	}
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
			if cmd.Annotations[holdsWork] == "" {
				f.Signals.FirstEnds()
			}
			if err := refuseBlankFlags(cmd); err != nil {
				return err
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
	blankOwnChecked(pf, "server", "color")
	blankNeeds(pf, "user", "a user name", "leave the flag out for NARAD_USER or the context's")
	// A password of spaces is a password; an empty one sent would count as a failed
	// login against the user.
	emptyNeeds(pf, "password", "a password", "leave the flag out for NARAD_PASS or the context's, or use --password-stdin")
	blankNeeds(pf, "context", "a context name", "leave the flag out for the current one; narad context ls lists them")
	blankNeeds(pf, "config", "a file name", "leave the flag out for NARAD_CONFIG or $XDG_CONFIG_HOME/narad/config.yaml")
	blankNeeds(pf, "ca-cert", "a PEM file", "leave the flag out to trust the system's CAs only")

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

// holdsWork marks (in Annotations) a command that holds work its first signal lets
// finish (messages leased, produces or commands on their way): the first signal is its
// soft stop, and its output waits for its reader until the second. Every other command
// ends at the first signal, a stuck stdout or stderr included (Signals.FirstEnds).
const holdsWork = "narad/holds-work"

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

// exactArgs is cobra.ExactArgs with the usage exit code and a hint.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if err := statsWordHint(cmd, args); err != nil {
				return err
			}
			return usageErrorf("%s takes %s (see %s --help)", commandName(cmd), names, cmd.CommandPath())
		}
		return nil
	}
}

// statsWordHint is the usage error for `--stats json`, given when the arguments do not
// add up: --stats alone means text, so its format goes after "=" and the word after it
// was read as an argument (a second topic). Nil when no such word is there.
func statsWordHint(cmd *cobra.Command, args []string) error {
	f := cmd.Flags().Lookup("stats")
	if f == nil || !f.Changed || f.Value.String() != f.NoOptDefVal {
		return nil
	}
	for _, a := range args {
		if a == "text" || a == "json" {
			return usageErrorf("--stats %s: the word after --stats is an argument, not its format (write --stats=%s)", a, a)
		}
	}
	return nil
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
