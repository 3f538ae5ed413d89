//go:build !linux

package supervisor

import (
	"errors"
	"os"
)

// childPipe is a pipe with one end for the command (theirs: its stdin when
// childReads, else its stdout or stderr) and the other for us.
func childPipe(childReads bool) (ours, theirs *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil || !childReads {
		return r, w, err
	}
	return w, r, nil
}

// unreadBytes is Linux only: elsewhere the output still in a command's pipe at its exit
// is not waited for past outputDrain.
func unreadBytes(*os.File) (int, error) { return 0, errors.ErrUnsupported }
