package render

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Count is one named counter of a run's end-of-run summary.
type Count struct {
	Name string
	N    int64
}

// SummaryWidth is the widest a summary gets: an 80-column terminal never wraps it.
const SummaryWidth = 80

// SummaryLine is the counters as one line for a terminal: `received 10, acked 2,
// nacked 8`. The first two always appear, the others only when they are not zero. It
// is never wider than SummaryWidth: large numbers are shortened (1.2M) when that is
// needed, and if even that is not enough it breaks between counters.
func SummaryLine(cs []Count) string {
	for _, short := range []bool{false, true} {
		if line := summaryParts(cs, short); len(line) <= SummaryWidth {
			return line
		}
	}
	var b strings.Builder
	col := 0
	for i, p := range strings.Split(summaryParts(cs, true), ", ") {
		switch {
		case i == 0:
		case col+2+len(p) > SummaryWidth:
			b.WriteString(",\n")
			col = 0
		default:
			b.WriteString(", ")
			col += 2
		}
		b.WriteString(p)
		col += len(p)
	}
	return b.String()
}

func summaryParts(cs []Count, short bool) string {
	var parts []string
	for i, c := range cs {
		if i >= 2 && c.N == 0 {
			continue
		}
		n := strconv.FormatInt(c.N, 10)
		if short {
			n = shortCount(c.N)
		}
		parts = append(parts, Escape(c.Name)+" "+n)
	}
	return strings.Join(parts, ", ")
}

// shortCount writes n in at most five characters: 999, 1.2k, 12k, 1.2M, 1.2G.
func shortCount(n int64) string {
	if n < 1000 && n > -1000 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	for _, unit := range []string{"k", "M", "G", "T", "P", "E"} {
		v /= 1000
		if v < 9.95 && v > -9.95 {
			return strconv.FormatFloat(v, 'f', 1, 64) + unit
		}
		if v < 999.5 && v > -999.5 {
			return strconv.FormatFloat(v, 'f', 0, 64) + unit
		}
	}
	return strconv.FormatInt(n, 10)
}

// SummaryTable writes the counters as a table (--stats): one row of values under a
// row of names, unless terminal is set and that would be wider than SummaryWidth
// columns; then a name and a value a row. (Scripts reading the plain table off a file
// or pipe keep its one shape.)
func SummaryTable(w io.Writer, color, terminal bool, cs []Count) error {
	headers, row := make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		headers[i], row[i] = c.Name, strconv.FormatInt(c.N, 10)
	}
	var buf bytes.Buffer
	if err := writeTable(&buf, color, color || terminal, headers, [][]string{row}); err != nil {
		return err
	}
	if !terminal || fits(buf.String()) {
		_, err := w.Write(buf.Bytes())
		return err
	}
	rows := make([][]string, len(cs))
	for i := range cs {
		rows[i] = []string{headers[i], row[i]}
	}
	buf.Reset()
	if err := writeTable(&buf, color, color || terminal, nil, rows); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// fits reports whether every line of s is at most SummaryWidth columns on a terminal.
func fits(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if lipgloss.Width(line) > SummaryWidth {
			return false
		}
	}
	return true
}

// ByteSize is a size for people: 512 B, 46.9 KiB, 2.0 MiB (the CLI's tables and
// summaries, hold mode's header).
func ByteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
