//go:build unix

package supervisor_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// processGone reports whether pid no longer runs. A killed orphan stays a zombie
// until whoever adopted it reaps it, which is not ours to wait for.
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}
