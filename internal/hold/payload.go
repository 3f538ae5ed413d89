package hold

import (
	"bytes"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// A payload is formatted in two steps: once per message (and per raw/pretty choice)
// into lines that do not depend on the screen (formatted), and once per width into
// lines that fit it (fit). A keystroke that scrolls does neither; a resize does only
// the second.

// codes are the escape sequences the formatter writes around each kind of token,
// taken once from the product's styles (empty without colour).
type codes struct {
	keyOn, keyOff, strOn, strOff, numOn, numOff, litOn, litOff string
}

func codesOf(st render.Styles) codes {
	var c codes
	c.keyOn, c.keyOff = render.Codes(st.JSONKey)
	c.strOn, c.strOff = render.Codes(st.JSONString)
	c.numOn, c.numOff = render.Codes(st.JSONNumber)
	c.litOn, c.litOff = render.Codes(st.JSONLiteral)
	return c
}

// formatted is a payload ready to be fitted to a width.
type formatted struct {
	kind  string   // "json", "text", "binary" or "unknown", for the header
	size  int      // bytes of the payload as produced
	lines []string // JSON and text: lines, escaped; nil for binary
	wrap  bool     // text: wrapped at word boundaries, not cut anywhere
	bin   []byte   // binary: the bytes, dumped per width
}

// format formats m's payload: pretty (JSON indented and coloured, text as text, binary
// as a hex dump) or raw (the produced bytes, escaped).
func format(m *client.Message, raw bool, c codes) formatted {
	b, kind, err := m.AppendPayload(nil)
	if err != nil {
		// An encoding this client does not know, or a broken payload: show what the
		// node sent, escaped, and say why it is not decoded.
		return formatted{kind: "unknown", size: len(m.Payload), lines: append([]string{"(" + textenc.Escape(err.Error()) + ")"}, textLines(m.Payload)...)}
	}
	f := formatted{size: len(b)}
	switch {
	case kind == client.PayloadBinary && !raw:
		f.kind, f.bin = "binary", b
	case kind == client.PayloadBinary:
		f.kind, f.lines = "binary", []string{textenc.Escape(string(b))}
	case kind == client.PayloadJSON && !raw:
		f.kind = "json"
		if lines, ok := prettyJSON(b, c); ok {
			f.lines = lines
		} else {
			f.lines = textLines(b)
		}
	case kind == client.PayloadJSON:
		f.kind, f.lines = "json", textLines(b)
	default:
		f.kind, f.lines, f.wrap = "text", textLines(b), !raw
	}
	return f
}

// textLines splits b at its newlines and escapes each line as text output does, with
// tabs shown as spaces: control characters never reach the terminal.
func textLines[T ~string | ~[]byte](b T) []string {
	s := string(b)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.IndexByte(l, '\t') >= 0 {
			l = strings.ReplaceAll(l, "\t", "    ")
		}
		lines[i] = textenc.Escape(l)
	}
	return lines
}

// fit returns f's lines for a screen width: long lines wrapped (text at word
// boundaries, JSON anywhere), the hex dump as wide as fits.
func (f formatted) fit(width int) []string {
	width = max(width, 8)
	if f.bin != nil || (f.kind == "binary" && f.lines == nil) {
		return hexDump(f.bin, width)
	}
	out := make([]string, 0, len(f.lines))
	for _, l := range f.lines {
		// Most lines are short: the byte length bounds the width.
		if len(l) <= width || ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		var w string
		if f.wrap {
			w = ansi.Wrap(l, width, "")
		} else {
			w = ansi.Hardwrap(l, width, true)
		}
		out = append(out, strings.Split(w, "\n")...)
	}
	return out
}

// hexDump shows b 16 bytes a line (8 or 4 on a narrow screen): the offset, the bytes
// in hex, and the printable ASCII ones, the others as dots.
func hexDump(b []byte, width int) []string {
	per := 16
	for per > 4 && 10+per*3+per/8+2+per > width {
		per /= 2
	}
	lines := make([]string, 0, len(b)/per+1)
	line := make([]byte, 0, 10+per*4+8)
	for off := 0; off < len(b); off += per {
		chunk := b[off:min(off+per, len(b))]
		line = line[:0]
		line = appendHex8(line, off)
		line = append(line, ' ', ' ')
		for i := range per {
			if i > 0 && i%8 == 0 {
				line = append(line, ' ')
			}
			if i < len(chunk) {
				line = append(line, hexDigits[chunk[i]>>4], hexDigits[chunk[i]&0xf], ' ')
			} else {
				line = append(line, ' ', ' ', ' ')
			}
		}
		line = append(line, ' ', '|')
		for _, c := range chunk {
			if c < 0x20 || c >= 0x7f {
				c = '.'
			}
			line = append(line, c)
		}
		line = append(line, '|')
		lines = append(lines, string(line))
	}
	return lines
}

const hexDigits = "0123456789abcdef"

func appendHex8(dst []byte, n int) []byte {
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(n>>shift)&0xf])
	}
	return dst
}

// prettyJSON indents the JSON value b two spaces a level and colours its tokens, in
// one pass over the bytes. Strings are escaped as text output escapes them (a C1
// control, a bidi override or bytes that are not UTF-8 stay visible and inert); the
// JSON escapes they hold are shown as written. ok is false when b is not the JSON the
// node promised, and the caller shows it as text instead.
func prettyJSON(b []byte, c codes) (lines []string, ok bool) {
	// One buffer for the whole document, and the lines cut from one string of it: a
	// string per line cost a third of the time. The loop stays in one function with
	// its state in locals, which the compiler keeps in registers: as methods of a
	// printer struct it ran measurably slower.
	out := make([]byte, 0, len(b)*3) // indentation and colour codes
	var ends []int
	depth := 0
	newline := func() {
		ends = append(ends, len(out))
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for i := spaceEnd(b, 0); i < len(b); i = spaceEnd(b, i) {
		switch ch := b[i]; ch {
		case '{', '[':
			i = spaceEnd(b, i+1)
			if i < len(b) && (b[i] == '}' || b[i] == ']') {
				out = append(out, ch, b[i]) // {} and [] stay whole
				i++
				continue
			}
			out = append(out, ch)
			depth++
			newline()
		case '}', ']':
			if depth == 0 {
				return nil, false
			}
			depth--
			newline()
			out = append(out, ch)
			i++
		case ',':
			out = append(out, ',')
			newline()
			i++
		case ':':
			out = append(out, ':', ' ')
			i++
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return nil, false
			}
			on, off := c.strOn, c.strOff
			if j := spaceEnd(b, end); j < len(b) && b[j] == ':' {
				on, off = c.keyOn, c.keyOff
			}
			out = append(out, on...)
			out = textenc.AppendEscape(out, b[i:end])
			out = append(out, off...)
			i = end
		default:
			j := i
			for j < len(b) && !isDelim(b[j]) {
				j++
			}
			if j == i {
				return nil, false
			}
			on, off := c.numOn, c.numOff
			if ch == 't' || ch == 'f' || ch == 'n' {
				on, off = c.litOn, c.litOff
			}
			out = append(out, on...)
			out = textenc.AppendEscape(out, b[i:j])
			out = append(out, off...)
			i = j
		}
	}
	if depth != 0 {
		return nil, false
	}
	return cutLines(string(out), append(ends, len(out))), true
}

// cutLines cuts all at each of ends, into strings that share its memory.
func cutLines(all string, ends []int) []string {
	lines := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		lines[i] = all[start:end]
		start = end
	}
	return lines
}

// spaceEnd returns the index of the first byte at or after i that is not JSON
// whitespace.
func spaceEnd(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isDelim reports whether c ends a JSON number or literal.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

// stringEnd returns the index after the JSON string starting at b[i] (a quote), or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], `"\`)
		if k < 0 {
			return -1
		}
		j += k
		if b[j] == '\\' {
			j += 2
			continue
		}
		return j + 1
	}
	return -1
}
