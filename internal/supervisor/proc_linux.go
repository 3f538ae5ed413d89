package supervisor

import "syscall"

// groupAttr starts each command in its own process group, so a stop reaches what it
// started too. Pdeathsig covers the one case the supervisor cannot, narad itself
// killed, but only for the command: what it started is reparented to init then.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup signals the command's whole process group.
func signalGroup(c *child, sig syscall.Signal) error { return syscall.Kill(-c.pgid, sig) }
