package render

import (
	"bytes"
	"strings"
	"testing"
)

func counts(ns ...int64) []Count {
	names := []string{"received", "acked", "nacked", "failed", "timed_out", "lease_lost", "ack_gone", "retries", "bugs", "dead_lettered"}
	cs := make([]Count, len(ns))
	for i, n := range ns {
		cs[i] = Count{names[i], n}
	}
	return cs
}

func TestSummaryLine(t *testing.T) {
	tests := []struct {
		cs   []Count
		want string
	}{
		{counts(0, 0, 0, 0, 0, 0, 0, 0, 0), "received 0, acked 0"},
		{counts(10, 2, 8, 0, 0, 0, 0, 0, 0), "received 10, acked 2, nacked 8"},
		{counts(3, 0, 0, 1, 0, 0, 0, 4, 0), "received 3, acked 0, failed 1, retries 4"},
		// Too wide with every number in full: shortened.
		{counts(1234567, 1234567, 1234567, 1234567, 1234567, 0, 0, 0, 0),
			"received 1.2M, acked 1.2M, nacked 1.2M, failed 1.2M, timed_out 1.2M"},
	}
	for _, tt := range tests {
		if got := SummaryLine(tt.cs); got != tt.want {
			t.Errorf("SummaryLine(%v) = %q, want %q", tt.cs, got, tt.want)
		}
	}
	// Whatever the counters, no line is wider than 80 columns.
	for _, n := range []int64{1, 999, 12345, 999999999, 1 << 62} {
		all := counts(n, n, n, n, n, n, n, n, n, n)
		for _, line := range strings.Split(SummaryLine(all), "\n") {
			if len(line) > SummaryWidth {
				t.Errorf("%d: line of %d columns: %q", n, len(line), line)
			}
		}
	}
}

func TestShortCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.0k", 1234: "1.2k", 9960: "10k", 123456: "123k",
		999499: "999k", 999500: "1.0M", 1234567: "1.2M", 5e9: "5.0G"} {
		if got := shortCount(n); got != want {
			t.Errorf("shortCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSummaryTable: the table fits in 80 columns on a terminal (borders and all),
// turning to a name and a value a row when one row of values would not. Off a
// terminal it keeps its one shape, for scripts.
func TestSummaryTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cs    []Count
		color bool
		wide  bool // one row of values under the names
	}{
		// On a terminal the table has borders with or without colour.
		{"no colour, nine counters", counts(3, 3, 0, 0, 0, 0, 0, 0, 0), false, false},
		{"no colour, three counters", counts(3, 3, 0), false, true},
		{"bordered, nine counters", counts(3, 3, 0, 0, 0, 0, 0, 0, 0), true, false},
		{"bordered, three counters", counts(3, 3, 0), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := SummaryTable(&buf, tc.color, true, tc.cs); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !fits(out) {
				t.Errorf("wider than 80 columns:\n%s", out)
			}
			if wide := strings.Count(out, "\n") <= 5; wide != tc.wide {
				t.Errorf("one row of values: %v, want %v:\n%s", wide, tc.wide, out)
			}
			for _, c := range tc.cs {
				if !strings.Contains(out, c.Name) {
					t.Errorf("%s missing:\n%s", c.Name, out)
				}
			}
		})
	}
}

func TestSummaryTableOffATerminalKeepsItsShape(t *testing.T) {
	var buf bytes.Buffer
	if err := SummaryTable(&buf, false, false, counts(3, 3, 0, 0, 0, 0, 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	want := "received  acked  nacked  failed  timed_out  lease_lost  ack_gone  retries  bugs  dead_lettered\n" +
		"3         3      0       0       0          0           0         0        0     0\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
