package cli

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-01T10:00:00Z", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
		{"2026-12-01T10:00:00+01:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		{"2026-12-01T10:00:00.250Z", time.Date(2026, 12, 1, 10, 0, 0, 250e6, time.UTC)},
		// RFC 3339 allows a space for the T (GNU date --rfc-3339, Python's str(datetime))
		// and a lower-case t and z.
		{"2026-12-01 10:00:00+01:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		{"2026-12-01 10:00:00.5Z", time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.UTC)},
		{"2026-12-01t10:00:00z", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
		{"2026-12-01 10:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		{"2026-12-01 10:00:05", time.Date(2026, 12, 1, 9, 0, 5, 0, time.UTC)},
		{"2026-12-01T10:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		{"2026-12-01", time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)},
		{"@1796092554", time.Unix(1796092554, 0)},
		{"@0", time.Unix(0, 0)},
		{"90s", now.Add(-90 * time.Second)},
		{"15m", now.Add(-15 * time.Minute)},
		{"2h", now.Add(-2 * time.Hour)},
		{"3d", now.Add(-72 * time.Hour)},
		{"1d12h", now.Add(-36 * time.Hour)},
		{"0s", now},
		{" 2h ", now.Add(-2 * time.Hour)},
		// Before the epoch is the epoch: never the zero time, which means "not given".
		{"0001-01-01T00:00:00Z", time.Unix(0, 0)},
		{"1969-12-31 23:00", time.Unix(0, 0)},
		{"100000d", time.Unix(0, 0)},
	} {
		got, ok := parseTime(tc.in, now, paris, false)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "10:00", "2026-13-01 10:00", "2026-12-01 25:00", "90", "-2h", "+2h",
		"@", "@-5", "@+5", "@1.5", "@99999999999999999999", "3 days", "2h ago", "1796092554", "d", "3dd"} {
		if got, ok := parseTime(bad, now, paris, false); ok {
			t.Errorf("parseTime(%q) = %v, want refused", bad, got)
		}
	}
}

func TestTimeFlagsRefuseBeforeAnyRequest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"t", "--since", "yesterday"}, `invalid --since "yesterday" (RFC 3339 2026-12-01T10:00:00Z, local 2026-12-01 10:00[:05], unix seconds @1796092554, or back from now 90s, 15m, 2h, 3d)`},
		{[]string{"t", "--until", "soon"}, `invalid --until "soon" (`},
		{[]string{"t", "--since", "@200", "--until", "@100"}, "--until 1970-01-01T00:01:40Z is before --since 1970-01-01T00:03:20Z"},
		{[]string{"t", "--partition", "0", "--offset", "3", "--since", "1h"}, "--since and --offset cannot be used together"},
	} {
		_, err := parseReplay(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCodeFor(err) != ExitUsage {
			t.Errorf("replay %q: %v (exit %d), want exit 2 with %q", tc.args, err, exitCodeFor(err), tc.want)
		}
		peek := append([]string{"--peek"}, tc.args...)
		if _, err := parseSub(t, peek...); err == nil || !strings.Contains(err.Error(), tc.want) || exitCodeFor(err) != ExitUsage {
			t.Errorf("sub %q: %v, want exit 2 with %q", peek, err, tc.want)
		}
	}
	if _, err := parseSub(t, "t", "--since", "1h"); err == nil || !strings.Contains(err.Error(), "--since and --until need --peek") {
		t.Errorf("sub --since without --peek: %v", err)
	}
	if _, err := parseSub(t, "t", "--peek", "--from-beginning", "--since", "1h"); err == nil || !strings.Contains(err.Error(), "--since and --from-beginning") {
		t.Errorf("sub --peek --from-beginning --since: %v", err)
	}
	// A typed time before the epoch is a limit, not "not given": --until year 1 is
	// before any --since, and alone it lets nothing stamped after 1970 through.
	if _, err := parseReplay(t, "t", "--since", "1h", "--until", "0001-01-01T00:00:00Z"); err == nil || !strings.Contains(err.Error(), "is before --since") {
		t.Errorf("--until year 1 after --since 1h: %v, want it refused as before --since", err)
	}
	if got, err := parseReplay(t, "t", "--until", "0001-01-01T00:00:00Z"); err != nil || got.Time.Until.IsZero() {
		t.Errorf("--until year 1: %+v, %v; want a limit at the epoch", got.Time, err)
	}
	// Equal is not before: one second's messages.
	got, err := parseReplay(t, "t", "--since", "@100", "--until", "@100")
	if err != nil || got.Time.Since.Unix() != 100 || got.Time.Until.Unix() != 100 {
		t.Errorf("since = until: %+v, %v", got, err)
	}
}

// With --utc the lines show UTC, so a time copied from one (no zone) is read in UTC;
// without it, in the local zone the lines are shown in. On replay and sub --peek.
func TestTimeFlagsReadLocalFormsInTheZoneShown(t *testing.T) {
	defer func(z func() *time.Location) { localZone = z }(localZone)
	ist := time.FixedZone("IST", 5*3600+1800)
	localZone = func() *time.Location { return ist }
	utc10 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		args []string
		want time.Time
	}{
		{[]string{"--since", "2026-12-01 10:00"}, utc10.Add(-5*time.Hour - 30*time.Minute)},
		{[]string{"--since", "2026-12-01 10:00", "--utc"}, utc10},
		{[]string{"--since", "2026-12-01T10:00", "--utc"}, utc10},
		{[]string{"--since", "2026-12-01", "--utc"}, utc10.Add(-10 * time.Hour)},
		{[]string{"--since", "2026-12-01T10:00:00+01:00", "--utc"}, utc10.Add(-time.Hour)},
	} {
		r, err := parseReplay(t, append([]string{"orders"}, tc.args...)...)
		if err != nil {
			t.Fatalf("replay %q: %v", tc.args, err)
		}
		if !r.Time.Since.Equal(tc.want) {
			t.Errorf("replay %q: since %v, want %v", tc.args, r.Time.Since.UTC(), tc.want)
		}
		s, err := parseSub(t, append([]string{"orders", "--peek"}, tc.args...)...)
		if err != nil {
			t.Fatalf("sub --peek %q: %v", tc.args, err)
		}
		if !s.Time.Since.Equal(tc.want) {
			t.Errorf("sub --peek %q: since %v, want %v", tc.args, s.Time.Since.UTC(), tc.want)
		}
	}
	r, err := parseReplay(t, "orders", "--utc", "--until", "2026-12-01 10:05")
	if err != nil || !r.Time.Until.Equal(utc10.Add(5*time.Minute)) {
		t.Errorf("replay --utc --until: %v, %v", r.Time.Until, err)
	}
}
