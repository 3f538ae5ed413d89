//go:build linux && narad_pipe_as_file

package consumer

import (
	"os"
	"testing"
)

// The ceiling build bench/run measures the exact pipe against must really take a pipe
// for a file, or its rows would compare the exact pipe with itself.
func TestPipeAsFileBuildSeesNoPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if p := pipeOf(w); p != nil {
		t.Fatalf("pipeOf(a pipe) = %T in a narad_pipe_as_file build, want nil", p)
	}
}
