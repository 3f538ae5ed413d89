package consumer_test

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

// pipe is an os.Pipe closed when the test ends. On Linux the Printer sees into it: a
// line counts as printed once the reader took it out.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// readBlocks reads as a block reader does (head, grep -m, jq), whatever each read
// returns, until it has at least n lines, and returns what it read.
func readBlocks(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	buf := make([]byte, 64<<10)
	var got []byte
	for bytes.Count(got, []byte("\n")) < n {
		k, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:k]...)
	}
	return got
}

// takeLines reads n lines a byte at a time, as sh's `read` does, so that nothing after
// them leaves the pipe.
func takeLines(t *testing.T, r io.Reader, n int) string {
	t.Helper()
	var got []byte
	var b [1]byte
	for n > 0 {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Errorf("read: %v", err)
			break
		}
		got = append(got, b[0])
		if b[0] == '\n' {
			n--
		}
	}
	return string(got)
}

// waitFor polls cond until it holds; the deadline only bounds a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
