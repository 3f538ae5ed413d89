package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// While the screen is up its queries reach the terminal (which answers them to the
// screen's own reader); once it is closing they are dropped and the rest still written.
func TestScreenOutputDropsQueriesOnlyWhenClosing(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "tty"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, s := newScreenOutput(f)
	frame := "\x1b[?1049l\x1b[?2026$p\x1b[?2027$pbye"
	if n, err := w.Write([]byte(frame)); n != len(frame) || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	s.close()
	if n, err := w.Write([]byte(frame)); n != len(frame) || err != nil {
		t.Fatalf("write while closing = %d, %v (a write must report all it was given)", n, err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want := frame + "\x1b[?1049lbye"; string(got) != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
