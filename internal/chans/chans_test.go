package chans

import "testing"

func TestClosed(t *testing.T) {
	open := make(chan struct{})
	shut := make(chan struct{})
	close(shut)
	for name, tc := range map[string]struct {
		ch   chan struct{}
		want bool
	}{"nil": {nil, false}, "open": {open, false}, "closed": {shut, true}} {
		if got := Closed(tc.ch); got != tc.want {
			t.Errorf("%s: Closed = %v, want %v", name, got, tc.want)
		}
	}
}
