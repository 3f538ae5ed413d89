//go:build windows

package supervisor

import "syscall"

// groupAttr: Windows has no process groups to signal; the command alone is stopped.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup ends the command: Windows has no SIGTERM to ask politely with.
func signalGroup(c *child, _ syscall.Signal) error { return c.cmd.Process.Kill() }
