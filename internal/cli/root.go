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

	global globalFlags
	// conn is the connection once resolved: the config file is read, and any
	// --insecure warning printed, once per invocation.
	conn *config.Connection
	root *cobra.Command
	// requestTimeout bounds a request that does not long-poll; zero means the
	// client's default. Tests shorten it.
	requestTimeout time.Duration
}

type globalFlags struct {
	server, user, password, context, configPath, caCert, color string
	insecure, verbose                                          bool
}

// Main runs narad with args and returns the process exit code.
func Main(args []string) int {
	ios := iostreams.System()
	sigs := NewSignals()
	stop := sigs.Notify()
	defer stop()
	f := &Factory{IO: ios, Getenv: os.Getenv, Now: time.Now, Signals: sigs}
	return Run(f, args)
}

// Run executes one invocation against f and returns the exit code; it prints the
// one fatal line itself so that no command ever prints a stack trace or usage dump.
func Run(f *Factory, args []string) (code int) {
	defer func() {
		// A panic is a bug, but the user still gets one line and a failing code.
		if r := recover(); r != nil {
			fmt.Fprintf(f.IO.ErrOut, "narad: internal error: %v (please report this)\n", r)
			code = ExitFailed
		}
	}()
	root := NewRootCmd(f)
	root.SetArgs(args)
	err := root.Execute()
	code = exitCodeFor(err)
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			// Escaped here, once for every command: the line may quote what the user
			// typed (a flag, a file name) or what a node sent.
			fmt.Fprintf(f.IO.ErrOut, "narad: %s\n", render.Escape(oneLine(unknownCommandLine(err.Error()))))
		}
	}
	if sig := f.Signals.Received(); sig != 0 && code != ExitUsage {
		code = signalExitCode(sig)
	}
	return code
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// NewRootCmd builds a fresh command tree (no global state: tests build many).
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "narad",
		Short: "Work with a Narad message broker from the command line",
		Long: "narad consumes, produces and settles messages on a Narad broker over its HTTP API,\n" +
			"supervises a command per message while holding its lease, and runs a local broker.",
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch f.global.color {
			case "auto", "always", "never":
			default:
				return usageErrorf("invalid --color %q (auto, always or never)", f.global.color)
			}
			f.IO.SetColorMode(f.global.color)
			return nil
		},
	}
	f.root = root
	f.conn = nil
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetIn(f.IO.In)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: fmt.Errorf("%v (see --help)", err)}
	})

	pf := root.PersistentFlags()
	pf.StringVarP(&f.global.server, "server", "s", "", "node to talk to (env NARAD_ADDR; default from the context, else "+config.DefaultServer+")")
	pf.StringVarP(&f.global.user, "user", "u", "", "Basic auth user (env NARAD_USER)")
	pf.StringVarP(&f.global.password, "password", "p", "", "Basic auth password (env NARAD_PASS)")
	pf.StringVar(&f.global.context, "context", "", "use this saved context instead of the current one (env NARAD_CONTEXT)")
	pf.StringVar(&f.global.configPath, "config", "", "config file (env NARAD_CONFIG; default $XDG_CONFIG_HOME/narad/config.yaml)")
	pf.StringVar(&f.global.caCert, "ca-cert", "", "extra CA certificate (PEM) for https servers")
	pf.BoolVar(&f.global.insecure, "insecure", false, "do not verify the server's TLS certificate")
	pf.StringVar(&f.global.color, "color", "auto", "colour: auto, always or never (NO_COLOR turns it off)")
	pf.BoolVarP(&f.global.verbose, "verbose", "v", false, "log each HTTP request, status and latency on stderr")

	root.AddCommand(
		newSubCmd(f),
		newProduceCmd(f),
		newSettleCmd(f, "ack", client.Ack),
		newSettleCmd(f, "extend", client.Extend),
		newSettleCmd(f, "nack", client.Nack),
		newReplayCmd(f),
		newTopicCmd(f),
		newContextCmd(f),
		newDevCmd(f),
		newDemoCmd(f),
		newVersionCmd(f),
		newCompletionCmd(f),
	)
	strictHelp(root)
	return root
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
	conn, err := config.ResolveEnv(f.root.PersistentFlags(), cfg, f.Getenv)
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

// Client builds an API client for the resolved connection.
func (f *Factory) Client() (*client.Client, error) {
	conn, err := f.Connection()
	if err != nil {
		return nil, err
	}
	var verbose io.Writer
	if f.global.verbose {
		verbose = f.IO.ErrOut
	}
	c, err := client.New(client.Config{
		BaseURL:    conn.Server,
		User:       conn.User,
		Password:   conn.Password,
		CACertFile: conn.CACert,
		Insecure:   conn.Insecure,
		Verbose:    verbose,
		UserAgent:  "narad/" + versionString(),
		Timeout:    f.requestTimeout,
	})
	if err != nil {
		return nil, exitWith(ExitUsage, err)
	}
	return c, nil
}

// exactArgs is cobra.ExactArgs with the usage exit code and a hint.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s (see %s --help)", cmd.CommandPath(), names, cmd.CommandPath())
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with the usage exit code and a hint.
func minArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s takes %s (see %s --help)", cmd.CommandPath(), names, cmd.CommandPath())
		}
		return nil
	}
}
