package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/render"
)

func newContextCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Save and switch between connections to Narad nodes",
		Long: "A context is a saved connection: a server, and optionally credentials and TLS settings.\n" +
			"The current context is used when --server is not given. A context's credentials are\n" +
			"sent only to its own server: with --server naming another, they are left out.\n" +
			"Contexts live in the config file (--config), written with mode 0600.",
		Example: "  narad context add local --server localhost:7942\n" +
			"  narad context add prod --server https://narad.example.com --user app\n" +
			"  narad context use prod\n" +
			"  narad --context local topic ls",
		Args: exactArgs(0, "a subcommand: add, use, ls, show or rm"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("context needs a subcommand: add, use, ls, show or rm (see narad context --help)")
		},
	}
	cmd.AddCommand(
		contextAddCmd(f, contextAddRun),
		contextUseCmd(f, contextUseRun),
		contextLsCmd(f, contextLsRun),
		contextShowCmd(f, contextShowRun),
		contextRmCmd(f, contextRmRun),
	)
	return cmd
}

// loadConfig is the config file; one that cannot be read or parsed, or that --config
// names and is not there, is bad input (exit 2), as it is for every other command.
func loadConfig(e runEnv) (*config.File, error) { return warnedConfig(e, e.Config) }

// loadConfigToWrite is loadConfig for context add, which creates the file --config
// names when it is not there yet.
func loadConfigToWrite(e runEnv) (*config.File, error) { return warnedConfig(e, e.ConfigToWrite) }

func warnedConfig(e runEnv, load func() (*config.File, error)) (*config.File, error) {
	cfg, err := load()
	if err != nil {
		return nil, exitWith(ExitUsage, err)
	}
	// Said before a save, which would drop the fields for good.
	if w := cfg.UnknownFieldsWarning(); w != "" {
		fmt.Fprintf(e.IO.ErrOut, "narad: warning: %s\n", render.Escape(w))
	}
	return cfg, nil
}

func saveConfig(cfg *config.File) error {
	if err := cfg.Save(); err != nil {
		return exitWith(ExitFailed, fmt.Errorf("%v (config file %s)", err, cfg.Path()))
	}
	return nil
}

func noSuchContext(cfg *config.File, name string) error {
	if len(cfg.Contexts) == 0 {
		return usageErrorf("no context named %q (there are none; add one with narad context add)", name)
	}
	return usageErrorf("no context named %q (see narad context ls)", name)
}

// --- context add ---

// ContextAddOptions is what `narad context add` runs with.
type ContextAddOptions struct {
	runEnv
	Name string
	// Saved is the context to save, from the connection flags.
	Saved config.Context
	// Password is the one to save, in the keyring unless InsecureStorage.
	Password        string
	Force           bool
	InsecureStorage bool
}

func contextAddCmd(f *Factory, run func(*ContextAddOptions) error) *cobra.Command {
	opts := &ContextAddOptions{}
	cmd := &cobra.Command{
		Use:   "add NAME --server URL [--user U [--password-stdin]] [flags]",
		Short: "Save a context",
		Long: "Save a connection under NAME, from the flags --server, --user, --password (or\n" +
			"--password-stdin), --ca-cert and --insecure (the environment is not read). With\n" +
			"--user and no password flag, the password is asked for on a terminal, without echo.\n" +
			"The first context saved becomes the current one. An existing NAME is replaced only\n" +
			"with --force.\n\n" +
			"The password goes to the system keyring (the macOS Keychain, the Windows Credential\n" +
			"Manager, the Secret Service of a Linux desktop) where there is one, under the server\n" +
			"and user it is for; where there is none (a headless server), or with\n" +
			"--insecure-storage, to the config file, written with mode 0600. narad context show\n" +
			"says where each password is kept.",
		Example: "  narad context add local --server http://127.0.0.1:7942\n" +
			"  narad context add prod --server https://narad.example.com --user app\n" +
			"  pass show narad/app |\n" +
			"    narad context add prod --server https://narad.example.com \\\n" +
			"    --user app --password-stdin",
		Args: exactArgs(1, "a context name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := config.ValidateContextName(opts.Name); err != nil {
				return usageErrorf("%v", err)
			}
			fl := cmd.Flags()
			g := f.global
			if !fl.Changed("server") || g.server == "" {
				return usageErrorf("context add needs --server URL (see narad context add --help)")
			}
			server := config.NormalizeServer(g.server)
			if err := config.ValidateServer(server); err != nil {
				return usageErrorf("%v", err)
			}
			switch {
			case fl.Changed("password") && !fl.Changed("user"):
				return usageErrorf("--password needs --user")
			case g.passwordStdin && !fl.Changed("user"):
				return usageErrorf("--password-stdin needs --user")
			}
			c := config.Context{Server: server, Insecure: g.insecure}
			if fl.Changed("user") {
				if err := config.ValidateUser(g.user); err != nil {
					return usageErrorf("%v", err)
				}
				c.User = g.user
			}
			pw, err := contextPassword(f, fl.Changed("user"), fl.Changed("password"))
			if err != nil {
				return err
			}
			opts.Password = pw
			if fl.Changed("ca-cert") && g.caCert != "" {
				// Saved absolute: the context is used from other directories.
				abs, err := filepath.Abs(g.caCert)
				if err != nil {
					return usageErrorf("invalid --ca-cert: %v", err)
				}
				if _, err := os.Stat(abs); err != nil {
					return usageErrorf("cannot read --ca-cert: %v", unwrapPathError(err))
				}
				c.CACert = abs
			}
			opts.Saved = c
			return runWith(f, opts, run)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace a context of the same name")
	cmd.Flags().BoolVar(&opts.InsecureStorage, "insecure-storage", false, "save the password in the config file (mode 0600), not the system keyring")
	return cmd
}

// contextPassword is the password to save: --password, else --password-stdin,
// else, for a user given on a terminal, one typed at a prompt without echo (never
// needing it in argv or the shell history); "" for none.
func contextPassword(f *Factory, user, passwordFlag bool) (string, error) {
	switch {
	case passwordFlag:
		return f.global.password, nil
	case f.global.passwordStdin:
		return f.passwordFromStdin()
	case !user || !f.IO.IsStdinTTY() || f.ReadSecret == nil:
		return "", nil
	}
	pw, err := f.ReadSecret(fmt.Sprintf("password for %s (empty for none): ", f.global.user))
	if err != nil {
		return "", exitWith(ExitFailed, fmt.Errorf("cannot read the password: %v", err))
	}
	return pw, nil
}

func contextAddRun(opts *ContextAddOptions) error {
	cfg, err := loadConfigToWrite(opts.runEnv)
	if err != nil {
		return err
	}
	_, exists := cfg.Contexts[opts.Name]
	if exists && !opts.Force {
		return exitWith(ExitFailed, fmt.Errorf("context %q exists (pass --force to replace it, or see narad context show %s)", opts.Name, opts.Name))
	}
	if exists {
		cfg.ForgetPassword(opts.Name)
	}
	c := opts.Saved
	store, keyringErr := config.SetPassword(&c, opts.Password, opts.InsecureStorage)
	cfg.Contexts[opts.Name] = c
	current := cfg.CurrentContext == "" || cfg.CurrentContext == opts.Name
	if cfg.CurrentContext == "" {
		cfg.CurrentContext = opts.Name
	}
	if err := saveConfig(cfg); err != nil {
		return err
	}
	verb := "saved"
	if exists {
		verb = "replaced"
	}
	if current {
		fmt.Fprintf(opts.IO.ErrOut, "%s context %q (the current context)\n", verb, opts.Name)
	} else {
		fmt.Fprintf(opts.IO.ErrOut, "%s context %q (switch to it with narad context use %s)\n", verb, opts.Name, opts.Name)
	}
	if opts.Password != "" {
		switch {
		case store == config.StoreKeyring:
			opts.notice("its password is in the system keyring")
		case opts.InsecureStorage:
			opts.notice("its password is in the config file, mode 0600 (--insecure-storage)")
		default:
			opts.notice(render.Escape(fmt.Sprintf("its password is in the config file, mode 0600 (no system keyring: %v)", keyringErr)))
		}
	}
	if opts.Saved.Insecure {
		fmt.Fprintln(opts.IO.ErrOut, "narad: warning: this context does not verify TLS certificates (--insecure)")
	}
	return nil
}

// passwordWhere is how context show says where a password is kept, from
// contextJSON's PasswordStore.
func passwordWhere(store string) string {
	if store == "keyring" {
		return "in the system keyring"
	}
	return "in the config file"
}

// --- context use ---

// ContextUseOptions is what `narad context use` runs with.
type ContextUseOptions struct {
	runEnv
	Name string
}

func contextUseCmd(f *Factory, run func(*ContextUseOptions) error) *cobra.Command {
	opts := &ContextUseOptions{}
	return &cobra.Command{
		Use:     "use NAME",
		Aliases: []string{"select"},
		Short:   "Make a context the current one",
		Example: "  narad context use prod\n\n" +
			"  # One command elsewhere, without switching\n" +
			"  narad --context local topic ls",
		Args: exactArgs(1, "a context name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runWith(f, opts, run)
		},
	}
}

func contextUseRun(opts *ContextUseOptions) error {
	cfg, err := loadConfig(opts.runEnv)
	if err != nil {
		return err
	}
	if _, ok := cfg.Contexts[opts.Name]; !ok {
		return noSuchContext(cfg, opts.Name)
	}
	cfg.CurrentContext = opts.Name
	if err := saveConfig(cfg); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "switched to context %q\n", opts.Name)
	return nil
}

// --- context ls ---

// contextJSON is a context as -o json shows it: never the password itself.
type contextJSON struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"` // "********" when one is saved
	// PasswordStore is where it is kept: "keyring" or "file".
	PasswordStore string `json:"password_store,omitempty"`
	CACert        string `json:"ca_cert,omitempty"`
	Insecure      bool   `json:"insecure,omitempty"`
	Current       bool   `json:"current"`
	// Overridden is, for the context in use, each field a flag or the environment
	// sets instead, and which: {"server":"NARAD_ADDR"}. Only context show fills it.
	Overridden map[string]string `json:"overridden,omitempty"`
	// CredentialsWithheld says the context in use keeps its credentials back: the
	// server in use is not its own.
	CredentialsWithheld bool `json:"credentials_withheld,omitempty"`
}

const hiddenPassword = "********"

func contextView(cfg *config.File, name string) contextJSON {
	c := cfg.Contexts[name]
	// A hand-edited server URL may hold a password too.
	v := contextJSON{Name: name, Server: config.RedactURL(c.Server), User: c.User, CACert: c.CACert, Insecure: c.Insecure,
		Current: name == cfg.CurrentContext}
	if store, ok := c.HasPassword(); ok {
		v.Password, v.PasswordStore = hiddenPassword, "file"
		if store == config.StoreKeyring {
			v.PasswordStore = "keyring"
		}
	}
	return v
}

// ContextLsOptions is what `narad context ls` runs with.
type ContextLsOptions struct {
	runEnv
	Output string
}

func contextLsCmd(f *Factory, run func(*ContextLsOptions) error) *cobra.Command {
	opts := &ContextLsOptions{}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List saved contexts; * marks the current one",
		Example: "  narad context ls\n" +
			"  narad context ls -o json | jq -r '.[] | select(.current) | .name'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func contextLsRun(opts *ContextLsOptions) error {
	cfg, err := loadConfig(opts.runEnv)
	if err != nil {
		return err
	}
	names := cfg.Names()
	views := make([]contextJSON, 0, len(names))
	for _, n := range names {
		views = append(views, contextView(cfg, n))
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok && cfg.CurrentContext != "" && len(names) > 0 && opts.Output != "json" {
		fmt.Fprintf(opts.IO.ErrOut, "narad: warning: the current context %q is not saved (run narad context use NAME)\n", cfg.CurrentContext)
	}
	return printList(opts.runEnv, opts.Output, views, views, "no contexts (add one with narad context add NAME --server URL)",
		[]string{"CURRENT", "NAME", "SERVER", "USER"}, func(v contextJSON) []string {
			mark := ""
			if v.Current {
				mark = "*"
			}
			return []string{mark, v.Name, v.Server, v.User}
		})
}

// --- context show ---

// ContextShowOptions is what `narad context show` runs with.
type ContextShowOptions struct {
	runEnv
	Name   string
	Output string
	// Flags are the connection flags given, to tell the context in use as every
	// command would, and what they set in its place.
	Flags config.Flags
}

func contextShowCmd(f *Factory, run func(*ContextShowOptions) error) *cobra.Command {
	opts := &ContextShowOptions{}
	cmd := &cobra.Command{
		Use:     "show [NAME]",
		Aliases: []string{"info"},
		Short:   "Show a context (the one in use by default); the password is hidden",
		Long: "Show a saved context: NAME, else the one in use (--context, else NARAD_CONTEXT,\n" +
			"else the current one). The password is never shown, only where it is kept.\n\n" +
			"For the context in use, \"in use:\" names each field a flag or the environment sets\n" +
			"in its place (flag > env > context > default, as every command resolves it), and\n" +
			"\"withheld:\" says its credentials are not sent, the server in use not being its own.\n" +
			"With -o json: overridden ({\"server\":\"NARAD_ADDR\"}) and credentials_withheld.",
		Example: "  narad context show\n" +
			"  narad context show prod -o json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("context show takes at most one context name (see narad context show --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if strings.TrimSpace(args[0]) == "" {
					// Taken as no name, an unset variable would show the context in use.
					return usageErrorf("context show needs a context name, not %q (leave it out for the one in use)", args[0])
				}
				opts.Name = args[0]
			}
			opts.Flags = f.connectionFlags()
			if f.global.passwordStdin {
				// Not read: show sends nothing.
				opts.Flags.Password, opts.Flags.PasswordStdin = config.Flag[string]{Set: true}, true
			}
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func contextShowRun(opts *ContextShowOptions) error {
	cfg, err := loadConfig(opts.runEnv)
	if err != nil {
		return err
	}
	// The context in use: NAME, else the one every command would use.
	inUse, _ := config.SelectContext(opts.Flags, cfg, opts.Getenv)
	name := opts.Name
	if name == "" {
		name = inUse
	}
	if name == "" {
		return usageErrorf("no current context (name one, or see narad context ls)")
	}
	if _, ok := cfg.Contexts[name]; !ok {
		return noSuchContext(cfg, name)
	}
	v := contextView(cfg, name)
	var conn config.Connection
	if name == inUse {
		// What every command makes of it, from the resolver itself. A server the
		// flags or environment got wrong is that command's error, not show's.
		if c, err := config.Describe(opts.Flags, cfg, opts.Getenv); err == nil {
			conn = c
			v.Overridden, v.CredentialsWithheld = overridden(c.From), c.DroppedCredentials
		}
	}
	if opts.Output == "json" {
		return opts.printJSON(v)
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "name:      %s\n", render.Escape(v.Name))
	fmt.Fprintf(w, "server:    %s\n", render.Escape(v.Server))
	if v.User != "" {
		fmt.Fprintf(w, "user:      %s\n", render.Escape(v.User))
	}
	if v.Password != "" {
		fmt.Fprintf(w, "password:  %s (%s)\n", v.Password, passwordWhere(v.PasswordStore))
	}
	if v.CACert != "" {
		fmt.Fprintf(w, "ca-cert:   %s\n", render.Escape(v.CACert))
	}
	if v.Insecure {
		fmt.Fprintf(w, "insecure:  true\n")
	}
	if len(v.Overridden) > 0 {
		fmt.Fprintf(w, "in use:    %s\n", render.Escape(inUseLine(conn)))
	}
	if v.CredentialsWithheld {
		fmt.Fprintf(w, "withheld:  its credentials: %s is not its server\n", render.Escape(config.RedactURL(conn.Server)))
	}
	_, err = fmt.Fprintf(w, "current:   %t\n", v.Current)
	return outputDone(err)
}

// connectionFields are the fields of a connection a flag or the environment can set
// in place of a context's, with the variable of each that has one.
var connectionFields = []struct{ name, env string }{
	{"server", "NARAD_ADDR"}, {"user", "NARAD_USER"}, {"password", "NARAD_PASS"}, {"ca-cert", ""}, {"insecure", ""},
}

func sourceOf(from config.Sources, field string) config.Source {
	switch field {
	case "server":
		return from.Server
	case "user":
		return from.User
	case "password":
		return from.Password
	case "ca-cert":
		return from.CACert
	}
	return from.Insecure
}

// overridden is each field the resolver took from a flag or the environment, and
// from which: the flag's name or the variable's.
func overridden(from config.Sources) map[string]string {
	var m map[string]string
	for _, fd := range connectionFields {
		by := ""
		switch sourceOf(from, fd.name) {
		case config.SourceFlag:
			by = "--" + fd.name
		case config.SourceStdin:
			by = "--password-stdin"
		case config.SourceEnv:
			by = fd.env
		default:
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[fd.name] = by
	}
	return m
}

// inUseLine says what the flags and environment set in place of the context's
// fields: "server http://b:1 (NARAD_ADDR), password (--password-stdin)". Never the
// password itself.
func inUseLine(conn config.Connection) string {
	by := overridden(conn.From)
	var parts []string
	for _, fd := range connectionFields {
		src, ok := by[fd.name]
		if !ok {
			continue
		}
		value := ""
		switch fd.name {
		case "server":
			value = " " + config.RedactURL(conn.Server)
		case "user":
			value = " " + strconv.Quote(conn.User)
		case "ca-cert":
			value = " " + conn.CACert
		case "insecure":
			value = " " + strconv.FormatBool(conn.Insecure)
		}
		parts = append(parts, fd.name+value+" ("+src+")")
	}
	return strings.Join(parts, ", ")
}

// --- context rm ---

// ContextRmOptions is what `narad context rm` runs with.
type ContextRmOptions struct {
	runEnv
	Name string
}

func contextRmCmd(f *Factory, run func(*ContextRmOptions) error) *cobra.Command {
	opts := &ContextRmOptions{}
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"delete"},
		Short:   "Remove a saved context",
		Example: "  narad context rm staging",
		Args:    exactArgs(1, "a context name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runWith(f, opts, run)
		},
	}
}

func contextRmRun(opts *ContextRmOptions) error {
	cfg, err := loadConfig(opts.runEnv)
	if err != nil {
		return err
	}
	if _, ok := cfg.Contexts[opts.Name]; !ok {
		return noSuchContext(cfg, opts.Name)
	}
	cfg.ForgetPassword(opts.Name)
	delete(cfg.Contexts, opts.Name)
	wasCurrent := cfg.CurrentContext == opts.Name
	if wasCurrent {
		cfg.CurrentContext = ""
	}
	if err := saveConfig(cfg); err != nil {
		return err
	}
	if wasCurrent {
		fmt.Fprintf(opts.IO.ErrOut, "removed context %q; there is no current context now (pick one with narad context use NAME)\n", opts.Name)
	} else {
		fmt.Fprintf(opts.IO.ErrOut, "removed context %q\n", opts.Name)
	}
	return nil
}
