package cli

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestDistance is how many edits a typo may be from the name it suggests.
const suggestDistance = 2

// teach makes every level of the tree answer a typo with the near miss: cobra
// suggests subcommands only at the root, so a command that has subcommands gets
// an Args check of its own ("narad topic lss" -> did you mean ls?).
func teach(c *cobra.Command) {
	c.SuggestionsMinimumDistance = suggestDistance
	if c.HasParent() && c.HasSubCommands() {
		c.Args = unknownSubcommand
	}
	for _, sub := range c.Commands() {
		teach(sub)
	}
}

// unknownSubcommand refuses an argument to a command that only groups others,
// naming the subcommand it most likely meant.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := "see " + cmd.CommandPath() + " --help"
	if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
		hint = "did you mean " + strings.Join(near, " or ") + "? " + hint
	}
	return usageErrorf("unknown command %q for %q (%s)", args[0], cmd.CommandPath(), hint)
}

// flagError is every command's answer to a flag pflag could not parse: one line,
// exit 2, and for an unknown flag the nearest ones the command does have.
func flagError(cmd *cobra.Command, err error) error {
	hint := "see --help"
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		if near := nearFlags(cmd.Flags(), name); len(near) > 0 {
			hint = "did you mean --" + strings.Join(near, " or --") + "? " + hint
		}
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("%v (%s)", plainFlagError(err), hint)}
}

// plainFlagError says what was wrong with a flag's value in words, not as the Go
// parser's own error (`strconv.ParseInt: parsing "abc": invalid syntax`).
func plainFlagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	name := "--" + bad.GetFlag().Name
	why := bad.Unwrap().Error()
	var num *strconv.NumError
	switch {
	case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
		why = "out of range"
	case errors.As(err, &num) && strings.HasPrefix(num.Func, "ParseInt"), errors.As(err, &num) && strings.HasPrefix(num.Func, "ParseUint"):
		why = "not a whole number"
	case errors.As(err, &num) && num.Func == "ParseFloat":
		why = "not a number"
	case errors.As(err, &num) && num.Func == "ParseBool":
		why = "not true or false"
	case strings.HasPrefix(why, "time: "):
		why = "not a duration (e.g. 500ms, 30s, 1h30m)"
	}
	return fmt.Errorf("invalid %s %q: %s", name, bad.GetValue(), why)
}

// nearFlags are the visible flags of fs closest to typed: within suggestDistance
// edits, or starting with it; the closest first.
func nearFlags(fs *pflag.FlagSet, typed string) []string {
	type candidate struct {
		name string
		dist int
	}
	var found []candidate
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := editDistance(strings.ToLower(typed), strings.ToLower(f.Name))
		if d <= suggestDistance || (len(typed) > 1 && strings.HasPrefix(f.Name, typed)) {
			found = append(found, candidate{f.Name, d})
		}
	})
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].dist != found[j].dist {
			return found[i].dist < found[j].dist
		}
		return found[i].name < found[j].name
	})
	const most = 3
	names := make([]string, 0, most)
	for i := 0; i < len(found) && i < most; i++ {
		names = append(names, found[i].name)
	}
	return names
}

// editDistance is the Levenshtein distance between a and b, in bytes (flag names
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
