//go:build !unix

package config

import "os"

// openNonBlocking is a plain open where the system has no O_NONBLOCK for it; readRegular
// has already seen a regular file at path.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
