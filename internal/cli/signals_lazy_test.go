package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// An instant command (version, a help) never wires the process's signals, which
// would start the runtime's signal thread; a command that runs does, before it runs.
func TestSignalsAreWiredOnlyForCommandsThatRun(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	for _, c := range []struct {
		args  []string
		wired bool
	}{
		{[]string{"version"}, false},
		{[]string{"sub", "--help"}, false},
		{[]string{"--version"}, false},
		{[]string{"context", "ls"}, true},
	} {
		sigs := ProcessSignals()
		ios, _, _, _ := iostreams.Test()
		f := &Factory{IO: ios, Getenv: func(k string) string {
			if k == "NARAD_CONFIG" {
				return config
			}
			return os.Getenv(k)
		}, Now: time.Now, Signals: sigs}
		code := Run(f, c.args)
		if wired := sigs.unwire != nil; wired != c.wired || code != 0 {
			t.Errorf("narad %q: exit %d, signals wired %v, want exit 0 and %v", c.args, code, wired, c.wired)
		}
		sigs.Close()
	}
}
