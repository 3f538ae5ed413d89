package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// HistogramBar is one bucket of a histogram: its label ("1–2ms") and count.
type HistogramBar struct {
	Label string
	Count int64
	// Marks name what falls in this bucket ("p50", "p95"), drawn beside its bar.
	Marks []string
}

// HistogramWidth is the widest a histogram line is: it fits an 80-column terminal.
// A narrower terminal draws it narrower (Histogram's width).
const HistogramWidth = 80

// eighths draw a bar's last cell to an eighth of a cell.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// Histogram draws a title and one line per bar, none wider than width (at most
// HistogramWidth; 0 means that) wherever the labels and counts fit beside a bar of one
// cell: the bar narrows first, then the marks that do not fit are left off, so that a
// narrow terminal does not wrap the lines:
//
//	label │██████████▌   count  p50
//
// Bars are in proportion to the largest count (which fills the bar's room); a bucket
// with any count shows at least an eighth of a cell, so a rare slow request is never
// invisible.
func Histogram(w io.Writer, s Styles, title string, bars []HistogramBar, width int) error {
	if width <= 0 || width > HistogramWidth {
		width = HistogramWidth
	}
	labelW, countW, marksW := 0, 1, 0
	var most int64
	for _, b := range bars {
		labelW = max(labelW, len([]rune(b.Label)))
		countW = max(countW, len(strconv.FormatInt(b.Count, 10)))
		marksW = max(marksW, len([]rune(strings.Join(b.Marks, " "))))
		most = max(most, b.Count)
	}
	// label, " │", bar, " ", count, then "  " and the marks when any bar has them.
	room := width - labelW - 2 - 1 - countW
	if marksW > 0 {
		// On a screen too narrow for them all beside a bar of one cell, the marks
		// keep what fits, whole (p50, not p…), rather than wrap the line.
		marksW = min(marksW, max(room-1-2, 0))
		if marksW > 0 {
			room -= 2 + marksW
		}
	}
	room = max(room, 1)
	var sb strings.Builder
	sb.WriteString(s.Header.Render(Truncate(Escape(title), width)))
	sb.WriteByte('\n')
	sep := s.Dim.Render("│") // the same on every line
	for _, b := range bars {
		bar := ""
		if most > 0 && b.Count > 0 {
			e := int(b.Count * int64(room) * 8 / most) // in eighths of a cell
			e = max(e, 1)
			bar = strings.Repeat("█", e/8) + eighths[e%8]
		}
		pad := room - len([]rune(bar))
		fmt.Fprintf(&sb, "%*s %s%s%s %*d", labelW, b.Label, sep, s.HistBar.Render(bar),
			strings.Repeat(" ", pad), countW, b.Count)
		if marks := fitMarks(b.Marks, marksW); marks != "" {
			sb.WriteString("  " + s.HistMark.Render(marks))
		}
		sb.WriteByte('\n')
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// fitMarks joins the marks that fit in width columns, whole, from the first.
func fitMarks(marks []string, width int) string {
	out := ""
	for _, m := range marks {
		next := m
		if out != "" {
			next = out + " " + m
		}
		if len([]rune(next)) > width {
			break
		}
		out = next
	}
	return out
}
