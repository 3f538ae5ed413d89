// Package iostreams owns the process's standard streams and what is known about them:
// whether each is a terminal and whether colour is wanted. Commands never touch
// os.Stdout directly, so tests can run every output path with the terminal on and off.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// DefaultWidth is the width narad writes for when the output is not a terminal, or a
// terminal that does not say how wide it is: the classic 80 columns.
const DefaultWidth = 80

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
	// outWidth and errWidth are the terminals' widths in columns, asked for only when
	// something is laid out (0: not asked yet); width asks the system.
	outWidth, errWidth       int
	width                    func(f *os.File) int
	inFile, outFile, errFile *os.File
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
		width:     terminalWidth,
		inFile:    os.Stdin,
		outFile:   os.Stdout,
		errFile:   os.Stderr,
	}
}

// terminalWidth is f's width in columns, or DefaultWidth when the system cannot say.
func terminalWidth(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	return DefaultWidth
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

// StdoutClosed reports whether stdout was closed when narad started (`>&-`): on Linux
// the Go runtime put /dev/null in its place, so every line written would be lost
// unseen. Elsewhere, for streams that are not files (tests), and for a `> /dev/null`
// the user chose, it is false. Asked only by the commands that would lose lines.
func (s *IOStreams) StdoutClosed() bool { return reopenedClosed(s.outFile, s.inFile, s.errFile) }

// SetTTY overrides the terminal facts; tests use it to run the terminal paths.
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// StdoutWidth is how wide stdout's lines may be: the terminal's width when stdout is
// one, else DefaultWidth.
func (s *IOStreams) StdoutWidth() int {
	if s.outWidth == 0 {
		s.outWidth = s.widthOf(s.stdoutTTY, s.outFile)
	}
	return s.outWidth
}

// StderrWidth is StdoutWidth for stderr (banners, notices).
func (s *IOStreams) StderrWidth() int {
	if s.errWidth == 0 {
		s.errWidth = s.widthOf(s.stderrTTY, s.errFile)
	}
	return s.errWidth
}

func (s *IOStreams) widthOf(tty bool, f *os.File) int {
	if !tty || s.width == nil || f == nil {
		return DefaultWidth
	}
	return s.width(f)
}

// SetWidth overrides both terminals' widths; tests use it to lay out for a terminal
// of a given size.
func (s *IOStreams) SetWidth(cols int) { s.outWidth, s.errWidth = cols, cols }

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
