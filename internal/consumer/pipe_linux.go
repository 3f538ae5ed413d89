//go:build linux

package consumer

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pipeOf returns a probe of w when w is a pipe (S_ISFIFO) whose unread bytes Linux can
// count, else nil: a file or a terminal takes everything written at once.
func pipeOf(w io.Writer) pipeProbe {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	// SyscallConn rather than Fd: Fd would switch the file to blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	p := linuxPipe{rc}
	if _, err := p.unread(); err != nil {
		return nil
	}
	return p
}

type linuxPipe struct{ rc syscall.RawConn }

// unread is FIONREAD on the pipe: the bytes written that the reader has not taken yet.
func (p linuxPipe) unread() (int, error) {
	var n int
	var err error
	if cerr := p.rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// readerGone polls the pipe for up to d for POLLERR/POLLHUP: no reader left. Asking for
// no event at all still reports those two, and only those.
func (p linuxPipe) readerGone(d time.Duration) (bool, error) {
	var gone bool
	var err error
	cerr := p.rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		ms := int(max(d/time.Millisecond, 1))
		var n int
		for {
			n, err = unix.Poll(fds, ms)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		gone = n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0
	})
	if cerr != nil {
		// The file was closed: nobody can read what it holds any more.
		return true, nil
	}
	return gone, err
}

// neverBlocks reports whether writes to w finish without waiting on a reader: a
// regular file or /dev/null. A write to anything else (a pipe, a terminal that was
// sent ^S, a socket) may block for as long as its reader pleases.
func neverBlocks(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	if st.Mode().IsRegular() {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && st.Mode()&os.ModeCharDevice != 0 && sys.Rdev == unix.Mkdev(1, 3) // /dev/null
}
