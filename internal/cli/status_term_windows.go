//go:build windows

package cli

import "os"

// resizeSignals is nothing on Windows, which has no SIGWINCH: the watch reads the
// size again at each refresh.
func resizeSignals() (<-chan os.Signal, func()) { return nil, func() {} }
