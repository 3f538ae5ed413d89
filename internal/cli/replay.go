package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/replay"
)

type replayOptions struct {
	topic     string
	partition int
	offset    int64
	count     int
	to        int64
	follow    bool
	out       messageOutput
}

func newReplayCmd(f *Factory) *cobra.Command {
	opts := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay TOPIC",
		Short: "Read a topic's history by position, taking nothing",
		Long: "Read retained messages by position, from the oldest (or --offset) to the tail, each\n" +
			"partition in turn unless --partition. Nothing is reserved or acked.",
		Example: "  # The first ten messages of partition 4\n" +
			"  narad replay orders --partition 4 --offset 0 --count 10\n\n" +
			"  # Back up everything kept, as JSON lines; consumers are not disturbed\n" +
			"  narad replay orders -o json > orders.jsonl\n\n" +
			"  # Copy a topic, keys and binary payloads exact\n" +
			"  narad replay orders -o json | narad produce orders-copy --json\n\n" +
			"  # Follow new messages as they are written, keys only\n" +
			"  narad replay orders -o json --follow | jq -r .key",
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.topic = args[0]
			if err := validateTopicName(opts.topic); err != nil {
				return err
			}
			return replayRun(f, cmd, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.partition, "partition", -1, "read only this partition")
	fl.Int64Var(&opts.offset, "offset", -1, "start at this offset (needs --partition)")
	fl.IntVar(&opts.count, "count", 0, "stop after N messages")
	fl.Int64Var(&opts.to, "to", -1, "stop after offset M (inclusive)")
	fl.BoolVar(&opts.follow, "follow", false, "keep polling at the tail for new messages")
	opts.out.addFlags(cmd)
	return cmd
}

func replayRun(f *Factory, cmd *cobra.Command, opts *replayOptions) error {
	ro := replay.Options{Topic: opts.topic, Start: replay.FromOldest, To: opts.to, Count: opts.count, Follow: opts.follow}
	fl := cmd.Flags()
	switch {
	case fl.Changed("count") && fl.Changed("to"):
		return usageErrorf("--count and --to cannot be used together (stop by one or the other)")
	case opts.count < 0:
		return usageErrorf("--count must not be negative, not %d", opts.count)
	case fl.Changed("to") && opts.to < 0:
		// -1 is the flag's "up to the tail"; typed, a negative offset is a mistake.
		return usageErrorf("--to must be 0 or more (an offset)")
	}
	if cmd.Flags().Changed("partition") {
		if opts.partition < 0 {
			return usageErrorf("--partition must be 0 or more")
		}
		ro.Partition = &opts.partition
	}
	if cmd.Flags().Changed("offset") {
		if ro.Partition == nil {
			return usageErrorf("--offset needs --partition")
		}
		if opts.offset < 0 {
			return usageErrorf("--offset must be 0 or more")
		}
		ro.Start, ro.Offset = replay.FromOffset, opts.offset
	}
	return runReplay(f, cmd, &opts.out, ro, 0)
}

// runReplay prints a replay with the output flags; sub --peek shares it. A timeout
// (peek's --timeout) ends it, with exit 3 when ro.Count was not reached.
func runReplay(f *Factory, cmd *cobra.Command, out *messageOutput, ro replay.Options, timeout time.Duration) error {
	r, err := out.renderer(f, cmd)
	if err != nil {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	sctx, cancel := f.Context()
	defer cancel()
	ctx := sctx
	if timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(sctx, timeout)
		defer cancelT()
	}
	var buf []byte
	n, err := replay.Run(ctx, c, ro, func(m *client.Message) error {
		buf, err = r.Append(buf[:0], m)
		if err != nil {
			return err
		}
		if err := writeAll(f.IO.Out, buf); err != nil {
			if consumer.IsClosedOutput(err) {
				return replay.ErrStop
			}
			return err
		}
		return nil
	})
	switch {
	case sctx.Err() != nil:
		return nil // interrupted: Run turns the signal into 130/143
	case err != nil && ctx.Err() == nil:
		if errors.Is(err, replay.ErrNoSuchPartition) {
			return usageErrorf("%v", err)
		}
		return apiFatal(f, c, err, ro.Topic)
	case ro.Count > 0 && n < ro.Count && ctx.Err() != nil:
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", timeout, n, ro.Count))
	}
	return nil
}
