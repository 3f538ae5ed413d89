//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import "golang.org/x/sys/unix"

// keysMode makes the terminal on fd hand over each key as it is pressed, without
// echoing it, while output stays cooked (a "\n" still returns the carriage) and
// Ctrl-C is still a signal: what a view that prints lines, not a screen, needs to
// read q. The returned func gives the terminal back its modes. ok is false when no
// key should be read: fd is not a terminal whose modes can be set, or this process
// runs in the background (`&`), where a read or a mode change would stop it.
func keysMode(fd int) (restore func(), ok bool) {
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || pg != unix.Getpgrp() {
		return func() {}, false
	}
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return func() {}, false
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return func() {}, false
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, true
}
