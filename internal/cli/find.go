package cli

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
)

// findFlags are --filter and --grep as typed, on replay and sub (where only --peek
// takes them: a consumer that filtered would take messages it never shows).
type findFlags struct{ filter, grep string }

func (o *findFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.filter, "filter", "", "show only messages this jq expression is true for (neither false nor null), e.g. '.payload.status == \"failed\"'")
	fl.StringVar(&o.grep, "grep", "", "show only messages whose key or payload (as text) this regular expression (RE2) matches; binary payloads never match")
	blankOwnChecked(fl, "filter")
	emptyNeeds(fl, "grep", "a regular expression", "e.g. 'ord_12[0-9]'; leave the flag out for every message")
}

// given reports whether either flag was typed.
func (o *findFlags) given(changed func(string) bool) bool {
	return changed("filter") || changed("grep")
}

// resolve compiles the flags into a Matcher, nil when neither was given. A bad
// expression or regular expression is a usage error, before any request.
func (o *findFlags) resolve(changed func(string) bool) (*replay.Matcher, error) {
	if !o.given(changed) {
		return nil, nil
	}
	mt := &replay.Matcher{}
	if changed("filter") {
		q, err := render.CompileJQ(o.filter)
		if err != nil {
			return nil, usageErrorf("invalid --filter: %v (a jq expression, e.g. '.payload.amount > 100')", err)
		}
		mt.Filter = q
	}
	if changed("grep") {
		re, err := regexp.Compile(o.grep)
		if err != nil {
			return nil, usageErrorf("invalid --grep %q: %v (an RE2 regular expression, e.g. 'ord_12[0-9]')", o.grep, regexpWhy(err))
		}
		mt.Grep = re
	}
	return mt, nil
}

// regexpWhy is what is wrong with a regular expression, without the expression
// again (the error line quotes it once).
func regexpWhy(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code) + " " + strconv.Quote(se.Expr)
	}
	return err.Error()
}

// findOptions are what a replay or peek shows and reports: the matcher (nil: every
// message) and --stats ("", text or json).
type findOptions struct {
	Match *replay.Matcher
	Stats string
	// Heard, when set, is the client's nodeHeard: a read --timeout ends before the
	// node answered anything fails (neverAnswered), as exec mode does.
	Heard *nodeHeard
}

// filterFailures says once, at the end, that the filter failed on some messages
// (they were not shown), with the first failure. A read whose exit is
// filterFailedAll's error says it there instead, in its one line.
func (e runEnv) filterFailures(mt *replay.Matcher, exit error) {
	if mt == nil || mt.Errors == 0 || exit != nil && errors.Is(exit, errFilterFailedAll) {
		return
	}
	fmt.Fprintf(e.IO.ErrOut, "narad: warning: --filter failed on %s, not shown (first: %s)\n",
		countOf(mt.Errors, "message", "messages"), render.Escape(mt.FirstErr.Error()))
}

// errFilterFailedAll marks filterFailedAll's error.
var errFilterFailedAll = errors.New("--filter failed on every message")

// filterFailedAll is the exit of a read whose --filter failed on every message it ran
// on, nil otherwise. It compiled, so this is not exit 2 (that is for input refused
// before any request): the run failed on the data, exit 1, as a --jq that fails at
// run time does. A filter that fails on some messages only (a topic of mixed
// payloads) is a warning, exit 0.
func filterFailedAll(mt *replay.Matcher) error {
	if !mt.FilterFailedAll() {
		return nil
	}
	return exitWith(ExitFailed, fmt.Errorf("%w it ran on (%d), none shown (first: %s) (fix --filter; '.payload | objects | ...' skips payloads that are not objects)",
		errFilterFailedAll, mt.Errors, render.Escape(mt.FirstErr.Error())))
}
