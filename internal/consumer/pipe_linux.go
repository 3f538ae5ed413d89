//go:build linux && !narad_pipe_as_file

// Built with -tags narad_pipe_as_file, narad takes a pipe for a file (pipe_other.go):
// bench/run builds it so to measure, side by side, the most an exact pipe could reach.

package consumer

import (
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pipeOf returns a probe of w when w is a pipe (S_ISFIFO) whose unread bytes Linux can
// count, else nil: a file or a terminal takes everything written at once.
//
// For a Printer the pipe is shrunk to one page where Linux lets us (F_SETPIPE_SZ, see
// shrink), and restored at the end: a pipe of one buffer is writable again (POLLOUT) only once the reader took
// all of it, so the writer can sleep in poll until its line was taken instead of
// asking FIONREAD over and over. Where the pipe cannot shrink (it already holds more,
// say), the writer asks FIONREAD, backing off from a few microseconds to pipeTick.
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
	p := &linuxPipe{rc: rc}
	if _, err := p.unread(); err != nil {
		return nil
	}
	return p
}

// shrink makes the pipe one page, where Linux lets us, for waitTaken.
func (p *linuxPipe) shrink() {
	_ = p.rc.Control(func(fd uintptr) {
		size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		if err != nil {
			return
		}
		page := os.Getpagesize()
		if size <= page {
			p.oneBuffer = size == page
			return
		}
		if _, err := unix.FcntlInt(fd, unix.F_SETPIPE_SZ, page); err == nil {
			p.oneBuffer, p.size = true, size
		}
	})
}

type linuxPipe struct {
	rc syscall.RawConn
	// oneBuffer: the pipe holds one page, so POLLOUT means the reader took everything.
	oneBuffer bool
	// slowReader: the last wait outlasted pipeSpinUntil, so the next one sleeps in
	// poll at once rather than look first (see lookTaken).
	slowReader bool
	size       int // the size to restore, 0 if it was not changed
}

// unread is FIONREAD on the pipe: the bytes written that the reader has not taken yet.
func (p *linuxPipe) unread() (int, error) {
	var n int
	var err error
	if cerr := p.rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// waitTaken waits up to about d for the pipe to be empty.
func (p *linuxPipe) waitTaken(d time.Duration) (taken, gone bool, err error) {
	if p.oneBuffer {
		start := time.Now()
		if !p.slowReader && p.lookTaken(start) {
			return true, false, nil
		}
		events, err := p.poll(unix.POLLOUT, d)
		if err != nil {
			return false, false, err
		}
		p.slowReader = time.Since(start) > pipeSpinUntil
		if events&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return false, true, nil
		}
		// Writable again: the one buffer is free, so nothing in the pipe is unread
		// (whoever else may write to it).
		return events&unix.POLLOUT != 0, false, nil
	}
	// A reader keeping up takes a line within microseconds; a slow one is looked at
	// less and less often.
	pause := 20 * time.Microsecond
	for deadline := time.Now().Add(d); ; {
		n, err := p.unread()
		if err != nil || n == 0 {
			return err == nil, false, err
		}
		events, err := p.poll(0, pause)
		if err != nil {
			return false, false, err
		}
		if events&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return false, true, nil
		}
		if time.Now().After(deadline) {
			return false, false, nil
		}
		pause = min(2*pause, pipeTick)
	}
}

// pipeSpin is how long the writer looks for its line taken before it sleeps in poll,
// and pipeSpinUntil how long a wait may last for the next one still to look first.
//
// A reader keeping up takes a line within microseconds, also from another CPU, but a
// writer asleep in poll must then be woken from there: on a VM whose idle vCPUs halt,
// through the hypervisor. Measured here (2 vCPUs, 1,000 lines through cat, narad and
// cat pinned to different CPUs) that wake-up doubled the drain: 131 ms sleeping at
// once, 72 ms looking for 20 µs first, the same when both share a CPU. A reader slower
// than pipeSpinUntil (a `while read` loop doing work) is not looked for: it would
// cost CPU for nothing.
const (
	pipeSpin      = 20 * time.Microsecond
	pipeSpinUntil = 500 * time.Microsecond
)

// lookTaken looks, for up to pipeSpin from start, whether the reader took all the pipe
// holds, letting the run's other goroutines go on between looks (on one P, the consume
// and the acks).
func (p *linuxPipe) lookTaken(start time.Time) bool {
	for time.Since(start) < pipeSpin {
		if n, err := p.unread(); err != nil || n == 0 {
			return err == nil
		}
		runtime.Gosched()
	}
	return false
}

// poll waits up to d for events on the pipe (POLLERR and POLLHUP are always reported),
// with microsecond resolution (ppoll).
func (p *linuxPipe) poll(events int16, d time.Duration) (int16, error) {
	var revents int16
	var err error
	cerr := p.rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		ts := unix.NsecToTimespec(int64(d))
		for {
			_, err = unix.Ppoll(fds, &ts, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		revents = fds[0].Revents
	})
	if cerr != nil {
		// The file was closed: nobody can read what it holds any more.
		return unix.POLLNVAL, nil
	}
	return revents, err
}

// restore gives the pipe back its size, for whoever writes to it after narad.
func (p *linuxPipe) restore() {
	if p.size == 0 {
		return
	}
	_ = p.rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, p.size) })
	p.size = 0
}

// readerGone polls the pipe for up to d for POLLERR/POLLHUP: no reader left. Asking for
// no event at all still reports those two, and only those.
func (p *linuxPipe) readerGone(d time.Duration) (bool, error) {
	events, err := p.poll(0, d)
	return events&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0, err
}
