//go:build linux

package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestConfirmationCtrlCInATerminal: the real binary at a confirmation prompt in a
// pseudo-terminal; Ctrl-C typed there (the terminal turns it into SIGINT) ends it at
// once with exit 130, sends nothing, and leaves the terminal as it found it.
func TestConfirmationCtrlCInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildNarad(t)
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request after an interrupted prompt: %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(node.Close)

	cmd := exec.Command(bin, "topic", "delete", "orders", "-s", node.URL)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1"}
	r := startInPTY(t, cmd, nil)
	r.waitFor("prompt", contains("Type its name to confirm:"))
	r.typeKeys([]byte{3}) // Ctrl-C
	werr := r.end("Ctrl-C")
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	if code != 130 || !strings.Contains(r.screen.String(), "narad: did not delete topic orders (interrupted)") {
		t.Errorf("exit %d; the terminal showed %q", code, r.screen.String())
	}
	r.modesKept()
}
