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
// HistogramWidth; 0 means that) where the label, count and marks leave a bar room, so
// that a narrow terminal does not wrap the bars:
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
		room -= 2 + marksW
	}
	room = max(room, 1)
	var sb strings.Builder
	sb.WriteString(s.Header.Render(Escape(title)))
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
		if len(b.Marks) > 0 {
			sb.WriteString("  " + s.HistMark.Render(strings.Join(b.Marks, " ")))
		}
		sb.WriteByte('\n')
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
