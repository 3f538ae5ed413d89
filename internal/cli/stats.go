package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"syscall"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/replay"
	"github.com/narad/narad/internal/supervisor"
)

// The end-of-run counters every streaming command writes on stderr: a consumer's
// (sub, -i), a read's (replay, --peek) and a canary's.

// statsOut is stderr, on a fresh line: on a terminal a Ctrl-C was echoed as ^C
// where the cursor was.
func (e runEnv) statsOut() io.Writer {
	if e.IO.IsStderrTTY() && e.Signals.Received() == syscall.SIGINT {
		_, _ = io.WriteString(e.IO.ErrOut, "\n")
	}
	return e.IO.ErrOut
}

// printStats writes the counters on stderr: asked for, or on a terminal (one line
// there). An all-zero summary in front of a fatal error says nothing, so none is shown.
func (e runEnv) printStats(mode string, s consumer.Stats, fatal bool) {
	if mode == "" && !e.IO.IsStderrTTY() {
		return
	}
	pairs := s.Pairs()
	counts := make([]render.Count, len(pairs))
	zero := true
	for i, p := range pairs {
		counts[i] = render.Count{Name: p.Name, N: p.Value}
		zero = zero && p.Value == 0
	}
	if fatal && zero && mode != "json" {
		return
	}
	w := e.statsOut()
	switch mode {
	case "json":
		_ = s.WriteJSON(w)
	case "":
		_, _ = io.WriteString(w, render.SummaryLine(counts)+"\n")
	default:
		_ = render.SummaryTable(w, e.IO.ColorEnabledStderr(), e.IO.IsStderrTTY(), counts)
	}
}

// readStats writes what a read went through on stderr, when --stats asked: how many
// messages were read and how many matched (were shown).
func (e runEnv) readStats(mode string, read, matched int64) {
	if mode == "" {
		return
	}
	w := e.statsOut()
	if mode == "json" {
		fmt.Fprintf(w, "{\"read\":%d,\"matched\":%d}\n", read, matched)
		return
	}
	counts := []render.Count{{Name: "read", N: read}, {Name: "matched", N: matched}}
	_ = render.SummaryTable(w, e.IO.ColorEnabledStderr(), e.IO.IsStderrTTY(), counts)
}

// canaryJSON is --stats=json for a canary; durations in seconds.
type canaryJSON struct {
	// Read and Matched are there with --filter or --grep, as replay's --stats says them.
	Read       *int64           `json:"read,omitempty"`
	Matched    *int64           `json:"matched,omitempty"`
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
// json (one object), or without --stats one line on a terminal only. With a matcher
// (--filter, --grep) they start with the messages read and matched: a command runs
// only for a match, and the difference is what the filter kept from it.
func (e runEnv) printCanaryStats(mode string, st supervisor.CanaryStats, mt *replay.Matcher) {
	if mode == "" && !e.IO.IsStderrTTY() {
		return
	}
	w := e.statsOut()
	codes := slices.Sorted(maps.Keys(st.ExitCodes))
	if mode == "json" {
		j := canaryJSON{Ran: st.Ran, Succeeded: st.Succeeded, Failed: st.Failed, TimedOut: st.TimedOut,
			NotStarted: st.NotStarted, Signaled: st.Signaled, Stopped: st.Stopped, ExitCodes: map[string]int64{},
			P50: st.P50.Seconds(), P95: st.P95.Seconds(), Max: st.Max.Seconds()}
		for _, c := range codes {
			j.ExitCodes[strconv.Itoa(c)] = st.ExitCodes[c]
		}
		if mt != nil {
			j.Read, j.Matched = &mt.Read, &mt.Matched
		}
		_ = json.NewEncoder(w).Encode(j)
		return
	}
	var counts []render.Count
	if mt != nil {
		counts = append(counts, render.Count{Name: "read", N: mt.Read}, render.Count{Name: "matched", N: mt.Matched})
	}
	counts = append(counts, []render.Count{{Name: "ran", N: st.Ran}, {Name: "succeeded", N: st.Succeeded}, {Name: "failed", N: st.Failed},
		{Name: "timed_out", N: st.TimedOut}, {Name: "not_started", N: st.NotStarted}, {Name: "signaled", N: st.Signaled},
		{Name: "stopped", N: st.Stopped}}...)
	for _, c := range codes {
		counts = append(counts, render.Count{Name: "exit_" + strconv.Itoa(c), N: st.ExitCodes[c]})
	}
	durations := fmt.Sprintf("duration p50 %s, p95 %s, max %s", seconds(st.P50), seconds(st.P95), seconds(st.Max))
	if mode == "" {
		_, _ = io.WriteString(w, render.SummaryLine(counts)+"; "+durations+"\n")
		return
	}
	_ = render.SummaryTable(w, e.IO.ColorEnabledStderr(), e.IO.IsStderrTTY(), counts)
	_, _ = io.WriteString(w, durations+"\n")
}
