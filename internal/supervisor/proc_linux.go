package supervisor

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAttr starts each command in its own process group, so a stop reaches what it
// started too. Pdeathsig covers the one case the supervisor cannot, narad itself
// killed, but only for the command: what it started is reparented to init then.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup signals the command's whole process group.
func signalGroup(c *child, sig syscall.Signal) error { return syscall.Kill(-c.pgid, sig) }

// childPipe is a pipe with one end for the command (theirs: its stdin when
// childReads, else its stdout or stderr) and the other for us. Only our end joins
// the runtime's poller: os.Pipe would add both, and take the command's end out
// again (and back to blocking mode) at the start, a dozen system calls per command
// for nothing.
func childPipe(childReads bool) (ours, theirs *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	our, their := p[0], p[1]
	if childReads {
		our, their = their, our
	}
	if err := syscall.SetNonblock(our, true); err != nil {
		_ = syscall.Close(our)
		_ = syscall.Close(their)
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(our), "|0"), os.NewFile(uintptr(their), "|1"), nil
}

// unreadBytes is how many bytes wait in the pipe f reads (FIONREAD, which Linux calls TIOCINQ): output the
// command wrote that the pump has not read yet.
func unreadBytes(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}
