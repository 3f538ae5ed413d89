package iostreams

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Writes to a file or /dev/null never wait for a reader (the printer makes them inline,
// whatever a stop); a pipe's may block, and go through a goroutine a stop can abandon.
func TestNeverBlocksIsFilesAndDevNull(t *testing.T) {
	f, null, w := filesOfEachKind(t)
	for _, c := range []struct {
		name string
		w    io.Writer
		want bool
	}{{"file", f, true}, {"/dev/null", null, true}, {"pipe", w, false}, {"buffer", &bytes.Buffer{}, false}} {
		if got := NeverBlocks(c.w); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// filesOfEachKind opens a regular file, /dev/null (write-only, as a shell's `>`
// does) and the write end of a pipe, all closed when the test ends.
func filesOfEachKind(t *testing.T) (file, null, pipe *os.File) {
	t.Helper()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	null, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return file, null, w
}
