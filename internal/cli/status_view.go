package cli

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/narad/narad/internal/render"
)

// watchView is status --watch's terminal screen: what the last refreshes said, drawn
// into width×height. It only keeps state and draws; the terminal loop feeds it
// samples, keys and sizes (so tests drive it with no terminal at all).
type watchView struct {
	server   string
	interval time.Duration
	styles   render.Styles

	width, height int
	// last is the last sample that reached the node: its table stays on screen while
	// the node is away.
	last *watchSample
	// lostSince is when the node stopped answering (zero while it answers), lostErr
	// the last reason.
	lostSince time.Time
	lostErr   error
	lastTry   time.Time
	// top is the first row shown, when the topics do not all fit.
	top int
	// ended is a watch that is over: its last screen left on the terminal names
	// no keys.
	ended bool
}

func newWatchView(server string, interval time.Duration, styles render.Styles, width, height int) *watchView {
	return &watchView{server: server, interval: interval, styles: styles, width: width, height: height}
}

// update takes a refresh.
func (v *watchView) update(s watchSample) {
	v.lastTry = s.At
	if s.Err != nil {
		if v.lostSince.IsZero() {
			v.lostSince = s.At
		}
		v.lostErr = s.Err
		return
	}
	v.lostSince, v.lostErr = time.Time{}, nil
	v.last = &s
	v.clampTop()
}

// resize takes the terminal's new size.
func (v *watchView) resize(width, height int) {
	v.width, v.height = max(width, 1), max(height, 1)
	v.clampTop()
}

// key takes one key press; it says whether the watch should end.
func (v *watchView) key(k string) (quit bool) {
	if quitKey(k) {
		return true
	}
	switch k {
	case "j", "\x1b[B", "\x0e": // down, Ctrl-N
		v.top++
	case "k", "\x1b[A", "\x10": // up, Ctrl-P
		v.top--
	case " ", "\x1b[6~", "f": // page down
		v.top += v.rowsFit()
	case "b", "\x1b[5~": // page up
		v.top -= v.rowsFit()
	case "g", "\x1b[H", "\x1b[1~":
		v.top = 0
	case "G", "\x1b[F", "\x1b[4~":
		v.top = 1 << 30
	}
	v.clampTop()
	return false
}

// quitKey is a key that ends a watch: q, Ctrl-C (a byte, not a signal, when the
// terminal is raw) or Ctrl-D.
func quitKey(k string) bool {
	switch k {
	case "q", "Q", "\x03", "\x04":
		return true
	}
	return false
}

// The screen: a title line, a state line, the table's header, its rows, a footer.
const watchChromeLines = 4

// rowsFit is how many table rows fit under the title, state, header and footer.
func (v *watchView) rowsFit() int { return max(v.height-watchChromeLines, 1) }

func (v *watchView) clampTop() {
	n := 0
	if v.last != nil {
		n = len(v.last.Rows)
	}
	v.top = min(v.top, max(n-v.rowsFit(), 0))
	v.top = max(v.top, 0)
}

// view is the whole screen: at most height lines, none wider than width columns.
func (v *watchView) view() []string {
	s := v.styles
	lines := []string{s.Header.Render(v.fit("narad status")) + s.Dim.Render(v.fitAfter("narad status",
		fmt.Sprintf(" · %s · every %s", v.server, roundDuration(v.interval))))}

	var state string
	switch {
	case !v.lostSince.IsZero():
		state = s.Failure.Render(v.fit(fmt.Sprintf("node unreachable since %s: %s (trying every %s, last at %s)",
			v.lostSince.Format("15:04:05"), render.Escape(describeErr(v.lostErr)), roundDuration(v.interval),
			refreshTime(v.lastTry, v.interval))))
	case v.last != nil && v.last.MetricsErr != nil:
		state = s.Dim.Render(v.fit(fmt.Sprintf("refreshed %s · in flight, lag and consume rates not shown: %s",
			refreshTime(v.last.At, v.interval), render.Escape(metricsProblem(v.last.MetricsErr)))))
	case v.last != nil:
		state = s.Dim.Render(v.fit("refreshed " + refreshTime(v.last.At, v.interval)))
	}
	lines = append(lines, state)

	var rows []TopicStatus
	if v.last != nil {
		rows = v.last.Rows
	}
	if len(rows) == 0 {
		lines = append(lines, v.fit("no topics (create one with narad topic create NAME)"))
		return v.clip(lines)
	}
	var buf bytes.Buffer
	cells := watchCells(rows)
	fitNames(watchHeaders, cells, v.width)
	_ = render.Table(&buf, false, false, watchHeaders, cells) // a bytes.Buffer takes every write
	table := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	lines = append(lines, s.Header.Render(v.fit(table[0])))
	body := table[1:]
	end := min(v.top+v.rowsFit(), len(body))
	for _, l := range body[v.top:end] {
		lines = append(lines, v.fit(l))
	}
	footer := "q quits"
	switch {
	case v.ended && len(body) > v.rowsFit():
		footer = fmt.Sprintf("topics %d–%d of %d", v.top+1, end, len(body))
	case v.ended:
		return v.clip(lines)
	case len(body) > v.rowsFit():
		footer = fmt.Sprintf("topics %d–%d of %d · ↑↓ PgUp PgDn scroll · q quits", v.top+1, end, len(body))
	}
	lines = append(lines, s.Dim.Render(v.fit(footer)))
	return v.clip(lines)
}

// fitNames cuts the names in the first column of cells, with an ellipsis in their
// middle, so that the table (render.Table's, two spaces between columns) fits width
// columns with every other column whole: a topic name gives way before a number
// does, and names that share a prefix (orders-retry-30s, orders-retry-30s-run) keep
// the ends that tell them apart. Names keep
// at least the header's width; a screen too narrow even for that is cut at its edge
// as any line is.
func fitNames(headers []string, cells [][]string, width int) {
	const gap = 2
	others := 0
	for j := 1; j < len(headers); j++ {
		w := render.Width(headers[j])
		for _, row := range cells {
			if j < len(row) {
				w = max(w, render.Width(render.Escape(row[j])))
			}
		}
		others += gap + w
	}
	room := max(width-others, render.Width(headers[0]))
	for _, row := range cells {
		if len(row) > 0 {
			// Escaped first (the table's escaping leaves escaped text as it is), so the
			// cut counts the columns the name takes on screen.
			row[0] = render.TruncateMiddle(render.Escape(row[0]), room)
		}
	}
}

// clip keeps the first height lines.
func (v *watchView) clip(lines []string) []string {
	return lines[:min(len(lines), v.height)]
}

// fit cuts a line of plain text to the screen's width (in columns: topic names and
// errors may hold wide characters).
func (v *watchView) fit(line string) string {
	return render.Truncate(line, v.width)
}

// fitAfter is rest cut to the width that remains after first.
func (v *watchView) fitAfter(first, rest string) string {
	return render.Truncate(rest, v.width-render.Width(first))
}

// frame is the bytes that draw lines over the previous screen in place: home, each
// line followed by erase-to-end-of-line, then erase below. Nothing is cleared first,
// so nothing flickers; lines end with \r\n since the terminal is in raw mode.
func frame(lines []string) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b[H")
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
		b.WriteString("\x1b[K")
	}
	b.WriteString("\x1b[J")
	return b.Bytes()
}
