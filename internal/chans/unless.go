package chans

import "errors"

// ErrGaveUp is Unless's answer when stop came first.
var ErrGaveUp = errors.New("gave up waiting")

// Unless runs fn in a goroutine of its own and returns what it returns, or ErrGaveUp as
// soon as stop is ready first. fn is then left to finish on its own: it waits on what
// no stop can end (a read of a stdin that never ends, a keyring that never answers),
// and the caller is about to give up on it. A nil stop never comes.
func Unless[T, S any](stop <-chan S, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-stop:
		var zero T
		return zero, ErrGaveUp
	}
}
