//go:build unix && !linux

package supervisor

import "syscall"

// groupAttr starts each command in its own process group, so a stop reaches what it
// started too. (No parent-death signal outside Linux: narad killed with SIGKILL
// leaves the command running there.)
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup signals the command's whole process group.
func signalGroup(c *child, sig syscall.Signal) error { return syscall.Kill(-c.pgid, sig) }
