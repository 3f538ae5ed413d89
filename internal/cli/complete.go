package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/textenc"
)

// defaultCompletionTimeout bounds how long TAB waits for the node: a completion
// that hangs is worse than none.
const defaultCompletionTimeout = 1500 * time.Millisecond

// fileFlags are the flags whose value is a path; every other flag that takes a
// value completes no file names.
var fileFlags = map[string]bool{"file": true, "config": true, "ca-cert": true}

// topicFlags are the flags whose value is an existing topic: they complete the
// node's topics (a test finds every flag that takes a topic and checks it does).
var topicFlags = map[string]bool{"dead-letter": true, "parent": true}

// topicArgs are the names a usage line gives an argument that is an existing topic.
var topicArgs = map[string]bool{"TOPIC": true, "PARENT": true, "CHILD": true}

// addCompletions teaches TAB about the user's world, by one convention for the
// whole tree so that a new command gets it by its usage line: a first argument
// named TOPIC completes the node's topics (except for topic create, whose topic
// does not exist yet), a NAME under context completes saved contexts; -o, --color
// and --stats complete their values, --context and --server what the config holds,
// --partition the topic's partitions; nothing completes file names unless it
// takes a file.
func addCompletions(f *Factory, root *cobra.Command) {
	pf := root.PersistentFlags()
	register(root, "color", fixedValues("auto\tcolour on a terminal", "always", "never"))
	register(root, "context", f.completeContextNames)
	register(root, "server", f.completeServers)
	noFilesForValueFlags(root, pf)
	walkCommands(root, func(c *cobra.Command) {
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && c.Runnable() && !c.HasSubCommands() {
			c.ValidArgsFunction = f.argCompletion(c)
		}
		fl := c.LocalNonPersistentFlags()
		if fl.Lookup("output") != nil {
			if fl.Lookup("template") != nil {
				register(c, "output", fixedValues("text\ta line per message", "json\tone JSON object a line", "raw\tthe payload bytes"))
			} else {
				register(c, "output", fixedValues("text\tfor people", "json\tfor scripts"))
			}
		}
		if fl.Lookup("stats") != nil {
			register(c, "stats", fixedValues("text\ta table", "json\tone JSON object"))
		}
		if fl.Lookup("partition") != nil {
			register(c, "partition", f.completePartitions)
		}
		for name := range topicFlags {
			if fl.Lookup(name) != nil {
				register(c, name, f.completeTopics)
			}
		}
		noFilesForValueFlags(c, fl)
	})
}

func walkCommands(c *cobra.Command, visit func(*cobra.Command)) {
	visit(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, visit)
	}
}

// register is RegisterFlagCompletionFunc for a flag known to exist once; a
// second registration keeps the first.
func register(c *cobra.Command, flag string, fn cobra.CompletionFunc) {
	_ = c.RegisterFlagCompletionFunc(flag, fn)
}

// noFilesForValueFlags keeps file names out of the completion of every flag in fs
// that takes a value which is not a path and has no completion of its own.
func noFilesForValueFlags(c *cobra.Command, fs *pflag.FlagSet) {
	fs.VisitAll(func(fl *pflag.Flag) {
		if fileFlags[fl.Name] || fl.Value.Type() == "bool" {
			return
		}
		if _, ok := c.GetFlagCompletionFunc(fl.Name); ok {
			return
		}
		register(c, fl.Name, cobra.NoFileCompletions)
	})
}

func fixedValues(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// argNames are the positional arguments of a usage line, up to its flags, without
// brackets; a repeated one ends with "...": "attach PARENT CHILD" -> [PARENT CHILD],
// "status [TOPIC...] [--watch]" -> [TOPIC...].
func argNames(use string) []string {
	var names []string
	for _, f := range strings.Fields(use)[1:] {
		f = strings.Trim(f, "[]")
		if f == "" || strings.HasPrefix(f, "-") || f == "flags" {
			break
		}
		names = append(names, f)
	}
	return names
}

// isTopicArg reports whether argument i of a command with these argument names is
// an existing topic.
func isTopicArg(names []string, i int) bool {
	if i >= len(names) {
		last := len(names) - 1
		return last >= 0 && strings.HasSuffix(names[last], "...") && topicArgs[strings.TrimSuffix(names[last], "...")]
	}
	return topicArgs[strings.TrimSuffix(names[i], "...")]
}

// argCompletion is what TAB offers for c's positional arguments.
func (f *Factory) argCompletion(c *cobra.Command) cobra.CompletionFunc {
	names := argNames(c.Use)
	// topic create names a topic that does not exist yet.
	creates := c.Name() == "create"
	// context use/show/rm NAME: a saved context (context add names a new one).
	contextName := len(names) > 0 && names[0] == "NAME" && c.HasParent() && c.Parent().Name() == "context" && c.Name() != "add"
	// sub TOPIC -- COMMAND: past the topic comes a program and its arguments, which
	// may be files. (Whether -- was typed cannot be told here: while completing,
	// cobra parses the line once with a -- of its own, which pflag remembers.)
	commandFollows := strings.Contains(c.Use, "-- COMMAND")
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && commandFollows {
			return nil, cobra.ShellCompDirectiveDefault
		}
		if !creates && isTopicArg(names, len(args)) {
			return f.completeTopics(cmd, args, toComplete)
		}
		if len(args) == 0 && contextName {
			return f.completeContextNames(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func (f *Factory) completionContext() (context.Context, context.CancelFunc) {
	d := f.CompletionTimeout
	if d <= 0 {
		d = defaultCompletionTimeout
	}
	return context.WithTimeout(context.Background(), d)
}

// completeTopics lists the node's topics. Any failure (no node, no grant, too
// slow) completes nothing and says nothing: TAB is not the place for errors.
func (f *Factory) completeTopics(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := f.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := f.completionContext()
	defer cancel()
	topics, err := c.ListTopics(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, t := range topics {
		// A name the API would refuse (a control character from a faulty node) is
		// never typed into the user's shell.
		if !strings.HasPrefix(t.Name, toComplete) || validateTopicName(t.Name) != nil {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(t.Name, plural(int64(t.Partitions), "partition")))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePartitions offers 0..N-1 for the topic already typed.
func (f *Factory) completePartitions(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 || validateTopicName(args[0]) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := f.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := f.completionContext()
	defer cancel()
	t, err := c.Topic(ctx, args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for i := 0; i < t.Partitions; i++ {
		if p := strconv.Itoa(i); strings.HasPrefix(p, toComplete) {
			out = append(out, p)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeContextNames lists the saved contexts, the current one described so.
func (f *Factory) completeContextNames(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := f.Config()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(cfg.Contexts))
	for name := range cfg.Contexts {
		if strings.HasPrefix(name, toComplete) && config.ValidateContextName(name) == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]cobra.Completion, 0, len(names))
	for _, name := range names {
		// The server is a hand-edited file's text, and the shell shows the description
		// on the terminal.
		desc := textenc.Escape(config.RedactURL(cfg.Contexts[name].Server))
		if name == cfg.CurrentContext {
			desc += " (current)"
		}
		out = append(out, cobra.CompletionWithDesc(name, desc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeServers offers the servers of the saved contexts and the default; a
// server saved with credentials in its URL is left out rather than shown.
func (f *Factory) completeServers(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	servers := map[string]string{config.DefaultServer: "narad dev"}
	if cfg, err := f.Config(); err == nil {
		for name, c := range cfg.Contexts {
			if c.Server == "" || config.RedactURL(c.Server) != c.Server || config.ValidateContextName(name) != nil {
				continue
			}
			servers[c.Server] = "context " + name
		}
	}
	var out []cobra.Completion
	for s, desc := range servers {
		if strings.HasPrefix(s, toComplete) && config.ValidateServer(s) == nil {
			out = append(out, cobra.CompletionWithDesc(s, desc))
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// bashNeedsPackage is the line of cobra's bash script that calls a function of
// the bash-completion package, which a plain bash (a container, macOS) lacks.
const bashNeedsPackage = `    _get_comp_words_by_ref "$@" cur prev words cword
`

// bashWithoutPackage keeps that call where the package is loaded and otherwise
// splits the line itself.
const bashWithoutPackage = `    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # Plain bash, without the bash-completion package: the words are the line up to
    # the cursor split on blanks only, so --stats=json and http://host:port stay whole.
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<< "$line"
    if [[ -z $line || $line == *[[:blank:]] ]]; then
        words+=("")
    fi
    cword=$((${#words[@]} - 1))
    cur=${words[cword]}
    prev=${words[cword-1]:-}
`

// genBashCompletion is cobra's bash completion (V2, with descriptions), made to
// work in a plain bash too.
func genBashCompletion(root *cobra.Command, w io.Writer) error {
	var buf bytes.Buffer
	if err := root.GenBashCompletionV2(&buf, true); err != nil {
		return err
	}
	script := buf.String()
	if !strings.Contains(script, bashNeedsPackage) {
		return errors.New("cobra's bash completion script changed: update genBashCompletion")
	}
	_, err := io.WriteString(w, strings.Replace(script, bashNeedsPackage, bashWithoutPackage, 1))
	return err
}
