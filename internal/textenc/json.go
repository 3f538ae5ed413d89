package textenc

import "unicode/utf8"

// Mode says what AppendJSONString escapes beyond what JSON requires.
type Mode uint8

const (
	// Wire escapes only what JSON requires (", \ and C0 controls) and copies every
	// other byte as it is: for bodies between programs (a produce request, a node's
	// answer), whose callers hand it valid UTF-8 and send anything else as base64.
	Wire Mode = iota
	// Inert is for JSON a person may read on a terminal (-o json): it also escapes
	// DEL, C1 controls, bidi controls, zero-width characters and U+2028/U+2029 as \u
	// escapes, and turns bytes that are not UTF-8 into U+FFFD as encoding/json does.
	// The decoded value is the same; the line shown stays inert.
	Inert
)

// specialBytes[mode][c] says whether AppendJSONString looks closer at byte c in mode:
// a table, so that a clean byte costs one load and one branch whatever the mode (a test
// of the mode in the loop slows the wire mode, whose bodies are the largest). Built at
// init: 512 steps.
var specialBytes = func() (t [Inert + 1][256]bool) {
	for c := range 256 {
		t[Wire][c] = c < 0x20 || c == '"' || c == '\\'
		t[Inert][c] = t[Wire][c] || c >= 0x7f
	}
	return t
}()

// AppendJSONString appends s to dst as a JSON string, escaped as mode says. \n, \r and
// \t get their short escapes, other C0 controls \u00NN. Unlike encoding/json it leaves
// <, > and & alone: nothing here ends up in a web page, and a terminal user reads them
// more easily.
func AppendJSONString(dst []byte, s string, mode Mode) []byte {
	special := &specialBytes[mode]
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !special[c] {
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			default:
				dst = appendControl(dst, c, true)
			}
			start = i + 1
			continue
		}
		// Only Inert mode gets here, at the first byte of a character.
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case mustEscape(r) || r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = appendUEscape(dst, r)
		default:
			i += size - 1
			continue
		}
		i += size - 1
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
