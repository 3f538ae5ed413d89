package cli

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// parseFlags runs a command's flag parsing alone (build is subCmd or replayCmd) and
// returns the options its run would get.
func parseFlags[O any](t *testing.T, build func(*Factory, func(*O) error) *cobra.Command, args []string) (*O, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var got *O
	cmd := build(&Factory{IO: ios}, func(o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil && got == nil {
		t.Fatalf("%q: no error and run was not called", args)
	}
	return got, err
}

func parseSub(t *testing.T, args ...string) (*SubOptions, error) {
	t.Helper()
	return parseFlags(t, subCmd, args)
}

func parseReplay(t *testing.T, args ...string) (*ReplayOptions, error) {
	t.Helper()
	return parseFlags(t, replayCmd, args)
}

func TestSubFlags(t *testing.T) {
	// Nothing given: every "not given" is visible in the options themselves.
	got, err := parseSub(t, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != "orders" || got.Partition != nil || got.Offset != nil || got.Command != nil ||
		got.Wait != 10*time.Second || got.Max != 100 || got.Count != 0 || got.Timeout != 0 ||
		got.Drain || got.NoAck || got.Peek || got.Stats != "" {
		t.Errorf("defaults: %+v", got)
	}
	if o := got.Output; o.Format != render.Text || o.Template != "" || string(o.Delimiter) != "\n" || o.UTC || o.UnsafeRaw {
		t.Errorf("default output: %+v", o)
	}

	// Given as zero is given: partition 0 is a partition, offset 0 an offset.
	got, err = parseSub(t, "orders", "--partition", "0", "--peek", "--offset", "0", "--count", "3", "--timeout", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if got.Partition == nil || *got.Partition != 0 || got.Offset == nil || *got.Offset != 0 ||
		!got.Peek || got.Count != 3 || got.Timeout != 2*time.Second {
		t.Errorf("--partition 0 --peek --offset 0: partition %v offset %v %+v", got.Partition, got.Offset, got)
	}

	got, err = parseSub(t, "orders", "--max", "7", "--wait", "0s", "--drain", "--no-ack", "--stats")
	if err != nil {
		t.Fatal(err)
	}
	if got.Max != 7 || got.Wait != 0 || !got.Drain || !got.NoAck || got.Stats != "text" || got.Partition != nil {
		t.Errorf("consume flags: %+v", got)
	}

	// The output flags, resolved: an empty delimiter given is no delimiter.
	got, err = parseSub(t, "orders", "-o", "raw", "--delimiter", "", "--utc", "--unsafe-raw")
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Output; o.Format != render.Raw || len(o.Delimiter) != 0 || !o.UTC || !o.UnsafeRaw {
		t.Errorf("raw output: %+v", o)
	}
	got, err = parseSub(t, "orders", "--template", "{{.Key}}")
	if err != nil {
		t.Fatal(err)
	}
	if got.Output.Format != render.Template || got.Output.Template != "{{.Key}}" {
		t.Errorf("template output: %+v", got.Output)
	}
	if got, _ := parseSub(t, "orders", "--peek", "--from-beginning"); got == nil || !got.FromBeginning || got.Offset != nil {
		t.Errorf("--peek --from-beginning: %+v", got)
	}

	// Exec mode: the command and its flags, exit codes parsed; a lease not given is
	// zero (the topic's visibility timeout), and output is left unset.
	got, err = parseSub(t, "orders", "-j", "4", "--ack-exit-codes", "0, 3", "--max-attempts", "2",
		"--dead-letter", "orders-dlq", "--prefix", "--", "sh", "-c", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Command, []string{"sh", "-c", "exit 0"}) || got.Concurrency != 4 ||
		!slices.Equal(got.AckExitCodes, []int{0, 3}) || got.MaxAttempts != 2 || got.DeadLetter != "orders-dlq" ||
		!got.Prefix || got.Lease != 0 || got.KillGrace != 10*time.Second || got.RetryDelayMax != time.Minute ||
		got.MaxProcessingTime != 5*time.Minute || got.ShutdownGrace != 30*time.Second || got.Output.Delimiter != nil {
		t.Errorf("exec mode: %+v", got)
	}
	got, err = parseSub(t, "orders", "--lease", "45s", "--", "sh")
	if err != nil {
		t.Fatal(err)
	}
	if got.Lease != 45*time.Second || !slices.Equal(got.AckExitCodes, []int{0}) {
		t.Errorf("--lease 45s: lease %v codes %v", got.Lease, got.AckExitCodes)
	}

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"orders", "--partition", "-1"}, "--partition must be 0 or more"},
		{[]string{"orders", "--max", "0"}, "--max"},
		{[]string{"orders", "--stats=yaml"}, "--stats"},
		{[]string{"orders", "--offset", "0"}, "--offset needs --peek"},
		{[]string{"orders", "--from-beginning=false"}, "--from-beginning needs --peek"}, // given, even as false
		{[]string{"orders", "--peek", "--offset", "0"}, "--offset needs --partition"},
		{[]string{"orders", "--peek", "--partition", "1", "--offset", "0", "--from-beginning"}, "--offset needs --partition"},
		{[]string{"orders", "--peek", "--partition", "1", "--offset", "-2"}, "--offset must be 0 or more"},
		{[]string{"orders", "--peek", "--max", "100"}, "--max does not apply to --peek"}, // the default, given
		{[]string{"orders", "--peek", "--lease", "1m", "--", "sh"}, "--lease does not apply to --peek -- COMMAND"},
		{[]string{"orders", "--peek", "--retry-delay-max", "1m", "--", "sh"}, "--retry-delay-max does not apply to --peek -- COMMAND"},
		{[]string{"orders", "--peek", "--max-attempts", "2", "--dead-letter", "d", "--", "sh"}, "--max-attempts does not apply to --peek -- COMMAND"},
		{[]string{"orders", "--peek", "--no-ack", "--", "sh"}, "--no-ack does not apply to --peek"},
		{[]string{"orders", "--peek", "-j", "0", "--", "sh"}, "--concurrency must be 1..100"},
		{[]string{"orders", "--lease", "1m"}, "--lease needs a command"},
		{[]string{"orders", "--ack-exit-codes", "0"}, "--ack-exit-codes needs a command"},
		{[]string{"orders", "--no-ack", "--", "sh"}, "--no-ack cannot"},
		{[]string{"orders", "-o", "text", "--", "sh"}, "output flags do not apply"},
		{[]string{"orders", "--utc", "--", "sh"}, "output flags do not apply"},
		{[]string{"orders", "--unsafe-raw", "--", "sh"}, "output flags do not apply"},
		{[]string{"orders", "--lease", "0s", "--", "sh"}, "--lease must be at least 30ms"},
		{[]string{"orders", "--max-attempts", "0", "--", "sh"}, "--max-attempts must be at least 1"},
		{[]string{"orders", "--max-attempts", "2", "--", "sh"}, "go together"},
		{[]string{"orders", "--max-attempts", "2", "--dead-letter", "orders", "--", "sh"}, "another topic"},
		{[]string{"orders", "--ack-exit-codes", "0,x", "--", "sh"}, "invalid --ack-exit-codes"},
		{[]string{"orders", "--", "no-such-command-narad-test"}, "cannot run no-such-command-narad-test"},
		{[]string{"orders", "--"}, "no command after --"},
		{[]string{"a", "b"}, "one topic"},
		{[]string{"orders", "-o", "yaml"}, "invalid --output"},
		{[]string{"orders", "-o", "json", "--template", "x"}, "--template and --output"},
		{[]string{"orders", "--delimiter", ","}, "--delimiter needs -o raw"},
		{[]string{"orders", "--unsafe-raw"}, "--unsafe-raw needs -o raw"},
	} {
		_, err := parseSub(t, tt.args...)
		if exitCodeFor(err) != ExitUsage || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %v, want a usage error with %q", tt.args, err, tt.err)
		}
	}
}

func TestReplayFlags(t *testing.T) {
	got, err := parseReplay(t, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != "orders" || got.Partition != nil || got.Offset != nil || got.To != nil || got.Count != 0 ||
		got.Follow || got.Output.Format != render.Text {
		t.Errorf("defaults: %+v", got)
	}

	// Given as zero is given.
	got, err = parseReplay(t, "orders", "--partition", "0", "--offset", "0", "--to", "0", "--follow", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if got.Partition == nil || *got.Partition != 0 || got.Offset == nil || *got.Offset != 0 ||
		got.To == nil || *got.To != 0 || !got.Follow || got.Output.Format != render.JSON {
		t.Errorf("all zero: partition %v offset %v to %v %+v", got.Partition, got.Offset, got.To, got)
	}
	got, err = parseReplay(t, "orders", "--partition", "2", "--count", "10", "--template", "{{.Offset}}")
	if err != nil {
		t.Fatal(err)
	}
	if *got.Partition != 2 || got.Offset != nil || got.To != nil || got.Count != 10 || got.Output.Format != render.Template {
		t.Errorf("--partition 2 --count 10: %+v", got)
	}

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"orders", "--count", "0", "--to", "5"}, "--count and --to"}, // given, even as 0
		{[]string{"orders", "--count", "-1"}, "--count must not be negative"},
		{[]string{"orders", "--to", "-1"}, "--to must be 0 or more"}, // the default, typed
		{[]string{"orders", "--partition", "-1"}, "--partition must be 0 or more"},
		{[]string{"orders", "--offset", "0"}, "--offset needs --partition"},
		{[]string{"orders", "--partition", "0", "--offset", "-2"}, "--offset must be 0 or more"},
		{[]string{"orders", "-o", "raw", "--template", "x"}, "--template and --output"},
		{[]string{"orders", "--delimiter", ""}, "--delimiter needs -o raw"},
		{[]string{"a/b"}, ""},
		{[]string{}, "one topic"},
	} {
		_, err := parseReplay(t, tt.args...)
		if exitCodeFor(err) != ExitUsage || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %v, want a usage error with %q", tt.args, err, tt.err)
		}
	}
}

// outputFlagNames is what sub refuses beside a command: it must name every output flag.
func TestOutputFlagNamesAreTheFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	var o outputFlags
	o.addFlags(cmd)
	var names []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	slices.Sort(names)
	want := slices.Sorted(slices.Values(outputFlagNames))
	if !slices.Equal(names, want) {
		t.Errorf("addFlags adds %v, outputFlagNames is %v", names, want)
	}
}

// Every --peek read (plain, the canary, hold mode's -i --peek) keeps only what
// --filter and --grep match: the one place that builds its read says so.
func TestPeekReadsKeepTheFilter(t *testing.T) {
	opts, err := parseFlags(t, subCmd, []string{"t", "--peek", "-i", "--grep", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Match == nil || peekReplay(opts).Match != opts.Match {
		t.Errorf("the peek read's matcher is %v, want --grep's %v", peekReplay(opts).Match, opts.Match)
	}
}
