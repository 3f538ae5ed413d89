package cli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The durations the topic flags take and show: Go durations with a leading number
// of days allowed (7d, 1d12h), carried by the API in milliseconds.

// parseMillisFlag parses a duration flag into the milliseconds the API carries.
func parseMillisFlag(name, s string) (int64, error) {
	d, err := parseDurationDays(s)
	if err != nil {
		return 0, usageErrorf("invalid --%s %q (a duration such as 500ms, 30s, 1h30m or 7d)", name, s)
	}
	if d < time.Millisecond {
		return 0, usageErrorf("invalid --%s %q (at least 1ms)", name, s)
	}
	if d%time.Millisecond != 0 {
		return 0, usageErrorf("invalid --%s %q (whole milliseconds: the node counts in ms)", name, s)
	}
	return d.Milliseconds(), nil
}

// parseMillisOrZero is parseMillisFlag with zero allowed (the node's default, or no
// delay), in any spelling: "0s" and "0ms" are the same zero as "0".
func parseMillisOrZero(name, s string) (int64, error) {
	d, err := parseDurationDays(s)
	switch {
	case err == nil && d == 0:
		return 0, nil
	case err == nil && d < 0:
		return 0, usageErrorf("invalid --%s %q (0, or a positive duration such as 30s)", name, s)
	}
	return parseMillisFlag(name, s)
}

var daysRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)d(.*)$`) })

// parseDurationDays is time.ParseDuration with a leading whole number of days
// allowed ("7d", "1d12h"), since retention is usually said in days.
func parseDurationDays(s string) (time.Duration, error) {
	m := daysRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || days > int64(time.Duration(1<<63-1)/(24*time.Hour)) {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d := time.Duration(days) * 24 * time.Hour
	if m[2] != "" {
		rest, err := time.ParseDuration(m[2])
		if err != nil || rest < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if d+rest < d {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		d += rest
	}
	return d, nil
}

// formatMillis is a duration in milliseconds the way parseDurationDays reads it:
// 500ms, 30s, 1m30s, 2h, 7d, 1d12h.
func formatMillis(ms int64) string {
	if ms <= 0 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	d := time.Duration(ms) * time.Millisecond
	days := d / (24 * time.Hour)
	rest := d % (24 * time.Hour)
	var s string
	if days > 0 {
		s = strconv.FormatInt(int64(days), 10) + "d"
	}
	if rest > 0 {
		s += roundDuration(rest)
	}
	return s
}

// maxFanoutDelayMs is the longest delay a node accepts for a delay child (a year).
const maxFanoutDelayMs = 365 * 24 * 60 * 60 * 1000

// parseDelay is a fan-out delay: 0 allowed (no delay), at most a year.
func parseDelay(s string) (int64, error) {
	ms, err := parseMillisOrZero("delay", s)
	if err != nil {
		return 0, err
	}
	if ms > maxFanoutDelayMs {
		return 0, usageErrorf("invalid --delay %q (at most 365d)", s)
	}
	return ms, nil
}
