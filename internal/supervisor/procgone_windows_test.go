package supervisor_test

import "os"

// processGone reports whether pid no longer runs: Windows opens no process that has
// exited and been waited for.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	_ = p.Release()
	return false
}
