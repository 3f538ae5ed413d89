package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/replay"
)

// timeForms is what --since and --until take, said in every refusal so that a
// mistyped time is corrected without opening the help.
const timeForms = "RFC 3339 2026-12-01T10:00:00Z, local 2026-12-01 10:00[:05], " +
	"unix seconds @1796092554, or back from now 90s, 15m, 2h, 3d"

// timeHelp is what replay's help says of --since and --until.
const timeHelp = `

By time: --since TIME starts each partition at its first message stamped at or
after TIME, found by binary search (about log2 n reads, never a scan); --until TIME
stops it after its last message stamped at or before TIME. Stamps are whole
seconds and both ends are inclusive. TIME is RFC 3339 (2026-12-01T10:00:00Z), local
2026-12-01 10:00[:05] (or a date alone: its midnight; UTC with --utc, as the lines
show it), unix seconds @1796092554, or a duration back from now (90s, 15m, 2h, 3d,
1d12h). A partition found out of time
order (a clock stepped back) is read on from the last point found in order, printing
only what is in range, and a note says so.`

// localLayouts are the zone-less forms, read in the local time zone: what a person
// copies from a log line or types from a wall clock. A T in place of the space and a
// date alone (its midnight) are taken too, as a person would expect.
var localLayouts = []string{
	"2006-01-02 15:04:05", "2006-01-02 15:04",
	"2006-01-02T15:04:05", "2006-01-02T15:04",
	"2006-01-02",
}

// parseTime reads a --since/--until TIME: RFC 3339, a local date and time (in loc),
// @unix-seconds, or a duration back from now (with d for days). It never asks the
// node anything, so a bad time is refused before any request.
func parseTime(s string, now time.Time, loc *time.Location, until bool) (time.Time, bool) {
	t, ok := parseTimeForm(s, now, loc, until)
	if ok && t.Before(unixEpoch) {
		// Nothing is stamped before the epoch, so an earlier time means the epoch. The
		// zero time (0001-01-01 UTC) stands for a flag not given: typed, it must not
		// turn --until into no limit.
		t = unixEpoch
	}
	return t, ok
}

var unixEpoch = time.Unix(0, 0)

// parseTimeForm is parseTime before the epoch floor: the forms themselves. until says
// which end a local time is for, where the zone's clock makes it ambiguous
// (localMoment).
func parseTimeForm(s string, now time.Time, loc *time.Location, until bool) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		// Digits only: strconv would take a sign, and a negative or fractional unix
		// time is a typo rather than a moment anyone has messages from.
		if rest == "" || strings.Trim(rest, "0123456789") != "" {
			return time.Time{}, false
		}
		sec, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || sec > maxUnixSeconds {
			return time.Time{}, false
		}
		return time.Unix(sec, 0), true
	}
	if t, err := time.Parse(time.RFC3339Nano, rfc3339Form(s)); err == nil {
		return t, true
	}
	for _, layout := range localLayouts {
		// Read as the wall clock it is, then placed in loc: ParseInLocation's choice
		// where loc's clock jumps is not specified.
		if wall, err := time.Parse(layout, s); err == nil {
			return localMoment(wall, loc, until), true
		}
	}
	// A duration back from now. It must name a unit (a bare number is ambiguous:
	// seconds or unix time?) and not be negative (back from now, never ahead).
	if s[0] >= '0' && s[0] <= '9' && strings.Trim(s, "0123456789") != "" {
		if d, err := parseDurationDays(s); err == nil && d >= 0 {
			return now.Add(-d), true
		}
	}
	return time.Time{}, false
}

// localMoment is the moment the wall-clock time wall (its fields, read as UTC) names
// in loc, where loc's clock is set back (the hour shown twice when summer time ends)
// or jumps ahead (the hour never shown when it begins): the end of a range takes
// what includes every message whose line showed a time inside it, never fewer. A time
// shown twice is its first moment for --since and its second for --until; a time
// never shown, as any after it in that hour, lies past the jump: --since starts at
// the jump and --until ends just before it. (Go itself takes the second moment of a
// time shown twice, which made --since skip up to an hour of messages.)
func localMoment(wall time.Time, loc *time.Location, until bool) time.Time {
	// loc's offsets a day either side of wall: a zone's clock changes at most once
	// within that.
	_, before := wall.Add(-24 * time.Hour).In(loc).Zone()
	_, after := wall.Add(24 * time.Hour).In(loc).Zone()
	var first, last time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if !sameWallClock(t.In(loc), wall) {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	switch {
	case !first.IsZero() && until:
		return last.In(loc)
	case !first.IsZero():
		return first.In(loc)
	}
	// Never shown: the clock jumped from before to after somewhere between the two
	// readings of wall; find the second it did.
	lo, hi := wall.Add(-time.Duration(max(before, after))*time.Second), wall.Add(-time.Duration(min(before, after))*time.Second)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if _, off := mid.In(loc).Zone(); off == before {
			lo = mid
		} else {
			hi = mid
		}
	}
	if until {
		return hi.Add(-time.Second).In(loc)
	}
	return hi.In(loc)
}

// sameWallClock reports whether t (in its zone) shows the date and time wall does.
func sameWallClock(t, wall time.Time) bool {
	y, mo, d := t.Date()
	wy, wmo, wd := wall.Date()
	return y == wy && mo == wmo && d == wd && t.Hour() == wall.Hour() && t.Minute() == wall.Minute() && t.Second() == wall.Second()
}

// rfc3339Form is s in the one spelling of RFC 3339 that Go's layout reads: the
// standard also allows a space between date and time and a lower-case t and z (its
// section 5.6), and GNU date --rfc-3339=seconds and Python's str(datetime) write the
// space (2026-12-01 10:00:00+00:00).
func rfc3339Form(s string) string {
	if len(s) > len("2006-01-02") && s[len("2006-01-02")] == ' ' {
		s = s[:len("2006-01-02")] + "T" + s[len("2006-01-02")+1:]
	}
	return strings.ToUpper(s)
}

// maxUnixSeconds keeps an @ time within what time.Time and its Unix seconds hold
// both ways (the year 9999).
const maxUnixSeconds = 253402300799

// timeFlags are --since and --until as typed.
type timeFlags struct{ since, until string }

// timeRange is --since and --until resolved; a zero time was not given.
type timeRange struct{ Since, Until time.Time }

// addFlags adds --since and --until; follow says how the command follows, for the
// help of a future --until.
func (t *timeFlags) addFlags(cmd *cobra.Command, follow string) {
	fl := cmd.Flags()
	fl.StringVar(&t.since, "since", "", "start each partition at its first message stamped at or after TIME"+
		" (RFC 3339, local 2026-12-01 10:00[:05], @unix-seconds, or 90s, 15m, 2h, 3d ago)")
	fl.StringVar(&t.until, "until", "", "stop each partition after its last message stamped at or before TIME"+
		" (same forms as --since; "+follow+" a future TIME ends once the clock passes it)")
	blankOwnChecked(fl, "since", "until")
}

// peekTimes is sub's --since and --until: watching only, as a consumer takes what is
// ready, whenever it was stamped.
func peekTimes(now func() time.Time, loc *time.Location, t *timeFlags, peek bool, changed func(string) bool) (timeRange, error) {
	if !changed("since") && !changed("until") {
		return timeRange{}, nil
	}
	if !peek {
		return timeRange{}, usageErrorf("--since and --until need --peek (or use narad replay)")
	}
	if err := startConflicts(changed, "offset", "from-beginning"); err != nil {
		return timeRange{}, err
	}
	return t.resolve(now, loc, changed)
}

// startConflicts refuses --since beside another flag that says where to start.
func startConflicts(changed func(string) bool, others ...string) error {
	if !changed("since") {
		return nil
	}
	for _, name := range others {
		if changed(name) {
			return usageErrorf("--since and --%s cannot be used together (both say where to start)", name)
		}
	}
	return nil
}

// resolve reads both flags against the clock now (nil: time.Now), the zone-less
// forms in loc (outputFlags.location: UTC with --utc), and checks them together.
func (t *timeFlags) resolve(now func() time.Time, loc *time.Location, changed func(string) bool) (timeRange, error) {
	if now == nil {
		now = time.Now
	}
	var r timeRange
	at := now()
	for _, fl := range []struct {
		name string
		s    string
		to   *time.Time
	}{{"since", t.since, &r.Since}, {"until", t.until, &r.Until}} {
		if !changed(fl.name) {
			continue
		}
		v, ok := parseTime(fl.s, at, loc, fl.name == "until")
		if !ok {
			return r, usageErrorf("invalid --%s %q (%s)", fl.name, fl.s, timeForms)
		}
		*fl.to = v
	}
	// Compared in whole seconds, as messages are stamped: --since 10:00:00.5 and
	// --until 10:00:00 both take the messages stamped 10:00:00.
	if !r.Since.IsZero() && !r.Until.IsZero() && r.Until.Unix() < r.Since.Unix() {
		return r, usageErrorf("--until %s is before --since %s (nothing could match)",
			r.Until.Format(time.RFC3339), r.Since.Format(time.RFC3339))
	}
	return r, nil
}

// apply puts the range into a read, with e's clock for a follow's end and, for
// -v, a line per partition saying how many reads its start took to find. A broken
// order is said without -v: it explains a read that goes slower than it should.
func (r timeRange) apply(e runEnv, ro *replay.Options) {
	ro.Since, ro.Until, ro.Now = r.Since, r.Until, e.Now
	if r.Since.IsZero() {
		return
	}
	verbose := e.Verbose
	ro.OnFound = func(found replay.Found) {
		if verbose {
			fmt.Fprintf(e.IO.ErrOut, "since %s: partition %d starts at offset %d, found in %d reads over %d messages\n",
				r.Since.Format(time.RFC3339), found.Partition, found.Start, found.Reads, found.Messages)
		}
		if found.Broken {
			fmt.Fprintf(e.IO.ErrOut, "narad: note: partition %d is not in time order (a clock stepped back?): "+
				"reading on from offset %d, the last point found in order\n", found.Partition, found.Start)
		}
	}
}
