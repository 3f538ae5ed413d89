package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/replay"
)

// ReplayOptions are replay's flags, resolved: replayRun never asks cobra what was given.
type ReplayOptions struct {
	runEnv
	Topic string
	// Partition and Offset are nil unless given (Offset only with a Partition).
	Partition *int
	Offset    *int64
	Count     int // 0: no limit
	// To is the last offset to read, inclusive; nil: up to the tail.
	To     *int64
	Follow bool
	// Time is --since and --until; a zero time was not given.
	Time   timeRange
	Output MessageOutput
	// Find is --filter, --grep and --stats (find.go).
	Find findOptions
}

func newReplayCmd(f *Factory) *cobra.Command {
	return replayCmd(f, replayRun)
}

// replayCmd parses flags into ReplayOptions and hands them to run, so tests can check
// the parsing apart from the reading.
func replayCmd(f *Factory, run func(*ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
	var typed replayFlags
	cmd := &cobra.Command{
		Use:   "replay TOPIC",
		Short: "Read a topic's history by position, taking nothing",
		Long: "Read retained messages by position, from the oldest (or --offset) to the tail, each\n" +
			"partition in turn unless --partition. Nothing is reserved or acked." + timeHelp,
		Example: "  # The first ten messages of partition 4\n" +
			"  narad replay orders --partition 4 --offset 0 --count 10\n\n" +
			"  # Back up everything kept, as JSON lines; consumers are not disturbed\n" +
			"  narad replay orders -o json > orders.jsonl\n\n" +
			"  # What arrived between 10:00 and 10:05 local time (no scan)\n" +
			"  narad replay orders --since '2026-12-01 10:00' \\\n" +
			"    --until '2026-12-01 10:05'\n\n" +
			"  # Every failed order today, its id only\n" +
			"  narad replay orders --since \"$(date +%F)\" \\\n" +
			"    --filter '.payload.status == \"failed\"' --jq .payload.order_id\n\n" +
			"  # Copy a topic, keys and binary payloads exact\n" +
			"  narad replay orders -o json | narad produce orders-copy --json\n\n" +
			"  # Follow new messages as they are written, keys only\n" +
			"  narad replay orders --follow --jq .key",
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, opts.resolve(cmd, args, &typed, f.Now))
		},
	}
	addReplayFlags(cmd, opts, &typed)
	return cmd
}

// replayFlags are the flags of replay resolved before they go into ReplayOptions, as
// typed.
type replayFlags struct {
	partition  int
	offset, to int64
	out        outputFlags
	find       findFlags
	times      timeFlags
}

// addReplayFlags adds replay's flags: where it starts and stops, what it shows.
func addReplayFlags(cmd *cobra.Command, opts *ReplayOptions, typed *replayFlags) {
	fl := cmd.Flags()
	fl.IntVar(&typed.partition, "partition", -1, "read only this partition")
	fl.Int64Var(&typed.offset, "offset", -1, "start at this offset (needs --partition)")
	fl.IntVar(&opts.Count, "count", 0, "stop after N messages")
	fl.Int64Var(&typed.to, "to", -1, "stop after offset M (inclusive)")
	fl.BoolVar(&opts.Follow, "follow", false, "keep polling at the tail for new messages (with --count and no --filter or --grep, 30s with none says so on stderr)")
	typed.times.addFlags(cmd, "with --follow,")
	typed.out.addFlags(cmd)
	typed.find.addFlags(cmd)
	fl.StringVar(&opts.Find.Stats, "stats", "", "at the end, say on stderr how many messages were read and how many matched: text (a table) or json")
	fl.Lookup("stats").NoOptDefVal = "text"
	blankNeeds(fl, "stats", "text or json", "--stats alone is text")
}

// resolve reads the arguments and the typed flags into opts and checks them together.
func (opts *ReplayOptions) resolve(cmd *cobra.Command, args []string, typed *replayFlags, now func() time.Time) error {
	opts.Topic = args[0]
	if err := validateTopicName(opts.Topic); err != nil {
		return err
	}
	changed := cmd.Flags().Changed
	switch {
	case changed("count") && changed("to"):
		return usageErrorf("--count and --to cannot be used together (stop by one or the other)")
	case opts.Count < 0:
		return usageErrorf("--count must not be negative, not %d", opts.Count)
	case changed("to") && typed.to < 0:
		// -1 is the flag's "up to the tail"; typed, a negative offset is a mistake.
		return usageErrorf("--to must be 0 or more (an offset)")
	}
	if changed("to") {
		opts.To = &typed.to
	}
	if changed("partition") {
		if typed.partition < 0 {
			return usageErrorf("--partition must be 0 or more")
		}
		opts.Partition = &typed.partition
	}
	if changed("offset") {
		if opts.Partition == nil {
			return usageErrorf("--offset needs --partition")
		}
		if typed.offset < 0 {
			return usageErrorf("--offset must be 0 or more")
		}
		opts.Offset = &typed.offset
		if opts.To != nil && *opts.To < *opts.Offset {
			// Nothing lies between them: an empty read with exit 0 would pass for
			// "nothing there" (as an until before since is refused).
			return usageErrorf("--to %d is before --offset %d (--to is the last offset to read, inclusive)", *opts.To, *opts.Offset)
		}
	}
	if err := startConflicts(changed, "offset"); err != nil {
		return err
	}
	tr, err := typed.times.resolve(now, typed.out.location(), changed)
	if err != nil {
		return err
	}
	opts.Time = tr
	o, err := typed.out.resolve(changed)
	if err != nil {
		return err
	}
	opts.Output = o
	if opts.Find.Stats != "" && opts.Find.Stats != "text" && opts.Find.Stats != "json" {
		return usageErrorf("invalid --stats %q (text or json)", opts.Find.Stats)
	}
	if opts.Find.Match, err = typed.find.resolve(changed); err != nil {
		return err
	}
	return nil
}

func replayRun(opts *ReplayOptions) error {
	ro := replay.Options{Topic: opts.Topic, Partition: opts.Partition, Start: replay.FromOldest, To: -1,
		Count: opts.Count, Follow: opts.Follow}
	if opts.To != nil {
		ro.To = *opts.To
	}
	if opts.Offset != nil {
		ro.Start, ro.Offset = replay.FromOffset, *opts.Offset
	}
	opts.Time.apply(opts.runEnv, &ro)
	r, err := opts.Output.renderer(opts.runEnv)
	if err != nil {
		return err
	}
	c, err := opts.Client()
	if err != nil {
		return err
	}
	return runReplay(opts.runEnv, c, r, ro, 0, "", opts.Find)
}
