package cli

import "golang.org/x/sys/unix"

// The termios requests of keysMode on Linux.
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
