package render

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// Wrap breaks text at spaces so that no line is wider than width columns, continuing
// each broken line with indent: what narad says on a terminal (banners, notices) never
// runs past its edge. A word wider than the line stays whole on a line of its own, as
// a URL must. Lines already in text are kept.
func Wrap(text string, width int, indent string) string {
	if width <= 0 {
		return text
	}
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		wrapLine(&b, line, width, indent)
	}
	return b.String()
}

func wrapLine(b *strings.Builder, line string, width int, indent string) {
	col := 0
	for i, word := range strings.Fields(line) {
		w := runewidth.StringWidth(word)
		switch {
		case i == 0:
			// The line's own leading spaces are kept.
			lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
			b.WriteString(lead)
			col = len(lead)
		case col+1+w > width:
			b.WriteByte('\n')
			b.WriteString(indent)
			col = runewidth.StringWidth(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += w
	}
}

// Reflow lays prose out for width columns: the lines of a paragraph (lines that start
// with a letter, up to a blank or an indented line) are joined and wrapped again, so a
// text written for one width reads well on any. Indented lines (lists, examples) are
// kept as written: their layout is their meaning.
func Reflow(text string, width int) string {
	if width <= 0 {
		return text
	}
	var out, para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, Wrap(strings.Join(para, " "), width, ""))
			para = para[:0]
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			flush()
			out = append(out, line)
			continue
		}
		para = append(para, strings.TrimSpace(line))
	}
	flush()
	return strings.Join(out, "\n")
}

// Width is how many terminal columns plain text takes.
func Width(s string) int { return runewidth.StringWidth(s) }

// Truncate cuts a line of plain text to width terminal columns, ending it with "…"
// when cut. It counts display columns, not runes: a CJK character or an emoji takes
// two, so a line of them cut by runes ran past the edge and wrapped the screen.
func Truncate(line string, width int) string {
	switch {
	case width <= 0:
		return ""
	case runewidth.StringWidth(line) <= width:
		return line
	case width == 1:
		return runewidth.Truncate(line, 1, "")
	}
	return runewidth.Truncate(line, width, "…")
}

// TruncateMiddle cuts plain text to width terminal columns by leaving out its
// middle, marked "…": for names, whose ends tell them apart where a shared prefix
// does not (orders-retry-30s and orders-retry-30s-run both cut at the end read
// orders-retry-…).
func TruncateMiddle(s string, width int) string {
	switch {
	case width <= 0:
		return ""
	case runewidth.StringWidth(s) <= width:
		return s
	case width <= 2:
		return Truncate(s, width)
	}
	rs := []rune(s)
	room := width - 1 // the ellipsis takes one column
	headRoom := room - room/2
	i, w := 0, 0
	for i < len(rs) && w+runewidth.RuneWidth(rs[i]) <= headRoom {
		w += runewidth.RuneWidth(rs[i])
		i++
	}
	// The tail takes what the head left, so a wide character that did not fit there
	// is not a column lost.
	tailRoom := room - w
	j, tw := len(rs), 0
	for j > i && tw+runewidth.RuneWidth(rs[j-1]) <= tailRoom {
		tw += runewidth.RuneWidth(rs[j-1])
		j--
	}
	return string(rs[:i]) + "…" + string(rs[j:])
}
