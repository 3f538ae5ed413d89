package cli

import (
	"io"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/iostreams"
)

// runCmd executes a command built with a run of the test's own, which records
// whether it ran: the flags' checks are tested apart from what the command does.
func runCmd(cmd *cobra.Command, ran *bool, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	*ran = false
	return cmd.Execute()
}

// status's flag combinations are checked before it runs, and what it runs with
// carries the flags and the invocation's streams.
func TestOptionsOfStatus(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *StatusOptions
	ran := false
	build := func() *cobra.Command {
		return statusCmd(&Factory{IO: ios}, func(o *StatusOptions) error { got, ran = o, true; return nil })
	}
	if err := runCmd(build(), &ran, "orders", "--wait-empty", "--interval", "1s", "--timeout", "1m"); err != nil || !ran {
		t.Fatalf("ran=%v, %v", ran, err)
	}
	if !got.WaitEmpty || got.Interval != time.Second || got.Timeout != time.Minute || len(got.Topics) != 1 || got.IO != ios {
		t.Errorf("options: %+v", got)
	}
	for _, bad := range [][]string{
		{"--watch", "--wait-empty", "orders"}, {"--wait-empty"}, {"--interval", "1s"}, {"--wait-empty", "t", "--count", "2"},
		{"-w", "--interval", "0s"}, {"-o", "yaml"}, {"bad name"},
	} {
		if err := runCmd(build(), &ran, bad...); ran || exitCodeFor(err) != ExitUsage {
			t.Errorf("%v: ran=%v, exit %d (%v); want exit 2 before running", bad, ran, exitCodeFor(err), err)
		}
	}
}

// user grant refuses to run without a grant (it would take every grant away) or
// with a bad one; its Options carry the parsed grants.
func TestOptionsOfUserGrant(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *UserGrantOptions
	ran := false
	build := func() *cobra.Command {
		return userGrantCmd(&Factory{IO: ios}, func(o *UserGrantOptions) error { got, ran = o, true; return nil })
	}
	if err := runCmd(build(), &ran, "billing", "--grant", "consume:orders*", "--grant", "admin"); err != nil || !ran {
		t.Fatalf("ran=%v, %v", ran, err)
	}
	if got.Name != "billing" || len(got.Grants) != 2 || got.Grants[1].Action != "admin" {
		t.Errorf("options: %+v", got)
	}
	for _, bad := range [][]string{{"billing"}, {"billing", "--grant", "read:x"}, {"bad:name", "--grant", "admin"}} {
		if err := runCmd(build(), &ran, bad...); ran || exitCodeFor(err) != ExitUsage {
			t.Errorf("%v: ran=%v, exit %d (%v); want exit 2 before running", bad, ran, exitCodeFor(err), err)
		}
	}
}
