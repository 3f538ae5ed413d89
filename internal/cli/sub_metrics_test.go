package cli

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestListenWhyHints: the hint of a --metrics-addr that cannot be listened on fits
// its cause; "pick another port" is no help for a name that does not resolve.
func TestListenWhyHints(t *testing.T) {
	op := func(err error) error {
		return &net.OpError{Op: "listen", Net: "tcp", Err: err}
	}
	for _, tc := range []struct {
		err       error
		why, hint string
	}{
		{op(os.NewSyscallError("bind", syscall.EADDRINUSE)), "address already in use", "pick another port"},
		{op(os.NewSyscallError("bind", syscall.EACCES)), "permission denied", "ports below 1024 need privileges: pick one above"},
		{op(os.NewSyscallError("bind", syscall.EADDRNOTAVAIL)), "not an address of this machine", "use one of its own, or 127.0.0.1:PORT"},
		{op(&net.DNSError{Err: "no such host", Name: "metrics.invalid", Server: "10.0.0.53:53", IsNotFound: true}),
			"cannot resolve metrics.invalid", "use an address of this machine, or 127.0.0.1:PORT"},
		{errors.New("odd"), "odd", "use an address of this machine, or 127.0.0.1:PORT"},
	} {
		why, hint := listenWhy(tc.err)
		if why != tc.why || hint != tc.hint {
			t.Errorf("listenWhy(%v) = %q, %q; want %q, %q", tc.err, why, hint, tc.why, tc.hint)
		}
	}
}
