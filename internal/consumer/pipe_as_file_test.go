//go:build linux && narad_pipe_as_file

package consumer_test

import (
	"testing"

	"github.com/narad/narad/internal/consumer"
)

// The ceiling build bench/run measures the exact pipe against must really take a pipe
// for a file, or its rows would compare the exact pipe with itself.
func TestPipeAsFileBuildSeesNoPipe(t *testing.T) {
	_, w := pipe(t)
	if consumer.NewPrinter(w, lines{}).AcksWhenRead() {
		t.Fatal("a Printer to a pipe acks once the reader took a line in a narad_pipe_as_file build; want once written")
	}
}
