package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// The demo writes its steps' stderr (summaries, counter tables) to stdout, so what
// goes there must follow stdout's terminal facts: `narad demo > file` run from a
// terminal (stderr still one) writes no escape codes into the file.
func TestDemoRedirectedFromTerminalHasNoEscapes(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(true, false, true)
	f := &Factory{IO: ios, Getenv: os.Getenv, Now: time.Now, Signals: NewSignals()}
	if code := Run(f, []string{"demo"}); code != ExitOK {
		t.Fatalf("exit %d; stderr %q", code, errOut.String())
	}
	if i := strings.IndexByte(out.String(), 0x1b); i >= 0 {
		t.Errorf("escape code in redirected output: %q", out.String()[max(0, i-40):min(len(out.String()), i+40)])
	}
	if !strings.Contains(out.String(), "received") {
		t.Errorf("no counters in the demo's output:\n%s", out.String())
	}
}
