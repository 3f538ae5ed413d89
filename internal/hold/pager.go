package hold

import "strings"

// pager scrolls the payload's lines, already fitted to the width (see formatted.fit):
// a keystroke moves an offset and a redraw joins one screen of lines, whatever the
// payload's size. (The bubbles viewport measured the width of every line it was given
// at each redraw, see docs/performance.md, and its package brings lipgloss v2, whose
// initialisation detects the terminal, running `tmux info` inside tmux, for every
// command of the binary.)
type pager struct {
	lines  []string
	off    int
	height int
}

// set shows lines, from the top or where the screen was (a resize, raw/pretty).
func (p *pager) set(lines []string, top bool) {
	p.lines = lines
	if top {
		p.off = 0
	}
	p.clamp()
}

func (p *pager) setHeight(h int) {
	p.height = max(h, 1)
	p.clamp()
}

func (p *pager) scroll(n int) {
	p.off += n
	p.clamp()
}

func (p *pager) top()    { p.off = 0 }
func (p *pager) bottom() { p.off = len(p.lines); p.clamp() }

func (p *pager) clamp() {
	p.off = min(p.off, max(len(p.lines)-p.height, 0))
	p.off = max(p.off, 0)
}

// long reports whether the lines are more than a screen.
func (p *pager) long() bool { return len(p.lines) > p.height }

// percent is how far down the last line shown is.
func (p *pager) percent() int {
	if len(p.lines) == 0 {
		return 100
	}
	return min(p.off+p.height, len(p.lines)) * 100 / len(p.lines)
}

// view is one screen: height lines, the missing ones empty.
func (p *pager) view() string {
	end := min(p.off+p.height, len(p.lines))
	var b strings.Builder
	for i := p.off; i < end; i++ {
		b.WriteString(p.lines[i])
		b.WriteByte('\n')
	}
	for i := end - p.off; i < p.height; i++ {
		b.WriteByte('\n')
	}
	s := b.String()
	return s[:len(s)-1]
}
