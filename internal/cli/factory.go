package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// Factory carries what every command needs, injected so tests can replace it. A
// command reads it only while it is built and in its RunE; its run function gets a
// runEnv instead (below), so it can be tested with an Options value alone.
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
	// tune is the process's runtime tuning (gc.go), made by Main; nil leaves the
	// runtime alone (tests run many commands in one process).
	tune *processTuning
	// slow are the clients' no-answer notices, closed when the run ends (finish).
	slow []*slowNotice
}

type globalFlags struct {
	server, user, password, context, configPath, caCert, color string
	insecure, verbose, curl, passwordStdin                     bool
}

// runEnv is what a run function may use of the invocation. Every command has one
// shape, gh's:
//
//	newXCmd(f) → xCmd(f, run func(*XOptions) error) → xRun(opts *XOptions) error
//
// XOptions (exported, named for the command path: TopicLsOptions) embeds runEnv and
// holds the flags' values. xCmd's RunE fills them from the arguments and ends with
// runWith(f, opts, run, checks...): the runEnv set, the flags' checks (exit 2 before
// any request), then run; a test passes its own run to see the Options a command
// line makes. RunE runs after the flags and the root's pre-run,
// so the global flags and --jq are known. The connection, config and client are
// functions, resolved only by the commands that talk to a node, once per invocation
// (the Factory keeps what they resolved).
type runEnv struct {
	IO      *iostreams.IOStreams
	Getenv  func(string) string
	Now     func() time.Time
	Signals *Signals
	// ReadSecret asks for a password on the terminal without echo (nil: cannot ask).
	ReadSecret func(prompt string) (string, error)

	// Context is cancelled at the first signal: for commands with nothing to give back.
	Context func() (context.Context, context.CancelFunc)
	// Client builds an API client for the connection, with the hooks that show its
	// work (see Factory.Client); ClientWith adjusts its config first.
	Client     func(extra ...client.Hook) (*client.Client, error)
	ClientWith func(adjust func(*client.Config), extra ...client.Hook) (*client.Client, error)
	// Connection is where to connect and with which credentials; Config the config
	// file, and ConfigToWrite the same for a command that may create it.
	Connection    func() (config.Connection, error)
	Config        func() (*config.File, error)
	ConfigToWrite func() (*config.File, error)

	// Verbose is -v: each request logged on stderr.
	Verbose bool
	// StdinTaken is --password-stdin: stdin is the password's, not the command's.
	StdinTaken bool
	// ServerFlag and ContextFlag are --server and --context as typed ("" when not
	// given), for the commands a run prints to be pasted.
	ServerFlag, ContextFlag string
	// ConfigFlag is --config as typed ("" when not given): what the commands a run
	// starts or prints must name to read the same file.
	ConfigFlag string

	// export is the compiled --jq of the running command, nil without one (export.go).
	export *render.JQ
	// tune is the process's runtime tuning (gc.go): a stream's run tells it what it
	// runs (processTuning.stream). nil leaves the runtime alone.
	tune *processTuning
}

// runEnv is what the running command's run function may use (see the type).
func (f *Factory) runEnv() runEnv {
	now := f.Now
	if now == nil {
		now = time.Now
	}
	return runEnv{
		IO:            f.IO,
		Getenv:        f.Getenv,
		Now:           now,
		Signals:       f.Signals,
		ReadSecret:    f.ReadSecret,
		Context:       f.Context,
		Client:        f.Client,
		ClientWith:    f.clientWith,
		Connection:    f.Connection,
		Config:        f.Config,
		ConfigToWrite: f.ConfigToWrite,
		Verbose:       f.global.verbose,
		StdinTaken:    f.global.passwordStdin,
		ServerFlag:    f.global.server,
		ContextFlag:   f.global.context,
		ConfigFlag:    f.global.configPath,
		export:        f.export,
		tune:          f.tune,
	}
}

// setRunEnv fills the runEnv an Options embeds: how runWith reaches it.
func (e *runEnv) setRunEnv(v runEnv) { *e = v }

// runWith ends every command's RunE: the Options get the runEnv, the first failed
// check of the flags is the error (exit 2, before any request), else run runs. The
// checks are evaluated by the caller, in order: each is cheap and reads nothing, so
// evaluating them all only decides which error is said, the first.
func runWith[O interface{ setRunEnv(runEnv) }](f *Factory, opts O, run func(O) error, checks ...error) error {
	opts.setRunEnv(f.runEnv())
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return run(opts)
}

// node is what a run function needs to make its requests: a client for the
// connection, and a context cancelled at the first signal, which done releases.
func (e runEnv) node() (c *client.Client, ctx context.Context, done context.CancelFunc, err error) {
	if c, err = e.Client(); err != nil {
		return nil, nil, nil, err
	}
	ctx, done = e.Context()
	return c, ctx, done, nil
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

// Config loads the config file. A file named by --config must be there: a mistyped
// path would otherwise be read as an empty config, and the command would go to the
// default server without a context and without a word (kubectl --kubeconfig refuses
// it too). NARAD_CONFIG, like KUBECONFIG, and the default path may name a file not
// written yet: a fresh machine, or a job that gives each run a config of its own.
func (f *Factory) Config() (*config.File, error) {
	cfg, err := f.ConfigToWrite()
	if err != nil {
		return nil, err
	}
	if f.global.configPath != "" && !cfg.Exists() {
		return nil, fmt.Errorf("config %s does not exist (check the --config path; narad context add with it creates the file)", cfg.Path())
	}
	return cfg, nil
}

// ConfigToWrite loads the config file, empty where there is none yet, --config's
// included: for context add, which creates it.
func (f *Factory) ConfigToWrite() (*config.File, error) {
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
	if err := passwordWithoutUser(conn, f.global.password); err != nil {
		return config.Connection{}, err
	}
	if conn.Insecure && strings.HasPrefix(conn.Server, "https:") {
		fmt.Fprintln(f.IO.ErrOut, "narad: warning: TLS certificate verification is off (--insecure)")
	}
	if w := cfg.PermissionWarning(); w != "" {
		fmt.Fprintf(f.IO.ErrOut, "narad: warning: %s\n", render.Escape(w))
	}
	if w := cfg.UnknownFieldsWarning(); w != "" {
		fmt.Fprintf(f.IO.ErrOut, "narad: warning: %s\n", render.Escape(w))
	}
	if conn.User != "" && config.CleartextCredentials(conn.Server) {
		fmt.Fprintf(f.IO.ErrOut, "narad: warning: the password goes to %s over plain http, readable on the network (use https://)\n",
			render.Escape(config.RedactURL(conn.Server)))
	}
	f.conn = &conn
	return conn, nil
}

// passwordWithoutUser refuses a password given on the command line (or on stdin) when
// no user goes with it: Basic auth needs both, and the client would drop the password
// without a word. A kcat user's `-p 3` (there, the partition) lands here too, so a
// number gets a hint. A password from the environment alone is left alone: it may
// be meant for a context whose user is not in use here.
func passwordWithoutUser(conn config.Connection, flagValue string) error {
	if conn.User != "" || conn.Password == "" {
		return nil
	}
	switch conn.From.Password {
	case config.SourceStdin:
		return usageErrorf("--password-stdin needs a user: give --user or NARAD_USER")
	case config.SourceFlag:
		if _, err := strconv.Atoi(flagValue); err == nil {
			return usageErrorf("--password needs a user: give --user or NARAD_USER (-p is --password; partitions are --partition and --partitions)")
		}
		return usageErrorf("--password needs a user: give --user or NARAD_USER")
	}
	return nil
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
	if f.Signals != nil {
		notice.graceEnd = f.Signals.graceEnd
	}
	slow := &slowNotice{out: out, after: retryNoticeAfter}
	f.slow = append(f.slow, slow)
	hooks := []client.Hook{notice, slow}
	if f.global.verbose {
		hooks = append(hooks, verboseLog{out})
	}
	if f.global.curl {
		hooks = append(hooks, curlPrinter{out})
		f.noteCurlCredentials(conn)
	}
	hooks = append(hooks, extra...)
	for _, h := range extra {
		if c, ok := h.(requestCutter); ok {
			slow.cut = c // the line says when the run's stop cuts the wait
		}
	}
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
	notice.base, slow.base = c.BaseURL(), c.BaseURL()
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
		line, err := unlessStopped(f.Signals, func() ([]byte, error) { return readFirstLine(f.IO.In, maxPasswordLine) })
		var stopped *exitError
		switch {
		case errors.As(err, &stopped): // a signal: its exit code says it
			return "", err
		case err != nil:
			return "", exitWith(ExitUsage, fmt.Errorf("--password-stdin: cannot read stdin: %v", err))
		case len(line) > maxPasswordLine:
			return "", usageErrorf("--password-stdin: the first line of stdin is longer than a password can be")
		}
		pw = strings.TrimSuffix(string(line), "\r")
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

// unlessStopped runs fn, which may wait on what no signal ends: a read of a stdin
// that never ends, or the open of a FIFO that no one writes to. Narad turns Ctrl-C and
// SIGTERM into a stop it looks at between steps, so waiting on fn itself would leave it
// deaf to them until fn returned; the first signal ends the wait instead (an exitError
// without a line: the signal's exit code says it), and fn is left to finish on its own,
// since the command is about to exit.
func unlessStopped[T any](s *Signals, fn func() (T, error)) (T, error) {
	var stop <-chan struct{} // nil, never ready, for a Factory without Signals
	if s != nil {
		stop = s.Soft
	}
	v, err := chans.Unless(stop, fn)
	if errors.Is(err, chans.ErrGaveUp) {
		return v, exitWith(ExitFailed, nil)
	}
	return v, err
}

// commandEnv is the environment of the commands narad runs per message: its own, with
// NARAD_CONTEXT and NARAD_CONFIG set when --context and --config chose them, so that a
// command's own narad (narad extend "$NARAD_TOPIC" "$NARAD_RECEIPT_HANDLE") reaches the
// node (NARAD_ADDR) as this run does; without them it read the current context of the
// default file and, that context being another server's, sent no credentials (401). No
// credential goes in the environment: the context's are read where they are kept, and
// sent only to its own server.
func (e runEnv) commandEnv(environ []string) []string {
	set := map[string]string{}
	if e.ContextFlag != "" {
		set["NARAD_CONTEXT"] = e.ContextFlag
	}
	if e.ConfigFlag != "" {
		path, err := filepath.Abs(e.ConfigFlag) // the command may run elsewhere
		if err != nil {
			path = e.ConfigFlag
		}
		set["NARAD_CONFIG"] = path
	}
	if len(set) == 0 {
		return nil // the supervisor's default: narad's own environment
	}
	env := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); set[name] == "" {
			env = append(env, kv)
		}
	}
	for _, name := range []string{"NARAD_CONTEXT", "NARAD_CONFIG"} {
		if v := set[name]; v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// claimStdin is for a command about to read its input (what) from stdin: refused
// when --password-stdin has it, since one stream cannot be both.
func (e runEnv) claimStdin(what, instead string) error {
	if e.StdinTaken {
		return usageErrorf("--password-stdin takes stdin, so %s cannot come from it too (%s)", what, instead)
	}
	return nil
}

// terminalSecret reads a line from the terminal on stdin with echo off, the prompt
// on w. x/term does this portably (termios on Unix, console modes on Windows), which
// our own code would have to repeat per platform. A signal (stop) gives up at once
// and puts the terminal back: the read itself cannot be interrupted.
func terminalSecret(w io.Writer, stop <-chan struct{}) func(string) (string, error) {
	return func(prompt string) (string, error) {
		fd := int(os.Stdin.Fd())
		state, err := term.GetState(fd)
		if err != nil {
			return "", err
		}
		fmt.Fprint(w, prompt)
		type result struct {
			pw  []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			pw, err := term.ReadPassword(fd)
			done <- result{pw, err}
		}()
		select {
		case r := <-done:
			fmt.Fprintln(w)
			return string(r.pw), r.err
		case <-stop:
			_ = term.Restore(fd, state)
			fmt.Fprintln(w)
			return "", errors.New("interrupted")
		}
	}
}
