package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/narad/narad/internal/client"
)

// The exit codes of every command (CLI.md), in one table.
const (
	ExitOK          = 0   // done
	ExitFailed      = 1   // server, network, a message that could not be produced
	ExitUsage       = 2   // usage or invalid input
	ExitTimeout     = 3   // --timeout ran out before --count was reached
	ExitLeaseGone   = 4   // a lease was gone (410) for some handle
	ExitHangup      = 129 // SIGHUP
	ExitInterrupted = 130 // SIGINT
	ExitTerminated  = 143 // SIGTERM
)

// exitError carries an exit code out of a command. Err is printed as the one fatal
// line unless it is nil (the command already reported, e.g. per-message failures).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith ends a command with code, printing err (if any) as the fatal line.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// usageErrorf is bad input: exit 2 with one line.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// exitCodeFor maps an error that reached Main to the process exit code.
func exitCodeFor(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own argument and flag complaints are usage errors.
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "required flag") ||
		strings.HasPrefix(msg, "invalid argument") || strings.HasPrefix(msg, "if any flags in the group") {
		return ExitUsage
	}
	if client.IsGone(err) {
		return ExitLeaseGone
	}
	return ExitFailed
}

// signalExitCode is the conventional 128+N for the signal that stopped us.
func signalExitCode(sig syscall.Signal) int {
	switch sig {
	case syscall.SIGTERM:
		return ExitTerminated
	case syscall.SIGHUP:
		return ExitHangup
	}
	return ExitInterrupted
}
