package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A flag given a blank value (--server "", --stats=, --ack-exit-codes ' ') is far more
// often a script's unset variable than a choice: taken as the default, or as nothing,
// it runs something other than what the script says, without a word. So every flag
// that takes a text value refuses a blank one, here, once for every command, before
// anything runs (exit 2), unless its definition says otherwise with one of the marks
// below. A new flag is refused blank until someone decides '' means something.

// blankNote is the flag annotation holding a flag's rule for a blank value:
// []string{mode, what, hint}.
const blankNote = "narad/blank"

const (
	// blankMeans: '' is a value CLI.md gives a meaning (--delimiter '', --key '').
	blankMeans = "means"
	// blankOwnCheck: the flag's own parser refuses a blank value, naming the values
	// it takes: a better line than this file's.
	blankOwnCheck = "own"
	// blankRefused: refused with the flag's own words (what it needs, the hint).
	blankRefused = "refused"
	// blankEmptyOnly: only '' is refused; spaces are a value (a --grep of " ").
	blankEmptyOnly = "empty"
)

// blankMeansValue marks flags for which ” is a value.
func blankMeansValue(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		setBlankNote(fs, n, blankMeans, "", "")
	}
}

// blankOwnChecked marks flags whose own check refuses a blank value.
func blankOwnChecked(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		setBlankNote(fs, n, blankOwnCheck, "", "")
	}
}

// blankNeeds says what a blank value of name is refused with: "--NAME needs WHAT,
// not ” (HINT)".
func blankNeeds(fs *pflag.FlagSet, name, what, hint string) {
	setBlankNote(fs, name, blankRefused, what, hint)
}

// emptyNeeds is blankNeeds for a flag to which spaces are a value: only ” is refused.
func emptyNeeds(fs *pflag.FlagSet, name, what, hint string) {
	setBlankNote(fs, name, blankEmptyOnly, what, hint)
}

func setBlankNote(fs *pflag.FlagSet, name, mode, what, hint string) {
	if err := fs.SetAnnotation(name, blankNote, []string{mode, what, hint}); err != nil {
		panic(err) // a flag name misspelt where it is defined: a bug, caught by every test
	}
}

// refuseBlankFlags is the usage error for the first flag given to cmd with a blank
// value it does not take, nil when there is none.
func refuseBlankFlags(cmd *cobra.Command) error {
	var refused error
	cmd.Flags().Visit(func(fl *pflag.Flag) { // the flags given only
		if refused != nil {
			return
		}
		values, ok := textValues(fl)
		if !ok {
			return // a number, a duration, a switch: its parser refuses ''
		}
		mode, what, hint := blankMode, "a value", "an unset variable? leave the flag out for its default"
		if note := fl.Annotations[blankNote]; len(note) == 3 {
			mode = note[0]
			if note[1] != "" {
				what, hint = note[1], note[2]
			}
		}
		if mode == blankMeans || mode == blankOwnCheck {
			return
		}
		for _, v := range values {
			if v == "" || mode != blankEmptyOnly && strings.TrimSpace(v) == "" {
				shown := "''"
				if v != "" {
					shown = fmt.Sprintf("%q", v)
				}
				refused = usageErrorf("--%s needs %s, not %s (%s)", fl.Name, what, shown, hint)
				return
			}
		}
	})
	return refused
}

// blankMode is the rule of a flag with no mark: a blank value is refused.
const blankMode = blankRefused

// textValues are the values a text flag was given (each of a repeatable one); ok is
// false for a flag that does not take text.
func textValues(fl *pflag.Flag) (values []string, ok bool) {
	switch fl.Value.Type() {
	case "string":
		return []string{fl.Value.String()}, true
	case "stringArray", "stringSlice":
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			if values = sv.GetSlice(); len(values) == 0 {
				values = []string{""} // --x= on a comma list is no item at all
			}
			return values, true
		}
	}
	return nil, false
}
