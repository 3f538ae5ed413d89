package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command whose -o takes json takes --jq too: the exporter is one, and a
// command added later must not be left out of it.
func TestEveryJSONOutputTakesJQ(t *testing.T) {
	root := NewRootCmd(&Factory{IO: iostreamsTest(), Getenv: func(string) string { return "" }, Signals: NewSignals()})
	n := 0
	walkCommands(root, func(c *cobra.Command) {
		o := c.LocalNonPersistentFlags().Lookup("output")
		if o == nil || !strings.Contains(o.Usage, "json") {
			return
		}
		n++
		if c.LocalNonPersistentFlags().Lookup(jqFlagName) == nil {
			t.Errorf("%s has -o json but no --jq", c.CommandPath())
		}
	})
	if n < 20 {
		t.Errorf("only %d commands with -o json found", n)
	}
}
