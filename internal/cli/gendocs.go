//go:build gendocs

package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// completionFiles are the scripts gen-docs writes under completions/, by the
// name each shell looks for: bash-completion and fish load by command name, zsh
// by _name on $fpath.
var completionFiles = []struct{ name, shell string }{
	{"narad.bash", "bash"}, {"_narad", "zsh"}, {"narad.fish", "fish"}, {"narad.ps1", "powershell"},
}

// newGenDocsCmd is the hidden command the release and CI use to write what is
// checked in beside the code: shell completions, man pages and the Markdown
// command reference, all from the one command tree so they cannot disagree.
func newGenDocsCmd(f *Factory) *cobra.Command { return genDocsCmd(f, genDocsRun) }

// GenDocsOptions is what the hidden gen-docs command runs with.
type GenDocsOptions struct {
	runEnv
	Dir string
	// Root is the command tree the files describe.
	Root *cobra.Command
}

func genDocsCmd(f *Factory, run func(*GenDocsOptions) error) *cobra.Command {
	opts := &GenDocsOptions{}
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write completions/, man/ and docs/cli/ under DIR",
		Long:   "Write shell completions to DIR/completions, a man page per command to DIR/man and\nthe Markdown command reference to DIR/docs/cli. Used by scripts/gen-docs.sh.",
		Hidden: true,
		Args:   exactArgs(1, "one directory"),
		// Files and directories: the script for directories only needs bash-completion.
		ValidArgsFunction: cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Root = args[0], cmd.Root()
			return runWith(f, opts, run)
		},
	}
}

func genDocsRun(opts *GenDocsOptions) error {
	if err := genDocs(opts.Root, opts.Dir); err != nil {
		return exitWith(ExitFailed, fmt.Errorf("gen-docs: %v", unwrapPathError(err)))
	}
	fmt.Fprintf(opts.IO.ErrOut, "wrote completions/, man/ and docs/cli/ under %s\n", opts.Dir)
	return nil
}

func genDocs(root *cobra.Command, dir string) error {
	// No "Auto generated on <today>" line: the output must not change by itself.
	disableAutoGenTag(root)
	// --version is otherwise added only when the root itself runs.
	root.InitDefaultVersionFlag()

	completions := filepath.Join(dir, "completions")
	man := filepath.Join(dir, "man")
	reference := filepath.Join(dir, "docs", "cli")
	for _, d := range []string{completions, man, reference} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, c := range completionFiles {
		var buf bytes.Buffer
		if err := completionGen(c.shell)(root, &buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(completions, c.name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	// The date on every man page is fixed, not today, so that regenerating the pages
	// from the same commands gives the same bytes and CI can fail on drift; move it
	// when the pages change in a way worth dating.
	date := time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)
	header := &doc.GenManHeader{Section: "1", Date: &date, Source: "narad", Manual: "Narad Manual"}
	if err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: man, CommandSeparator: "-"}); err != nil {
		return err
	}
	if err := fixManTree(root, man); err != nil {
		return err
	}
	return doc.GenMarkdownTree(root, reference)
}

// fixManTree rewrites each page cobra wrote: its lists are kept as written and its
// SEE ALSO names every page a reader may want next.
func fixManTree(c *cobra.Command, dir string) error {
	if !c.IsAvailableCommand() && c.HasParent() {
		return nil
	}
	path := filepath.Join(dir, manName(c)+".1")
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	page = []byte(seeAlso(c, description(c, string(page))))
	if err := os.WriteFile(path, page, 0o644); err != nil {
		return err
	}
	for _, sub := range c.Commands() {
		if err := fixManTree(sub, dir); err != nil {
			return err
		}
	}
	return nil
}

func manName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// description writes the page's DESCRIPTION from the command's text itself, in
// place of go-md2man's reading of it as Markdown: that filled every list (flags,
// counters) into a paragraph and dropped the indent of its first line. Prose is
// filled; each run of indented lines is kept as written (the help test keeps such
// lines narrow enough for the page's indent).
func description(c *cobra.Command, page string) string {
	const head = ".SH DESCRIPTION\n"
	i := strings.Index(page, head)
	if i < 0 {
		return page
	}
	j := strings.Index(page[i+len(head):], "\n.SH ")
	if j < 0 {
		return page
	}
	long := c.Long
	if long == "" {
		long = c.Short
	}
	var b strings.Builder
	list := false
	for _, l := range strings.Split(strings.TrimSpace(long), "\n") {
		indented := strings.HasPrefix(l, " ")
		switch {
		case indented && !list:
			b.WriteString(".nf\n")
		case !indented && list:
			b.WriteString(".fi\n")
		}
		list = indented
		if l == "" {
			b.WriteString(".PP\n")
			continue
		}
		b.WriteString(roffLine(l) + "\n")
	}
	if list {
		b.WriteString(".fi\n")
	}
	return page[:i+len(head)] + b.String() + "\n" + page[i+len(head)+j:]
}

// roffLine is l as text in a man page: backslashes doubled, and a line that would
// read as a request (a leading . or ') made plain.
func roffLine(l string) string {
	l = strings.ReplaceAll(l, `\`, `\\`)
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		l = `\&` + l
	}
	return l
}

// seeAlso replaces cobra's SEE ALSO, which names only the parent and the children,
// with the parents up to narad, the siblings and the children.
func seeAlso(c *cobra.Command, page string) string {
	i := strings.Index(page, ".SH SEE ALSO\n")
	if i < 0 {
		return page
	}
	var names []string
	for p := c.Parent(); p != nil; p = p.Parent() {
		names = append(names, manName(p))
	}
	if c.HasParent() {
		for _, s := range c.Parent().Commands() {
			if s != c && s.IsAvailableCommand() {
				names = append(names, manName(s))
			}
		}
	}
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, manName(s))
		}
	}
	refs := make([]string, len(names))
	for j, n := range names {
		refs[j] = `\fB` + n + `(1)\fP`
	}
	return page[:i] + ".SH SEE ALSO\n" + strings.Join(refs, ", ") + "\n"
}

func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
