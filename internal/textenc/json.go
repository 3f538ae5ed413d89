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

// AppendJSONString appends s to dst as a JSON string, escaped as mode says. \n, \r and
// \t get their short escapes, other C0 controls \u00NN. Unlike encoding/json it leaves
// <, > and & alone: nothing here ends up in a web page, and a terminal user reads them
// more easily.
func AppendJSONString(dst []byte, s string, mode Mode) []byte {
	// Every byte above last is looked at closely: in Wire mode none, in Inert mode
	// DEL and all of non-ASCII. One comparison keeps the clean loop as short as
	// the wire-only one was.
	last := byte(0xff)
	if mode == Inert {
		last = 0x7e
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c <= last {
			i++
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
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case mustEscape(r) || r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = appendUEscape(dst, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
