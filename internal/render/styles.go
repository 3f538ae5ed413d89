package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/muesli/termenv"
)

// This file holds every lipgloss style of the product; code elsewhere takes a Styles and
// never builds a style itself, so the look of narad is decided, and changed, here.
//
// The palette is the 16 ANSI colours plus bold and faint. Those follow the user's own
// terminal theme, so they read on light and dark backgrounds alike, and no background
// query is ever needed (an adaptive colour would make lipgloss ask the terminal, which can
// stall on a pipe).

// Styles are the product's styles, bound to one output.
type Styles struct {
	// Tag is the `[p4 @0]` of a text line.
	Tag lipgloss.Style
	// Key is the `key=customer-42` of a text line.
	Key lipgloss.Style
	// Time is the clock of a text line.
	Time lipgloss.Style
	// Header is a table's header row and section titles.
	Header lipgloss.Style
	// Dim is secondary information: table borders, counters' labels.
	Dim lipgloss.Style
	// Success is a completed action.
	Success lipgloss.Style

	// Hold mode (sub -i): a pretty-printed JSON payload's object keys, strings,
	// numbers, and true/false/null; the status line at the bottom of the screen; a
	// warning (a lease running short, a retry) and a failure (a settlement refused;
	// in status --watch, a node that cannot be reached).
	JSONKey, JSONString, JSONNumber, JSONLiteral lipgloss.Style
	Bar, Warn, Failure                           lipgloss.Style

	// bench's latency histograms: the bars, and the p50/p95/p99 marks beside them.
	HistBar, HistMark lipgloss.Style

	// r builds the styles that only this file needs (table cells).
	r *lipgloss.Renderer
}

// NewStyles returns the styles rendered through a lipgloss renderer bound to w. color is
// the caller's decision (the --color flag, a terminal, NO_COLOR); the colour profile is
// forced to match it, so lipgloss neither re-detects the terminal nor reads the
// environment, and tests can assert the escape codes.
func NewStyles(w io.Writer, color bool) Styles {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	// Answered up front so that nothing can make lipgloss query the terminal.
	r.SetHasDarkBackground(true)
	return Styles{
		Tag:     r.NewStyle().Foreground(lipgloss.Color("6")), // cyan
		Key:     r.NewStyle().Foreground(lipgloss.Color("5")), // magenta
		Time:    r.NewStyle().Faint(true),
		Header:  r.NewStyle().Bold(true),
		Dim:     r.NewStyle().Faint(true),
		Success: r.NewStyle().Foreground(lipgloss.Color("2")), // green

		JSONKey:     r.NewStyle().Foreground(lipgloss.Color("4")), // blue
		JSONString:  r.NewStyle().Foreground(lipgloss.Color("2")), // green
		JSONNumber:  r.NewStyle().Foreground(lipgloss.Color("6")), // cyan
		JSONLiteral: r.NewStyle().Foreground(lipgloss.Color("5")), // magenta
		Bar:         r.NewStyle().Reverse(true),
		Warn:        r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true), // yellow
		Failure:     r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true), // red
		HistBar:     r.NewStyle().Foreground(lipgloss.Color("6")),            // cyan
		HistMark:    r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true), // yellow
		r:           r,
	}
}

// Codes returns what st writes before and after a text: a formatter that colours many
// small pieces (every token of a 1 MiB JSON payload) writes them around each piece
// instead of rendering each through lipgloss. Both are empty without colour.
func Codes(st lipgloss.Style) (open, end string) {
	out := st.Render("\x00")
	i := strings.IndexByte(out, 0)
	if i < 0 {
		return "", ""
	}
	return out[:i], out[i+1:]
}

// Table writes headers and rows to w. With colour, or when the caller says w is a
// terminal (iostreams knows; render never probes), it is a bordered lipgloss table;
// otherwise a plain table aligned with spaces (text/tabwriter), which scripts and tests
// can rely on: no borders, no escape codes, columns two spaces apart, no trailing
// spaces. Cells are escaped: they come from the node (topic names and such).
func Table(w io.Writer, color, terminal bool, headers []string, rows [][]string) error {
	return writeTable(w, color, color || terminal, headers, rows)
}

// writeTable is Table with the choice of borders made by the caller.
func writeTable(w io.Writer, color, bordered bool, headers []string, rows [][]string) error {
	ncol := len(headers)
	for _, row := range rows {
		ncol = max(ncol, len(row))
	}
	headers = tableRow(headers, ncol, len(headers) > 0)
	cells := make([][]string, len(rows))
	for i, row := range rows {
		cells[i] = tableRow(row, ncol, true)
	}
	if !bordered {
		return plainTable(w, headers, cells)
	}

	s := NewStyles(w, color)
	header := s.Header.Padding(0, 1)
	cell := s.r.NewStyle().Padding(0, 1)
	t := table.New().
		Border(lipgloss.RoundedBorder()).
		BorderStyle(s.Dim).
		Rows(cells...).
		StyleFunc(func(row, _ int) lipgloss.Style {
			if row == table.HeaderRow {
				return header
			}
			return cell
		})
	if headers != nil {
		t.Headers(headers...)
	}
	_, err := io.WriteString(w, t.Render()+"\n")
	return err
}

// tableRow escapes row and pads it to n cells, so short rows line up. It returns nil
// when keep is false (no header row at all).
func tableRow(row []string, n int, keep bool) []string {
	if !keep {
		return nil
	}
	out := make([]string, n)
	for i, c := range row {
		out[i] = Escape(c)
	}
	return out
}

func plainTable(w io.Writer, headers []string, rows [][]string) error {
	// Every cell is tab-terminated, even an empty last one: a shorter line would end
	// tabwriter's column block and misalign the lines after it. The padding this
	// leaves at line ends is trimmed afterwards.
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	if headers != nil {
		fmt.Fprintln(tw, strings.Join(headers, "\t")+"\t")
	}
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}
