//go:build !windows

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// resizeSignals delivers SIGWINCH, the terminal's new size.
func resizeSignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
