//go:build unix

package config

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading without waiting for a FIFO's writer; on a
// regular file O_NONBLOCK changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
