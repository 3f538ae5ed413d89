package cli

import (
	"io"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// The dev command's flags become the broker's configuration before it runs; a bad
// one is exit 2 and nothing runs.
func TestDevFlags(t *testing.T) {
	run := func(args ...string) (*DevOptions, error) {
		ios, _, _, _ := iostreams.Test()
		var got *DevOptions
		cmd := devCmd(&Factory{IO: ios}, func(o *DevOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return got, cmd.Execute()
	}
	got, err := run("--addr", "127.0.0.1:0", "--topic", "orders:5", "--user", "app:pw:admin", "--visibility", "3s", "-q")
	if err != nil {
		t.Fatal(err)
	}
	cfg := got.Config
	if cfg.Addr != "127.0.0.1:0" || cfg.DefaultVisibility != 3*time.Second || len(cfg.Topics) != 1 ||
		cfg.Topics[0].Name != "orders" || cfg.Topics[0].Partitions != 5 || len(cfg.Users) != 1 || !got.Quiet {
		t.Errorf("options: %+v", got)
	}
	if got.IO == nil {
		t.Error("the run got no IO")
	}
	for _, bad := range [][]string{{"--visibility", "0"}, {"--topic", "a:1"}, {"--user", "nopass"}, {"--fault", "ack=999:2"}} {
		got, err := run(bad...)
		if got != nil || exitCodeFor(err) != ExitUsage {
			t.Errorf("%v: ran=%v, exit %d (%v); want exit 2 before running", bad, got != nil, exitCodeFor(err), err)
		}
	}
}
