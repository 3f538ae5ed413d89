//go:build !linux

package supervisor

import "os"

// childPipe is a pipe with one end for the command (theirs: its stdin when
// childReads, else its stdout or stderr) and the other for us.
func childPipe(childReads bool) (ours, theirs *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil || !childReads {
		return r, w, err
	}
	return w, r, nil
}
