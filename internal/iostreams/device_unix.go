//go:build unix

package iostreams

import (
	"os"
	"syscall"
)

// sameDevice reports whether a and b are nodes of one device (their Rdev): a
// /dev/null made with mknod elsewhere (a container's, a chroot's) is still /dev/null.
func sameDevice(a, b os.FileInfo) bool {
	sa, okA := a.Sys().(*syscall.Stat_t)
	sb, okB := b.Sys().(*syscall.Stat_t)
	return okA && okB && sa.Rdev == sb.Rdev
}
