package chans

import (
	"errors"
	"testing"
)

func TestUnless(t *testing.T) {
	v, err := Unless[int, struct{}](nil, func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("fn done first: %v, %v; want 7, nil", v, err)
	}
	stop := make(chan struct{})
	close(stop)
	never := make(chan struct{})
	defer close(never)
	v, err = Unless(stop, func() (int, error) { <-never; return 7, nil })
	if v != 0 || !errors.Is(err, ErrGaveUp) {
		t.Errorf("stop first: %v, %v; want 0, ErrGaveUp", v, err)
	}
}
