package soak

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// pendingDefects are checks known to fail until a fix of issue 7 lands on main. A failed
// check filed under one of these keys skips its test (naming the defect and what it saw)
// instead of failing it, so the suites start green; a key comes out as soon as its fix
// is merged, and then the check fails like any other. NARAD_SOAK_STRICT=1 fails them
// all, to try a branch that claims a fix.
var pendingDefects = map[string]string{
	// Every issue 7 fix these suites wait on has landed: "pipe" (defect 1), "abandon"
	// (defect 2), "drain" (defect 5) and "stranded" (defect 6) now fail like any check.
	// Example of a line: "pipe": "pending issue 7 defect 1 (| head acks what nobody read)",
}

// verdict collects a test's checks: real failures fail the test at once, failures of a
// pending defect are kept for a skip at the end.
type verdict struct {
	t       *testing.T
	pending map[string][]string
}

func newVerdict(t *testing.T) *verdict { return &verdict{t: t, pending: map[string][]string{}} }

// check fails the test with the message unless ok; key files it under a pending defect
// ("" for none).
func (v *verdict) check(key string, ok bool, format string, args ...any) bool {
	v.t.Helper()
	if ok {
		return true
	}
	msg := fmt.Sprintf(format, args...)
	if reason, isPending := pendingDefects[key]; isPending && os.Getenv("NARAD_SOAK_STRICT") != "1" {
		v.pending[reason] = append(v.pending[reason], msg)
		return false
	}
	v.t.Error(msg)
	return false
}

// finish skips the test when the only failures were of pending defects, listing them.
func (v *verdict) finish() {
	v.t.Helper()
	if len(v.pending) == 0 {
		return
	}
	var b strings.Builder
	reasons := make([]string, 0, len(v.pending))
	for r := range v.pending {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		msgs := v.pending[r]
		fmt.Fprintf(&b, "%s: %d failed checks, e.g. %s\n", r, len(msgs), msgs[0])
	}
	if v.t.Failed() {
		v.t.Log("also failing, filed under pending defects:\n" + b.String())
		return
	}
	v.t.Skip("skipped until pending fixes land:\n" + b.String())
}
