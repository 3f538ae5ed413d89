//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Only a regular file of at most 1 MiB is read as the config: a FIFO is refused
// without waiting for a writer (which left narad deaf to Ctrl-C), /dev/zero without
// reading it (it grew to hundreds of MB), and each says what it is.
func TestLoadReadsOnlyARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "is not a regular file but a FIFO"},
		{"/dev/zero", "is not a regular file but a character device"},
		{dir, "is not a regular file but a directory"},
		{big, "is larger than 1 MiB"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(c.path)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			// Not a timing threshold: Load has no reason to take any time, and a
			// writer ends the wait of a Load that opened the FIFO.
			if w, werr := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); werr == nil {
				w.Close()
			}
			err = <-done
			t.Errorf("%s: Load waited on it", c.path)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--config") {
			t.Errorf("%s: %v; want %q and a hint", c.path, err, c.want)
		}
	}
}
