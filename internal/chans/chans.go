// Package chans holds the one question every stop channel is asked (has it been
// closed?) and the one way to wait for a call no stop can end (Unless). It imports nothing of narad, so client, consumer, producer, supervisor and
// bench all share it without an arrow pointing the wrong way.
package chans

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
