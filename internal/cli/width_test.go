package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"
)

// everyCommand is each command of the whole tree that a user can ask help for.
func everyCommand() []*cobra.Command {
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(&Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()}))
	return all
}

// overWidth lists the lines of text wider than cols, with where they came from.
func overWidth(where, text string, cols int) []string {
	var long []string
	for _, l := range strings.Split(text, "\n") {
		if w := runewidth.StringWidth(l); w > cols {
			long = append(long, where+": "+l)
		}
	}
	return long
}

// Every command's help, off a terminal and on one 80 columns wide, has no line over
// 80 columns: texts, examples and each flag's text wrapped beside its name.
func TestHelpFitsEightyColumns(t *testing.T) {
	var long []string
	for _, c := range everyCommand() {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), "narad"))
		args := append(strings.Fields(path), "--help")
		code, out, _ := runTree(t, args, newRootFor)
		if code != 0 {
			t.Fatalf("narad %s: exit %d", strings.Join(args, " "), code)
		}
		long = append(long, overWidth("narad "+strings.Join(args, " "), out, 80)...)
		if text, ok := quickHelp(args); ok {
			long = append(long, overWidth("quick help of narad "+path, text, 80)...)
		}
	}
	if len(long) > 0 {
		t.Errorf("%d help lines over 80 columns:\n%s", len(long), strings.Join(long, "\n"))
	}
}

// On a terminal wider than 80 columns, flag texts use the width it has, and no more.
func TestHelpWrapsToTheTerminal(t *testing.T) {
	for _, cols := range []int{100, 132} {
		ios := iostreamsTest()
		ios.SetTTY(false, true, true)
		ios.SetWidth(cols)
		f := &Factory{IO: ios, Getenv: func(string) string { return "" }, Signals: NewSignals()}
		code := Run(f, []string{"sub", "--help"})
		out := ios.Out.(interface{ String() string }).String()
		if code != 0 || !strings.Contains(out, "--max-processing-time") {
			t.Fatalf("sub --help at %d columns: exit %d\n%s", cols, code, out)
		}
		widest := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  -") || strings.HasPrefix(l, "      ") {
				widest = max(widest, runewidth.StringWidth(l))
			}
		}
		if widest > cols || (cols > 80 && widest <= 80) {
			t.Errorf("sub --help at %d columns: widest flag line %d", cols, widest)
		}
	}
}

// manIndent is how far man indents a page's text: an example or a list line there
// must be this much narrower than 80 columns to stay within the margin.
const manIndent = 7

// Examples and the indented lines of a command's text (lists) are kept as written, in
// the help and in the man page, where they start 7 columns in: each fits 80 columns
// there.
func TestExamplesAndListsFitTheManPage(t *testing.T) {
	var long []string
	for _, c := range everyCommand() {
		long = append(long, overWidth(c.CommandPath()+" example", c.Example, 80-manIndent)...)
		for _, l := range strings.Split(c.Long, "\n") {
			if strings.HasPrefix(l, " ") {
				long = append(long, overWidth(c.CommandPath()+" list", l, 80-manIndent)...)
			}
		}
	}
	if len(long) > 0 {
		t.Errorf("%d example or list lines over %d columns:\n%s", len(long), 80-manIndent, strings.Join(long, "\n"))
	}
}

// The checked-in man pages: what man shows as written (examples, lists) fits 80
// columns after its indent, and each page's SEE ALSO names its parents and siblings
// (and its children), so a reader can go on from any page.
func TestManPagesFitAndLinkTheirFamily(t *testing.T) {
	for _, c := range everyCommand() {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		if c.Name() == "help" {
			continue
		}
		page, err := os.ReadFile(filepath.Join("..", "..", "man", name+".1"))
		if err != nil {
			t.Errorf("%s: %v (run scripts/gen-docs.sh)", name, err)
			continue
		}
		asWritten := false
		for _, l := range strings.Split(string(page), "\n") {
			switch l {
			case ".EX", ".nf":
				asWritten = true
			case ".EE", ".fi":
				asWritten = false
			default:
				if asWritten && runewidth.StringWidth(strings.ReplaceAll(l, `\\`, `\`)) > 80-manIndent {
					t.Errorf("%s.1: runs past the margin: %q", name, l)
				}
			}
		}
		_, see, _ := strings.Cut(string(page), ".SH SEE ALSO\n")
		var want []*cobra.Command
		for p := c.Parent(); p != nil; p = p.Parent() {
			want = append(want, p)
		}
		if c.HasParent() {
			want = append(want, c.Parent().Commands()...)
		}
		for _, w := range want {
			if w == c || !w.IsAvailableCommand() && w.HasParent() {
				continue
			}
			ref := `\fB` + strings.ReplaceAll(w.CommandPath(), " ", "-") + `(1)\fP`
			if !strings.Contains(see, ref) {
				t.Errorf("%s.1: SEE ALSO does not name %s", name, w.CommandPath())
			}
		}
	}
}
