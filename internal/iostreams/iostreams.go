// Package iostreams owns the process's standard streams and what is known about them:
// whether each is a terminal and whether colour is wanted. Commands never touch
// os.Stdout directly, so tests can run every output path with the terminal on and off.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// IOStreams is the process's stdin, stdout and stderr plus their terminal facts.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	// colorMode is "auto", "always" or "never"; noColor records NO_COLOR.
	colorMode string
	noColor   bool
}

// System returns the streams of the running process.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
		colorMode: "auto",
		noColor:   os.Getenv("NO_COLOR") != "",
	}
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Test returns streams backed by buffers, none of them a terminal.
func Test() (ios *IOStreams, in *bytes.Buffer, out *bytes.Buffer, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, colorMode: "auto"}, in, out, errOut
}

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetTTY overrides the terminal facts; tests use it to run the terminal paths.
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// SetColorMode records --color (auto, always, never).
func (s *IOStreams) SetColorMode(mode string) { s.colorMode = mode }

// SetNoColor records NO_COLOR.
func (s *IOStreams) SetNoColor(v bool) { s.noColor = v }

// ColorEnabled decides colour for stdout, in one place: --color always wins, then
// NO_COLOR and --color never, then whether stdout is a terminal.
func (s *IOStreams) ColorEnabled() bool { return s.colorFor(s.stdoutTTY) }

// ColorEnabledStderr is ColorEnabled for stderr (summaries, tables of counters).
func (s *IOStreams) ColorEnabledStderr() bool { return s.colorFor(s.stderrTTY) }

func (s *IOStreams) colorFor(tty bool) bool {
	switch s.colorMode {
	case "always":
		return true
	case "never":
		return false
	}
	return tty && !s.noColor
}
