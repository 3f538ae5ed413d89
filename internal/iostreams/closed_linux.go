//go:build linux

package iostreams

import (
	"os"

	"golang.org/x/sys/unix"
)

// reopenedClosed reports whether f looks like a standard stream that was closed when
// the process started. Go's runtime (checkfds) puts /dev/null, opened read-write, in
// place of a closed fd 0, 1 or 2, so writes to it succeed and go nowhere. A shell's
// `> /dev/null` and os/exec's nil Stdout open it write-only, so they are not taken for
// it. A daemon (daemon(3), start-stop-daemon --background) opens /dev/null read-write
// once and dups it onto all three: that f shares its open file with one of others, which
// the runtime's separate opens never do, so a worker started that way is not refused.
func reopenedClosed(f *os.File, others ...*os.File) bool {
	if f == nil || !isDevNullRW(f) {
		return false
	}
	for _, o := range others {
		if o != nil && isDevNullRW(o) && sameOpenFile(f, o) {
			return false
		}
	}
	return true
}

// isDevNullRW reports whether f is the /dev/null character device opened read-write.
func isDevNullRW(f *os.File) bool {
	var st, null unix.Stat_t
	if !control(f, func(fd int) bool { return unix.Fstat(fd, &st) == nil }) ||
		unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != null.Rdev {
		return false
	}
	return control(f, func(fd int) bool {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		return err == nil && fl&unix.O_ACCMODE == unix.O_RDWR
	})
}

// sameOpenFile reports whether a and b are one open file (dups of each other): file
// status flags belong to the open file, so a flag set through a shows through b. The
// flag is O_APPEND, which means nothing on /dev/null, and is put back at once.
func sameOpenFile(a, b *os.File) bool {
	same := false
	control(a, func(fa int) bool {
		fl, err := unix.FcntlInt(uintptr(fa), unix.F_GETFL, 0)
		if err != nil {
			return false
		}
		if _, err := unix.FcntlInt(uintptr(fa), unix.F_SETFL, fl^unix.O_APPEND); err != nil {
			return false
		}
		control(b, func(fb int) bool {
			got, err := unix.FcntlInt(uintptr(fb), unix.F_GETFL, 0)
			same = err == nil && got&unix.O_APPEND != fl&unix.O_APPEND
			return true
		})
		_, _ = unix.FcntlInt(uintptr(fa), unix.F_SETFL, fl)
		return true
	})
	return same
}

// control runs do on f's descriptor; SyscallConn rather than Fd, which would switch f
// to blocking mode.
func control(f *os.File, do func(fd int) bool) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	if err := rc.Control(func(fd uintptr) { ok = do(int(fd)) }); err != nil {
		return false
	}
	return ok
}
