package cli

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on a machine without a zone database too
)

// TestParseTimeWhereTheClockChanges: a local time the zone's clock shows twice (when
// summer time ends) or never (when it begins) is read so that the range holds every
// message whose line showed a time inside it: a time shown twice is its first moment
// for --since and its second for --until, and one never shown lies past the jump.
// Go's own reading took the second moment for both, so --since 02:30 on the night
// summer time ends skipped the hour of messages shown 02:30 to 03:00 the first time.
func TestParseTimeWhereTheClockChanges(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		zone, in     string
		since, until time.Time
	}{
		// Berlin, 2026-10-25: 03:00 CEST is set back to 02:00 CET (at 01:00 UTC).
		{"Europe/Berlin", "2026-10-25 02:30", time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)},
		{"Europe/Berlin", "2026-10-25 02:00:00", time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},
		// Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (at 01:00 UTC): 02:30 is never shown.
		{"Europe/Berlin", "2026-03-29 02:30", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC)},
		// Times the clock shows once are as before, either side of a change.
		{"Europe/Berlin", "2026-10-25 01:59:59", time.Date(2026, 10, 24, 23, 59, 59, 0, time.UTC), time.Date(2026, 10, 24, 23, 59, 59, 0, time.UTC)},
		{"Europe/Berlin", "2026-10-25 03:00", time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC)},
		{"Europe/Berlin", "2026-12-01 10:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		// A date alone whose midnight is never shown (Santiago, 2026-09-06: 00:00 jumps
		// to 01:00 at 04:00 UTC): the day starts at the jump.
		{"America/Santiago", "2026-09-06", time.Date(2026, 9, 6, 4, 0, 0, 0, time.UTC), time.Date(2026, 9, 6, 3, 59, 59, 0, time.UTC)},
		// Lord Howe sets its clock back half an hour (2026-04-05, 02:00 to 01:30, at 15:00 UTC).
		{"Australia/Lord_Howe", "2026-04-05 01:45", time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC), time.Date(2026, 4, 4, 15, 15, 0, 0, time.UTC)},
	} {
		loc, err := time.LoadLocation(tc.zone)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := parseTime(tc.in, now, loc, false); !ok || !got.Equal(tc.since) {
			t.Errorf("%s --since %q = %v, want %v", tc.zone, tc.in, got.UTC(), tc.since)
		}
		if got, ok := parseTime(tc.in, now, loc, true); !ok || !got.Equal(tc.until) {
			t.Errorf("%s --until %q = %v, want %v", tc.zone, tc.in, got.UTC(), tc.until)
		}
	}
}
