package cli_test

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/narad/narad/internal/cli"
)

// faultnode 502|silent starts a node that fails that way (see cli.StartFaultNode) on
// a loopback port for the rest of the script, and sets FAULT_URL to it.
func cmdFaultNode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: faultnode 502|silent")
	}
	u, stop, err := cli.StartFaultNode(args[0])
	ts.Check(err)
	ts.Defer(stop)
	ts.Setenv("FAULT_URL", u)
}
