// Package chans holds the one question every stop channel is asked (has it been
// closed?) the one way to wait for a call no stop can end (Unless), and a context that a stop
// ends (Context). It imports nothing of narad, so client, consumer, producer, supervisor and
// bench all share it without an arrow pointing the wrong way.
package chans

import "context"

// Closed reports whether ch is closed, without waiting. A nil ch is never closed
// (an Options.Stop left unset means "no stop"). It is for channels that are only
// ever closed, never sent on: a value waiting in ch would be taken and read as a close.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Context is a child of parent that also ends when stop closes (a nil stop: never),
// for a call that takes a context but must end at a stop channel as well. Its cancel
// ends the watch of stop with it.
func Context(parent context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
