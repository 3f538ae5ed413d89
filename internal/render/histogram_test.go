package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

func drawHistogram(t *testing.T, color bool, bars []HistogramBar) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := Histogram(&buf, NewStyles(&buf, color), "produce latency, 1000 requests", bars, 0); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func TestHistogramFitsAndMarks(t *testing.T) {
	bars := []HistogramBar{
		{Label: "200–500µs", Count: 3},
		{Label: "500µs–1ms", Count: 1},
		{Label: "1–2ms", Count: 9_999_999, Marks: []string{"p50"}},
		{Label: "2–5ms", Count: 0},
		{Label: "5–10ms", Count: 5_000_000, Marks: []string{"p95", "p99"}},
	}
	for _, color := range []bool{false, true} {
		lines := drawHistogram(t, color, bars)
		if len(lines) != 1+len(bars) {
			t.Fatalf("color %v: %d lines, want a title and %d bars", color, len(lines), len(bars))
		}
		for _, l := range lines {
			if w := lipgloss.Width(l); w > HistogramWidth {
				t.Errorf("color %v: a line of %d columns: %q", color, w, l)
			}
		}
	}
	lines := drawHistogram(t, false, bars)
	if lines[0] != "produce latency, 1000 requests" {
		t.Errorf("title %q", lines[0])
	}
	// The largest count fills the room; the marks end the lines their buckets are on.
	full := lines[3]
	if !strings.HasSuffix(full, "█ 9999999  p50") || !strings.HasPrefix(full, "    1–2ms │████") {
		t.Errorf("the largest bar's line %q (width %d)", full, lipgloss.Width(full))
	}
	if !strings.HasSuffix(lines[5], " 5000000  p95 p99") || lipgloss.Width(lines[5]) != HistogramWidth {
		t.Errorf("p95 and p99 line %q", lines[5])
	}
	for i, l := range lines[1:] {
		hasMark := strings.Contains(l, "p50") || strings.Contains(l, "p9")
		if hasMark != (len(bars[i].Marks) > 0) {
			t.Errorf("bar %d (%s): marked %v: %q", i, bars[i].Label, hasMark, l)
		}
	}
	// Half the largest count, half the bar; any count at all shows; none shows nothing.
	barOf := func(l string) string {
		_, rest, _ := strings.Cut(l, "│")
		return strings.TrimRight(strings.Fields(rest + " x")[0], " ")
	}
	fullCells, halfCells := len([]rune(barOf(lines[3]))), len([]rune(barOf(lines[5])))
	if halfCells < fullCells/2-1 || halfCells > fullCells/2+1 {
		t.Errorf("bars of %d and %d cells for counts 2:1", fullCells, halfCells)
	}
	if barOf(lines[2]) != "▏" {
		t.Errorf("a count of 1 among millions draws %q, want one eighth of a cell", barOf(lines[2]))
	}
	if !strings.Contains(lines[4], "│ ") || strings.ContainsAny(lines[4], "█▏▎▍▌▋▊▉") {
		t.Errorf("an empty bucket draws something: %q", lines[4])
	}
	// Without colour, no escape codes; with it, the bars and marks are styled.
	if strings.Contains(strings.Join(lines, ""), "\x1b") {
		t.Error("escape codes without colour")
	}
	colored := strings.Join(drawHistogram(t, true, bars), "\n")
	if !strings.Contains(colored, "\x1b[36m█") || !strings.Contains(colored, "\x1b[1;33mp50") {
		t.Errorf("no styled bars or marks: %q", colored)
	}
}

// A terminal narrower than 80 columns gets bars as narrow as it is: a wrapped bar
// reads as two.
func TestHistogramFitsANarrowWidth(t *testing.T) {
	bars := []HistogramBar{
		{Label: "500µs–1ms", Count: 1},
		{Label: "1–2ms", Count: 40, Marks: []string{"p50"}},
		{Label: "2–5ms", Count: 2, Marks: []string{"p95", "p99"}},
	}
	var buf bytes.Buffer
	if err := Histogram(&buf, NewStyles(&buf, false), "latency", bars, 40); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for _, l := range lines {
		if w := lipgloss.Width(l); w > 40 {
			t.Errorf("a line of %d columns in 40: %q", w, l)
		}
	}
	// The largest count still fills the room: the p95 line, with the longest marks,
	// is exactly as wide as the terminal.
	if w := lipgloss.Width(lines[3]); w != 40 {
		t.Errorf("p95 line %d columns, want 40: %q", w, lines[3])
	}
}

// A terminal too narrow for the bars and all their marks (20 columns) still gets
// lines that do not wrap: each bar keeps a cell, the title is cut, and the marks keep
// what fits, whole.
func TestHistogramFitsATinyWidth(t *testing.T) {
	bars := []HistogramBar{
		{Label: "500µs–1ms", Count: 1},
		{Label: "1–2ms", Count: 40, Marks: []string{"p50"}},
		{Label: "2–5ms", Count: 2, Marks: []string{"p95", "p99"}},
	}
	var buf bytes.Buffer
	if err := Histogram(&buf, NewStyles(&buf, false), "consume latency, 14 requests", bars, 20); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for _, l := range lines {
		if w := lipgloss.Width(l); w > 20 {
			t.Errorf("a line of %d columns in 20: %q", w, l)
		}
	}
	if len(lines) != 4 || !strings.HasSuffix(lines[2], " 40  p50") || !strings.HasSuffix(lines[3], "  2  p95") ||
		!strings.Contains(lines[1], "│▏") {
		t.Errorf("lines:\n%s", strings.Join(lines, "\n"))
	}
}
