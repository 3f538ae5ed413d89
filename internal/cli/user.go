package cli

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// The user commands: add, ls, show, grant, passwd, rm. They need admin, and exist
// only on a node with security on (a node with it off has no user routes at all).

func newUserCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage users and their grants (admin)",
		Long: "Manage the node's users and their grants. A grant is ACTION:PATTERN[,PATTERN...],\n" +
			"ACTION being produce, consume, create or admin, a pattern a topic name or a prefix\n" +
			"ending in * (orders-*). A consume grant covers ack, extend and nack.\n" +
			"Passwords are read without echo on a terminal, or from the first line of stdin with\n" +
			"--password-stdin; never from the command line.",
		Example: "  narad user add billing --grant consume:orders* --grant produce:invoices\n" +
			"  narad user ls\n" +
			"  narad user grant billing --grant consume:orders*,refunds",
		Args: exactArgs(0, "a subcommand: "+userSubcommands),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("user needs a subcommand: %s (see narad user --help)", userSubcommands)
		},
	}
	cmd.AddCommand(
		userAddCmd(f, userAddRun),
		userLsCmd(f, userLsRun),
		userShowCmd(f, userShowRun),
		userGrantCmd(f, userGrantRun),
		userPasswdCmd(f, userPasswdRun),
		userRmCmd(f, userRmRun),
	)
	return cmd
}

const userSubcommands = "add, ls, show, grant, passwd or rm"

// parseGrants reads --grant values: "consume:orders*,payments" or "admin".
func parseGrants(specs []string) ([]client.UserGrant, error) {
	grants := make([]client.UserGrant, 0, len(specs))
	for _, spec := range specs {
		action, patterns, hasPatterns := strings.Cut(strings.TrimSpace(spec), ":")
		switch action {
		case "admin":
			if hasPatterns {
				return nil, usageErrorf("invalid --grant %q (admin takes no topic patterns)", spec)
			}
			grants = append(grants, client.UserGrant{Action: "admin"})
			continue
		case "produce", "consume", "create":
		default:
			return nil, usageErrorf("invalid --grant %q (ACTION:PATTERN with ACTION produce, consume, create, or admin alone)", spec)
		}
		g := client.UserGrant{Action: action}
		for _, p := range strings.Split(patterns, ",") {
			p = strings.TrimSpace(p)
			if p == "" || !grantPattern().MatchString(p) {
				return nil, usageErrorf("invalid --grant %q (patterns are topic names or prefixes ending in *, e.g. %s:orders-*)", spec, action)
			}
			g.Patterns = append(g.Patterns, p)
		}
		grants = append(grants, g)
	}
	return grants, nil
}

// someGrants refuses user grant without --grant: grants replace every grant, and
// none would take them all away, which is what rm is for.
func someGrants(specs []string) error {
	if len(specs) == 0 {
		return usageErrorf("give the new grants with --grant (they replace every grant; to take all away, remove the user)")
	}
	return nil
}

// formatGrants is the one-line form --grant takes: "consume:orders*,payments produce:orders".
func formatGrants(gs []client.UserGrant) string {
	if len(gs) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		if len(g.Patterns) == 0 {
			parts = append(parts, g.Action)
			continue
		}
		parts = append(parts, g.Action+":"+strings.Join(g.Patterns, ","))
	}
	return render.Escape(strings.Join(parts, " "))
}

// newPassword reads a password for a user: without echo and twice on a terminal,
// else from the next line of stdin with --password-stdin. prompt and retype are the
// two questions, which say whose password it is ("new password for bob: "), as passwd
// and psql's \password do; a mismatch changes nothing. A password in argv would end
// up in shell history and ps, so there is no flag for one.
// From stdin, line says which line of it the password is ("the first line of stdin").
func newPassword(e runEnv, fromStdin bool, prompt, retype, line string) (string, error) {
	pw, err := secretLine(e, fromStdin, prompt)
	if err != nil {
		return "", err
	}
	if fromStdin && pw == "" {
		return "", usageErrorf("--password-stdin: no password on %s", line)
	}
	if !fromStdin {
		again, err := secretLine(e, false, retype)
		if err != nil {
			return "", err
		}
		if pw != again {
			return "", usageErrorf("the two passwords typed differ; nothing changed (type the same password twice)")
		}
	}
	return checkPassword(pw)
}

// pipedSecrets says whether the passwords are lines of stdin: with --password-stdin,
// unless stdin is a terminal, where they are asked without echo instead (twice for a
// new one), as the global --password-stdin does there: read as a line, a password
// typed at the terminal would be shown as it was typed.
func pipedSecrets(e runEnv, passwordStdin bool) bool {
	return passwordStdin && !(e.IO.IsStdinTTY() && e.ReadSecret != nil)
}

// secretLine is one secret: the next line of stdin with --password-stdin (several
// calls read several lines), else asked at the terminal without echo.
func secretLine(e runEnv, fromStdin bool, prompt string) (string, error) {
	if fromStdin {
		line, err := unlessStopped(e.Signals, func() ([]byte, error) { return readFirstLine(e.IO.In, maxPasswordLine) })
		var stopped *exitError
		switch {
		case errors.As(err, &stopped): // a signal: its exit code says it
			return "", err
		case err != nil:
			return "", usageErrorf("--password-stdin: cannot read stdin: %v", err)
		}
		return strings.TrimSuffix(string(line), "\r"), nil
	}
	if !e.IO.IsStdinTTY() || e.ReadSecret == nil {
		return "", usageErrorf("no password given (stdin is not a terminal; pass --password-stdin and the password on stdin)")
	}
	pw, err := e.ReadSecret(prompt)
	if err != nil {
		return "", exitWith(ExitFailed, fmt.Errorf("cannot read the password: %v", err))
	}
	return pw, nil
}

// checkPassword applies the node's 1..72 byte rule (bcrypt's limit) locally.
func checkPassword(pw string) (string, error) {
	if len(pw) == 0 || len(pw) > 72 {
		return "", usageErrorf("a password must be 1 to 72 bytes, not %d", len(pw))
	}
	return pw, nil
}

// userFatal is apiFatal for the user routes: a plain 404 means security is off.
func (e runEnv) userFatal(c *client.Client, err error, name string) error {
	switch {
	case client.IsRouteMissing(err):
		return exitWith(ExitFailed, fmt.Errorf("%s (the node at %s has security off, so it has no users; "+
			"start it with users, e.g. narad dev --user admin:PASS:admin)", describeErr(err), c.BaseURL()))
	case client.StatusOf(err) == http.StatusNotFound && name != "":
		return exitWith(ExitFailed, fmt.Errorf("%s (no user %s; see narad user ls)", describeErr(err), render.Escape(name)))
	case client.StatusOf(err) == http.StatusConflict:
		return exitWith(ExitFailed, fmt.Errorf("%s (see narad user show %s)", describeErr(err), render.Escape(name)))
	case client.StatusOf(err) == http.StatusBadRequest:
		return exitWith(ExitUsage, fmt.Errorf("%s (see narad user --help)", describeErr(err)))
	case client.StatusOf(err) == http.StatusForbidden && nodeSaidWhy(err):
		// The node's reason (the root admin, yourself, a grant missing) is the line.
		return exitWith(ExitFailed, errors.New(describeErr(err)))
	case client.StatusOf(err) == http.StatusForbidden && opOf(err) == client.OpDeleteUser:
		return exitWith(ExitFailed, fmt.Errorf("%s (needs admin; the root admin and yourself cannot be removed)", describeErr(err)))
	case client.StatusOf(err) == http.StatusForbidden && (opOf(err) == client.OpAddUser || opOf(err) == client.OpSetGrants):
		return exitWith(ExitFailed, fmt.Errorf("%s (needs admin; only the root admin grants admin, "+
			"and nobody grants what they do not hold)", describeErr(err)))
	}
	return e.apiFatal(c, err, "")
}

// ownPasswordGiven refuses, before stdin is read, a run whose --password-stdin is
// this command's own (the password being set, which shadows the global flag of the
// same name wherever it is typed) while the caller's user has no password from
// anywhere: `echo "$ADMIN_PW" | narad -u admin --password-stdin user add ci` would
// make the admin's password the new user's and send the admin's request without one,
// which no node accepts (a password is at least one byte), for a bare 401.
func (e runEnv) ownPasswordGiven(passwordStdin bool, cmd string) error {
	if !passwordStdin {
		return nil
	}
	conn, err := e.Connection()
	if err != nil || conn.User == "" || conn.Password != "" {
		return nil // a bad connection is said where it is used; no user is the node's to refuse
	}
	return usageErrorf("%s --password-stdin is the password being set, so %s has none to sign in with "+
		"(give it with NARAD_PASS or a saved context; stdin cannot carry both)", cmd, render.Escape(conn.User))
}

// userText is a user as user show prints it, times in UTC.
func userText(u *client.User) string {
	var b strings.Builder
	fmt.Fprintf(&b, "username:  %s\n", render.Escape(u.Username))
	if u.Root {
		b.WriteString("root:      yes\n")
	}
	fmt.Fprintf(&b, "grants:    %s\n", formatGrants(u.Grants))
	if u.CreatedAtMs > 0 {
		fmt.Fprintf(&b, "created:   %s\n", time.UnixMilli(u.CreatedAtMs).UTC().Format(time.RFC3339))
	}
	if u.UpdatedAtMs > 0 {
		fmt.Fprintf(&b, "updated:   %s\n", time.UnixMilli(u.UpdatedAtMs).UTC().Format(time.RFC3339))
	}
	return b.String()
}

// --- user add ---

// UserAddOptions add a user.
type UserAddOptions struct {
	runEnv
	Name          string
	Grants        []client.UserGrant
	PasswordStdin bool
	Output        string
}

func userAddCmd(f *Factory, run func(*UserAddOptions) error) *cobra.Command {
	opts := &UserAddOptions{}
	var grants []string
	cmd := &cobra.Command{
		Use:   "add NAME --grant ACTION:PATTERN[,PATTERN] ...",
		Short: "Add a user with a password and grants",
		Long: "Add a user. The password is asked twice without echo on a terminal, or read from\n" +
			"the first line of stdin with --password-stdin. --grant is repeatable.\n" +
			"With -o json: the user as the node describes it (never a password).",
		Example: "  narad user add billing --grant consume:orders* --grant produce:invoices\n" +
			"  vault read -field=pw secret/narad/ci |\n" +
			"    narad user add ci --grant produce:ci-* --password-stdin",
		Args: exactArgs(1, "one user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			var err error
			opts.Grants, err = parseGrants(grants)
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateUserName(opts.Name), err)
		},
	}
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "a grant ACTION:PATTERN[,PATTERN] (repeatable), or admin")
	blankOwnChecked(cmd.Flags(), "grant")
	cmd.Flags().BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the new user's password from the first line of stdin")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func userAddRun(opts *UserAddOptions) error {
	if err := opts.ownPasswordGiven(opts.PasswordStdin, "user add"); err != nil {
		return err
	}
	name := render.Escape(opts.Name)
	pw, err := newPassword(opts.runEnv, pipedSecrets(opts.runEnv, opts.PasswordStdin), "password for the new user "+name+": ", "retype the password for "+name+": ", "the first line of stdin")
	if err != nil {
		return err
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	u, err := c.CreateUser(ctx, opts.Name, pw, opts.Grants)
	if err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	grants := formatGrants(u.Grants)
	if len(u.Grants) == 0 {
		grants = "no grants" // not "((none))"
	}
	return opts.report(opts.Output, u, "added user %s (%s)", render.Escape(opts.Name), grants)
}

// --- user ls ---

// UserLsOptions list users.
type UserLsOptions struct {
	runEnv
	Output string
}

func userLsCmd(f *Factory, run func(*UserLsOptions) error) *cobra.Command {
	opts := &UserLsOptions{}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List users and their grants",
		Long: "List users: name, grants, and whether the user is the root admin.\n" +
			"With -o json: {\"users\":[{\"username\", \"grants\":[{\"action\", \"patterns\"}],\n" +
			"\"root\", \"created_at_ms\", \"updated_at_ms\"}]}.",
		Example: "  narad user ls\n" +
			"  narad user ls -o json |\n" +
			"    jq -r '.users[] | select(any(.grants[].action; . == \"admin\"))' |\n" +
			"    jq -r .username",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func userLsRun(opts *UserLsOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	users, err := c.Users(ctx)
	if err != nil {
		return opts.userFatal(c, err, "")
	}
	doc := struct {
		Users []client.User `json:"users"`
	}{nonNil(users)}
	return printList(opts.runEnv, opts.Output, doc, users, "", []string{"NAME", "ROOT", "GRANTS"}, func(u client.User) []string {
		root := ""
		if u.Root {
			root = "root"
		}
		return []string{u.Username, root, formatGrants(u.Grants)}
	})
}

// --- user show ---

// UserShowOptions show one user.
type UserShowOptions struct {
	runEnv
	Name   string
	Output string
}

func userShowCmd(f *Factory, run func(*UserShowOptions) error) *cobra.Command {
	opts := &UserShowOptions{}
	cmd := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a user's grants",
		Long:    "Show a user's grants and when it was created and last changed.\nWith -o json: the user as the node describes it.",
		Example: "  narad user show billing",
		Args:    exactArgs(1, "one user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateUserName(opts.Name))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func userShowRun(opts *UserShowOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	u, err := c.User(ctx, opts.Name)
	if err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	if opts.Output == "json" {
		return opts.printJSON(u)
	}
	return opts.writeOut(userText(u))
}

// --- user grant ---

// UserGrantOptions replace a user's grants.
type UserGrantOptions struct {
	runEnv
	Name   string
	Grants []client.UserGrant
	Output string
}

func userGrantCmd(f *Factory, run func(*UserGrantOptions) error) *cobra.Command {
	opts := &UserGrantOptions{}
	var grants []string
	cmd := &cobra.Command{
		Use:   "grant NAME --grant ACTION:PATTERN ...",
		Short: "Replace every grant of a user",
		Long: "Replace every grant of a user with the --grant flags given (repeatable): grants not\n" +
			"named are taken away. It says what was replaced. Only the root admin grants admin.\n" +
			"With -o json: the user as the node describes it after the change.",
		Example: "  narad user grant billing --grant consume:orders*,refunds \\\n" +
			"    --grant produce:invoices",
		Args: exactArgs(1, "one user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			var err error
			opts.Grants, err = parseGrants(grants)
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateUserName(opts.Name), someGrants(grants), err)
		},
	}
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "a grant ACTION:PATTERN[,PATTERN] (repeatable), or admin")
	blankOwnChecked(cmd.Flags(), "grant")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func userGrantRun(opts *UserGrantOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	// Read first, so that what is replaced can be said.
	before, err := c.User(ctx, opts.Name)
	if err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	u, err := c.SetGrants(ctx, opts.Name, opts.Grants)
	if err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	return opts.report(opts.Output, u, "replaced the grants of %s: was %s, now %s",
		render.Escape(opts.Name), formatGrants(before.Grants), formatGrants(u.Grants))
}

// --- user passwd ---

// UserPasswdOptions change a password.
type UserPasswdOptions struct {
	runEnv
	Name          string
	PasswordStdin bool
	Current       bool
}

func userPasswdCmd(f *Factory, run func(*UserPasswdOptions) error) *cobra.Command {
	opts := &UserPasswdOptions{}
	cmd := &cobra.Command{
		Use:   "passwd NAME",
		Short: "Change a user's password",
		Long: "Change a user's password. The new one is asked twice without echo on a terminal, or\n" +
			"read from the first line of stdin with --password-stdin. An admin sets anyone's;\n" +
			"users changing their own pass --current and give the current password first\n" +
			"(on a terminal it is asked; with --password-stdin it is the first line, the new one\n" +
			"the second).",
		Example: "  narad user passwd billing\n  printf '%s\\n' \"$NEW\" | narad user passwd ci --password-stdin",
		Args:    exactArgs(1, "one user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runWith(f, opts, run, validateUserName(opts.Name))
		},
	}
	cmd.Flags().BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the password(s) from stdin, one a line")
	cmd.Flags().BoolVar(&opts.Current, "current", false, "changing your own password: give the current one too")
	return cmd
}

func userPasswdRun(opts *UserPasswdOptions) error {
	if err := opts.ownPasswordGiven(opts.PasswordStdin, "user passwd"); err != nil {
		return err
	}
	name := render.Escape(opts.Name)
	piped := pipedSecrets(opts.runEnv, opts.PasswordStdin)
	var current string
	if opts.Current {
		var err error
		if current, err = secretLine(opts.runEnv, piped, "current password for "+name+": "); err != nil {
			return err
		}
		if current == "" {
			// Sent, it would only be a failed login against the user.
			hint := "type the password you sign in with first"
			if piped {
				hint = "--current --password-stdin reads the current password, then the new one, a line each"
			}
			return usageErrorf("no current password given (%s)", hint)
		}
	}
	line := "the first line of stdin"
	if opts.Current {
		line = "the second line of stdin (the first is the current password)"
	}
	pw, err := newPassword(opts.runEnv, piped, "new password for "+name+": ", "retype the new password for "+name+": ", line)
	if err != nil {
		return err
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	if err := c.SetPassword(ctx, opts.Name, pw, current); err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	fmt.Fprintf(opts.IO.ErrOut, "changed the password of %s\n", name)
	return nil
}

// --- user rm ---

// UserRmOptions remove a user.
type UserRmOptions struct {
	runEnv
	Name   string
	Yes    bool
	Output string
}

func userRmCmd(f *Factory, run func(*UserRmOptions) error) *cobra.Command {
	opts := &UserRmOptions{}
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"delete"},
		Short:   "Remove a user",
		Long: "Remove a user. On a terminal it asks you to type the name; elsewhere it refuses\n" +
			"unless --yes is given. The root admin and yourself cannot be removed.\n" +
			"With -o json: {\"username\":NAME,\"deleted\":true} on stdout.",
		Example: "  narad user rm old-ci-bot        # asks you to type the name\n  narad user rm old-ci-bot --yes  # in a script",
		Args:    exactArgs(1, "one user name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateUserName(opts.Name))
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "remove without asking")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func userRmRun(opts *UserRmOptions) error {
	name := render.Escape(opts.Name)
	if !opts.Yes {
		prompt := fmt.Sprintf("Remove user %s? Type its name to confirm:", name)
		if err := opts.confirm("remove user "+name, prompt, opts.Name); err != nil {
			return err
		}
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	if err := c.DeleteUser(ctx, opts.Name); err != nil {
		return opts.userFatal(c, err, opts.Name)
	}
	return opts.report(opts.Output, struct {
		Username string `json:"username"`
		Deleted  bool   `json:"deleted"`
	}{opts.Name, true}, "removed user %s", name)
}

// opOf is the operation an error from the client was about (0 when none).
func opOf(err error) client.Op {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Op
	}
	return 0
}
