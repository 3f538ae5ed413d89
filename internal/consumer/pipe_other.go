//go:build !linux || narad_pipe_as_file

package consumer

import "io"

// pipeOf is nil on systems where narad cannot count a pipe's unread bytes: there a line
// counts as taken once written, as for a file. A build tagged narad_pipe_as_file does
// the same on Linux: not a product, but the ceiling bench/run measures the exact pipe
// against (what a pipe costs with nothing waiting for the reader).
func pipeOf(io.Writer) pipeProbe { return nil }
