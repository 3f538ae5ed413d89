package cli

import (
	"bytes"
	"io"
	"os"
	"sync/atomic"

	"github.com/charmbracelet/x/ansi"
)

// screenOutput is the terminal the hold screen draws on. Once the screen is closing
// it drops bubbletea's capability queries (DECRQM for modes 2026 and 2027).
// bubbletea sends them with its first frame; a screen that closes before drawing one
// (a --peek whose --until is past) sends them as it leaves, after the alternate screen
// is gone, and a terminal that answers then types the answer into the shell
// (`^[[?2026;2$y`): nobody is left to read it. Dropped, they are as a terminal that
// does not answer. It is a *os.File still (embedded), so bubbletea sizes and sets
// up the terminal through it as before.
type screenOutput struct {
	*os.File
	closing atomic.Bool
}

// capabilityQueries are what bubbletea asks the terminal (see screenOutput): strings,
// so that no command pays for them at start-up.
var capabilityQueries = [...]string{ansi.RequestModeSynchronizedOutput, ansi.RequestModeUnicodeCore}

// newScreenOutput wraps w when it is a file (a terminal); anything else it returns as
// it is, with nothing to drop.
func newScreenOutput(w io.Writer) (io.Writer, *screenOutput) {
	f, ok := w.(*os.File)
	if !ok {
		return w, nil
	}
	s := &screenOutput{File: f}
	return s, s
}

// close says the screen is closing: no query is passed on from now on.
func (s *screenOutput) close() {
	if s != nil {
		s.closing.Store(true)
	}
}

func (s *screenOutput) Write(p []byte) (int, error) {
	if !s.closing.Load() || !bytes.Contains(p, []byte("$p")) {
		return s.File.Write(p)
	}
	q := p
	for _, query := range capabilityQueries {
		q = bytes.ReplaceAll(q, []byte(query), nil)
	}
	if _, err := s.File.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}
