//go:build gendocs

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// completionFiles are the scripts gen-docs writes under completions/, by the
// name each shell looks for: bash-completion and fish load by command name, zsh
// by _name on $fpath.
var completionFiles = []struct {
	name string
	gen  func(root *cobra.Command, w io.Writer) error
}{
	{"narad.bash", genBashCompletion},
	{"_narad", func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) }},
	{"narad.fish", func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) }},
	{"narad.ps1", func(root *cobra.Command, w io.Writer) error { return root.GenPowerShellCompletionWithDesc(w) }},
}

// newGenDocsCmd is the hidden command the release and CI use to write what is
// checked in beside the code: shell completions, man pages and the Markdown
// command reference, all from the one command tree so they cannot disagree.
func newGenDocsCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write completions/, man/ and docs/cli/ under DIR",
		Long:   "Write shell completions to DIR/completions, a man page per command to DIR/man and\nthe Markdown command reference to DIR/docs/cli. Used by scripts/gen-docs.sh.",
		Hidden: true,
		Args:   exactArgs(1, "one directory"),
		// Files and directories: the script for directories only needs bash-completion.
		ValidArgsFunction: cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := genDocs(cmd.Root(), args[0]); err != nil {
				return exitWith(ExitFailed, fmt.Errorf("gen-docs: %v", unwrapPathError(err)))
			}
			fmt.Fprintf(f.IO.ErrOut, "wrote completions/, man/ and docs/cli/ under %s\n", args[0])
			return nil
		},
	}
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
		if err := c.gen(root, &buf); err != nil {
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
	return doc.GenMarkdownTree(root, reference)
}

func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
