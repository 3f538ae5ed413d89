package iostreams

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
)

// ReadSecret reads one secret line from stdin: on a terminal without echo (so a
// password is never shown or kept in scrollback), elsewhere the first line of the
// input, its line ending dropped. An empty input is an error.
//
// The terminal path uses charmbracelet/x/term, which lipgloss already brings in, so
// no module is added for it.
func (s *IOStreams) ReadSecret() (string, error) {
	if f, ok := s.In.(*os.File); ok && s.stdinTTY {
		b, err := term.ReadPassword(f.Fd())
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return readFirstLine(s.In)
}

// readFirstLine reads up to the first newline one byte at a time, so nothing after
// the line is taken from a stdin the command may still read.
func readFirstLine(r io.Reader) (string, error) {
	var b strings.Builder
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n == 1 {
			if one[0] == '\n' {
				break
			}
			b.WriteByte(one[0])
			if b.Len() > 4096 {
				return "", errors.New("line longer than 4096 bytes")
			}
			continue
		}
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				break
			}
			if err == io.EOF {
				return "", errors.New("no input")
			}
			return "", err
		}
	}
	return strings.TrimSuffix(b.String(), "\r"), nil
}
