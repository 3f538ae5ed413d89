//go:build linux

package iostreams

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func openNull(t *testing.T, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(os.DevNull, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// What the runtime puts in place of a closed stdout is told from the /dev/null a user
// chose, and from a daemon's one /dev/null dup'd onto every stream.
func TestStdoutClosedAtStartIsToldFromDevNull(t *testing.T) {
	file, err := os.OpenFile(filepath.Join(t.TempDir(), "out"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	runtimes := openNull(t, os.O_RDWR) // what checkfds opens for a closed fd
	stdin := openNull(t, os.O_RDWR)    // the runtime's own for a closed stdin too
	daemon := openNull(t, os.O_RDWR)
	daemonDup := os.NewFile(dupOf(t, daemon), "dup")
	defer daemonDup.Close()

	cases := []struct {
		name   string
		out    *os.File
		others []*os.File
		want   bool
	}{
		{"runtime's /dev/null", runtimes, []*os.File{os.Stdin, os.Stderr}, true},
		{"every stream closed", runtimes, []*os.File{stdin, openNull(t, os.O_RDWR)}, true},
		{"> /dev/null", openNull(t, os.O_WRONLY), nil, false},
		{"a file opened read-write", file, nil, false},
		{"a daemon's dup of one /dev/null", daemon, []*os.File{daemonDup}, false},
	}
	for _, tc := range cases {
		if got := reopenedClosed(tc.out, tc.others...); got != tc.want {
			t.Errorf("%s: closed %v, want %v", tc.name, got, tc.want)
		}
	}
	// The probe for a dup leaves the open file's flags as they were.
	before := flags(t, daemon)
	reopenedClosed(daemon, daemonDup)
	if after := flags(t, daemon); after != before {
		t.Errorf("flags %#x after the probe, %#x before", after, before)
	}
}

func dupOf(t *testing.T, f *os.File) uintptr {
	t.Helper()
	var fd int
	var err error
	control(f, func(n int) bool { fd, err = unix.Dup(n); return true })
	if err != nil {
		t.Fatal(err)
	}
	return uintptr(fd)
}

func flags(t *testing.T, f *os.File) int {
	t.Helper()
	var fl int
	var err error
	control(f, func(n int) bool { fl, err = unix.FcntlInt(uintptr(n), unix.F_GETFL, 0); return true })
	if err != nil {
		t.Fatal(err)
	}
	return fl
}
