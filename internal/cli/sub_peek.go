package cli

import (
	"github.com/narad/narad/internal/replay"
)

// validatePeek checks --peek's flags: it takes nothing, so what is about taking
// means nothing there; and the flags that say where it starts need it.
func (opts *SubOptions) validatePeek(changed func(string) bool) error {
	if !opts.Peek {
		if changed("from-beginning") || opts.Offset != nil {
			// Name only what was typed.
			name := "--offset"
			if changed("from-beginning") {
				name = "--from-beginning"
			}
			return usageErrorf("%s needs --peek (or use narad replay)", name)
		}
		return nil
	}
	for _, name := range []string{"no-ack", "drain", "max", "wait", "rate"} {
		if changed(name) {
			return usageErrorf("--%s does not apply to --peek (it takes nothing)", name)
		}
	}
	if opts.Command != nil {
		// A canary takes nothing, so what settles or holds a message means nothing.
		for _, name := range canaryRefused {
			if changed(name) {
				return usageErrorf("--%s does not apply to --peek -- COMMAND (a canary takes nothing: no lease, no retry, no dead letter)", name)
			}
		}
	}
	if opts.Offset != nil && (opts.Partition == nil || changed("from-beginning")) {
		return usageErrorf("--offset needs --partition (and not --from-beginning)")
	}
	if opts.Offset != nil && *opts.Offset < 0 {
		// -1 is the flag's "not given"; typed, a negative offset is a mistake, refused
		// here as replay refuses it rather than sent for the node to refuse.
		return usageErrorf("--offset must be 0 or more")
	}
	return nil
}

// peekReplay is the replay --peek reads (plain and -i): each partition's tail
// followed, or where --from-beginning, --offset or --since put the start.
func peekReplay(opts *SubOptions) replay.Options {
	// Match: --filter and --grep, so Count counts the messages they keep.
	ro := replay.Options{Topic: opts.Topic, Partition: opts.Partition, Start: replay.FromTail, To: -1, Count: opts.Count, Follow: true,
		Match: opts.Match}
	switch {
	case opts.FromBeginning:
		ro.Start = replay.FromOldest
	case opts.Offset != nil:
		ro.Start, ro.Offset = replay.FromOffset, *opts.Offset
	}
	opts.Time.apply(opts.runEnv, &ro)
	return ro
}

// peekRun watches a topic by replay reads from each partition's tail: nothing is
// reserved, so it never competes with the real consumers.
func peekRun(opts *SubOptions) error {
	ro := peekReplay(opts)
	r, err := opts.Output.renderer(opts.runEnv)
	if err != nil {
		return err // before saying what it would do
	}
	heard := &nodeHeard{}
	c, err := opts.Client(heard)
	if err != nil {
		return err
	}
	opts.announce("watching %s on %s: takes nothing", opts.Topic, c.BaseURL())
	return runReplay(opts.runEnv, c, r, ro, opts.Timeout, timeoutHint, findOptions{Match: opts.Match, Stats: opts.Stats, Heard: heard})
}
