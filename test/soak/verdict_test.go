//go:build unix

package soak

import (
	"fmt"
	"testing"
)

// verdict is a test's checks: each that fails fails the test, with its message.
type verdict struct{ t *testing.T }

func newVerdict(t *testing.T) *verdict { return &verdict{t: t} }

// check fails the test with the message unless ok, and reports ok.
func (v *verdict) check(ok bool, format string, args ...any) bool {
	v.t.Helper()
	if !ok {
		v.t.Error(fmt.Sprintf(format, args...))
	}
	return ok
}
