//go:build !linux

package iostreams

import "os"

// reopenedClosed is Linux only: elsewhere a stream closed at start is not told from
// /dev/null, and is written to as today.
func reopenedClosed(*os.File, ...*os.File) bool { return false }
