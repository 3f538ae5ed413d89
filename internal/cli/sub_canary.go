package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// canaryRun is `sub TOPIC --peek -- COMMAND`: the command runs per message as in exec
// mode, but the messages come from replay reads, as --peek's do, so nothing is leased,
// acked or nacked and the topic's consumers never notice. A new handler is tried on
// live traffic this way before it takes any.
func canaryRun(f *Factory, opts *SubOptions) error {
	ro := peekReplay(f, opts)
	c, err := f.Client()
	if err != nil {
		return err
	}
	can, err := supervisor.NewCanary(supervisor.Options{
		Command:           opts.Command,
		Concurrency:       opts.Concurrency,
		MaxProcessingTime: opts.MaxProcessingTime,
		KillGrace:         opts.KillGrace,
		ShutdownGrace:     opts.ShutdownGrace,
		AckExitCodes:      opts.AckExitCodes,
		Topic:             opts.Topic,
		Addr:              c.BaseURL(),
		Prefix:            opts.Prefix,
		Verbose:           f.global.verbose,
		Stdout:            f.IO.Out,
		Stderr:            f.IO.ErrOut,
	})
	if err != nil {
		return usageErrorf("%v", err)
	}
	if f.IO.IsStderrTTY() {
		f.runEnv().notice(fmt.Sprintf("trying %s on the messages of %s on %s, taking nothing (-j %d)",
			render.Escape(strings.Join(opts.Command, " ")), render.Escape(opts.Topic), render.Escape(c.BaseURL()), opts.Concurrency))
		f.runEnv().notice(fmt.Sprintf("  Ctrl-C: read nothing more, let running commands finish (up to %s)", opts.ShutdownGrace))
	}
	defer announceStop(f, can)()

	// The first signal ends the reading (sctx); the commands run under the hard
	// context, which only the second ends.
	sctx, cancel := f.Context()
	defer cancel()
	ctx := sctx
	if opts.Timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(sctx, opts.Timeout)
		defer cancelT()
	}
	mt, count := opts.Match, ro.Count
	if mt != nil {
		ro.Count = 0 // the read goes on until count messages matched
	}
	var n int
	var runErr error
	_, err = replay.Run(ctx, c, ro, func(m *client.Message) error {
		if mt != nil && !mt.Match(m) {
			return nil
		}
		if runErr = can.Run(ctx, f.Signals.Hard, m); runErr != nil {
			return replay.ErrStop
		}
		n++
		if mt != nil && count > 0 && n >= count {
			return replay.ErrStop
		}
		return nil
	})
	can.Finish(f.Signals.Hard, f.Signals.Soft)
	st := can.Stats()
	if !(err != nil && st.Ran == 0 && opts.Stats != "json") {
		// (Nothing run before a fatal error says nothing: the error line does.)
		printCanaryStats(f, opts.Stats, st)
	}
	filterFailures(f, mt)
	switch {
	case sctx.Err() != nil:
		return nil // interrupted: Main turns the signal into 130/143
	case runErr != nil && errors.Is(runErr, consumer.ErrOutputClosed):
		// The reader of stdout went away (`| head`): not a failure, as in exec mode.
	case runErr != nil && ctx.Err() == nil:
		return exitWith(ExitFailed, runErr)
	case err != nil && ctx.Err() == nil:
		if errors.Is(err, replay.ErrNoSuchPartition) {
			return usageErrorf("%v", err)
		}
		return f.runEnv().apiFatal(c, err, ro.Topic)
	}
	if st.Failed > 0 {
		return exitWith(ExitFailed, fmt.Errorf("%d of %s failed", st.Failed, countOf(st.Ran, "command", "commands")))
	}
	if count > 0 && n < count && ctx.Err() != nil {
		return exitWith(ExitTimeout, fmt.Errorf("timeout after %s: %d of %d messages", opts.Timeout, n, count))
	}
	return nil
}

// canaryJSON is --stats=json for a canary; durations in seconds.
type canaryJSON struct {
	Ran        int64            `json:"ran"`
	Succeeded  int64            `json:"succeeded"`
	Failed     int64            `json:"failed"`
	TimedOut   int64            `json:"timed_out"`
	NotStarted int64            `json:"not_started"`
	Signaled   int64            `json:"signaled"`
	Stopped    int64            `json:"stopped"`
	ExitCodes  map[string]int64 `json:"exit_codes"`
	P50        float64          `json:"p50_seconds"`
	P95        float64          `json:"p95_seconds"`
	Max        float64          `json:"max_seconds"`
}

// printCanaryStats writes the canary's counters on stderr: --stats text (a table),
// json (one object), or without --stats one line on a terminal only.
func printCanaryStats(f *Factory, mode string, st supervisor.CanaryStats) {
	if mode == "" && !f.IO.IsStderrTTY() {
		return
	}
	w := f.IO.ErrOut
	if f.IO.IsStderrTTY() && f.Signals.Received() == syscall.SIGINT {
		_, _ = io.WriteString(w, "\n") // after the terminal's ^C
	}
	codes := slices.Sorted(func(yield func(int) bool) {
		for c := range st.ExitCodes {
			if !yield(c) {
				return
			}
		}
	})
	if mode == "json" {
		j := canaryJSON{Ran: st.Ran, Succeeded: st.Succeeded, Failed: st.Failed, TimedOut: st.TimedOut,
			NotStarted: st.NotStarted, Signaled: st.Signaled, Stopped: st.Stopped, ExitCodes: map[string]int64{},
			P50: st.P50.Seconds(), P95: st.P95.Seconds(), Max: st.Max.Seconds()}
		for _, c := range codes {
			j.ExitCodes[strconv.Itoa(c)] = st.ExitCodes[c]
		}
		_ = json.NewEncoder(w).Encode(j)
		return
	}
	counts := []render.Count{{Name: "ran", N: st.Ran}, {Name: "succeeded", N: st.Succeeded}, {Name: "failed", N: st.Failed},
		{Name: "timed_out", N: st.TimedOut}, {Name: "not_started", N: st.NotStarted}, {Name: "signaled", N: st.Signaled},
		{Name: "stopped", N: st.Stopped}}
	for _, c := range codes {
		counts = append(counts, render.Count{Name: "exit_" + strconv.Itoa(c), N: st.ExitCodes[c]})
	}
	durations := fmt.Sprintf("duration p50 %s, p95 %s, max %s", seconds(st.P50), seconds(st.P95), seconds(st.Max))
	if mode == "" {
		_, _ = io.WriteString(w, render.SummaryLine(counts)+"; "+durations+"\n")
		return
	}
	_ = render.SummaryTable(w, f.IO.ColorEnabledStderr(), f.IO.IsStderrTTY(), counts)
	_, _ = io.WriteString(w, durations+"\n")
}

// seconds is d as the failure lines write it: 0.02s.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
