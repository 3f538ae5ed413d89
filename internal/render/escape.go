package render

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// byteseq lets one implementation serve both the strings of a decoded message (keys,
// topics) and the byte slices of payloads without converting, and so without allocating.
type byteseq interface{ ~string | ~[]byte }

// Escape returns s with every character that could drive a terminal written as a visible
// escape instead: C0 controls and DEL as \xNN (\n, \r and \t as themselves, so a multi-line
// text stays one readable line), C1 controls as \u0080..\u009f (written as code points
// because in UTF-8 they are two bytes, and \x9b would wrongly suggest one raw byte), bidi
// controls and zero-width characters as \u202e and the like (they reorder or hide text),
// and bytes that are not valid UTF-8 as \xNN. Valid printable text, non-ASCII included, is
// returned unchanged, and s itself is returned when nothing needed escaping.
//
// Backslashes are not doubled: this is for people reading a terminal, where a JSON
// payload's own escapes ("C:\\dir") must read as they were produced. Exact bytes are what
// the json and raw formats are for.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s))
}

// isC1 reports whether r is a C1 control: a terminal in UTF-8 mode may act on U+009B as
// CSI just as on ESC [.
func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// isInvisible reports whether r is a bidi control (U+061C, U+200E/F, U+202A..U+202E,
// U+2066..U+2069) or a zero-width character (U+200B..U+200D, U+2060, U+FEFF): shown
// raw, they let a payload reorder or hide what the operator reads ("Trojan Source").
func isInvisible(r rune) bool {
	switch {
	case r < 0x061c:
		return false
	case r == 0x061c, r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r == 0x2060, r >= 0x2066 && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}

// mustEscape reports whether the non-ASCII rune r must be written as an escape.
func mustEscape(r rune) bool { return isC1(r) || isInvisible(r) }

// decodeRune decodes the rune at s[i:]. Copying at most four bytes to the stack lets
// utf8.DecodeRune do the validation for strings and slices alike.
func decodeRune[T byteseq](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:])
	return utf8.DecodeRune(buf[:n])
}

// needsEscape reports whether appendEscaped would change s; it lets the common clean
// case skip all copying.
func needsEscape[T byteseq](s T) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := decodeRune(s, i)
		if (r == utf8.RuneError && size == 1) || mustEscape(r) {
			return true
		}
		i += size
	}
	return false
}

// AppendEscaped appends s to dst escaped as Escape escapes it, without converting s to
// a string (hold mode escapes a payload's JSON strings in place).
func AppendEscaped(dst, s []byte) []byte { return appendEscaped(dst, s) }

// appendEscaped appends s to dst with the escapes described at Escape. Clean runs are
// copied in one append each.
func appendEscaped[T byteseq](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s, i)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case mustEscape(r):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// escapeTail escapes dst[start:] in place. Data that first has to be decoded (a base64
// key, an unquoted JSON string, a compacted document) is decoded into dst's own spare
// room and escaped from there, so a caller that reuses its buffer pays no allocation.
func escapeTail(dst []byte, start int) []byte {
	if !needsEscape(dst[start:]) {
		return dst
	}
	mid := len(dst)
	// If append reallocates, dst[start:mid] still reads the old array, which is
	// untouched; if it does not, the writes land at mid and beyond. Either way the
	// source is never overwritten while it is read.
	dst = appendEscaped(dst, dst[start:mid])
	n := copy(dst[start:], dst[mid:])
	return dst[:start+n]
}

// appendJSONString appends s as a JSON string. It escapes what JSON requires, turns
// invalid UTF-8 into U+FFFD as encoding/json does (callers that must keep such bytes
// send them base64 instead), and also escapes DEL, C1 controls, bidi controls,
// zero-width characters and U+2028/U+2029 (see InertJSON): the
// decoded value is the same, and a json line shown on a terminal stays inert. No HTML
// escaping: nothing here ends up in a web page.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
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

// InertJSON returns the JSON document j with every character a terminal may act on or
// hide written as a \u escape: DEL, C1 controls, bidi controls, zero-width characters
// and U+2028/U+2029 (encoding/json leaves all but the last two raw, and a payload's
// JSON has them as it was produced). The value is the same. Outside a string none of
// them is valid JSON, and none of their bytes is the continuation of another
// character, so the bytes around them, even ones that are not UTF-8, are kept as they
// are. j itself is returned when there is none.
func InertJSON(j []byte) []byte {
	i := inertIndex(j)
	if i < 0 {
		return j
	}
	out := make([]byte, 0, len(j)+16)
	out = append(out, j[:i]...)
	for i < len(j) {
		c := j[i]
		if c < 0x7f {
			out = append(out, c)
			i++
			continue
		}
		if r, size := unsafeRuneAt(j, i); size > 0 {
			out = appendUEscape(out, r)
			i += size
			continue
		}
		out = append(out, c)
		i++
	}
	return out
}

// appendUEscape appends r (in the BMP) as a JSON \u escape.
func appendUEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// unsafeRuneAt reports the character at b[i] when it is one InertJSON escapes, with
// its size in bytes; size is 0 for anything else (printable text, bytes that are not
// UTF-8). It matches the UTF-8 bytes of the set directly (the same set as mustEscape,
// with U+2028/U+2029), since it runs at every candidate byte of a payload.
func unsafeRuneAt(b []byte, i int) (rune, int) {
	at := func(k int) byte {
		if i+k < len(b) {
			return b[i+k]
		}
		return 0
	}
	switch b[i] {
	case 0x7f:
		return 0x7f, 1
	case 0xc2: // C1: U+0080..U+009F
		if c := at(1); c >= 0x80 && c <= 0x9f {
			return rune(c), 2
		}
	case 0xd8: // U+061C
		if at(1) == 0x9c {
			return 0x061c, 2
		}
	case 0xe2:
		c1, c2 := at(1), at(2)
		r := 0x2000 | rune(c1&0x0f)<<6 | rune(c2&0x3f)
		switch {
		case c1 == 0x80 && (c2 >= 0x8b && c2 <= 0x8f || c2 >= 0xa8 && c2 <= 0xae), // U+200B..F, U+2028..E
			c1 == 0x81 && (c2 == 0xa0 || c2 >= 0xa6 && c2 <= 0xa9): // U+2060, U+2066..9
			return r, 3
		}
	case 0xef: // U+FEFF
		if at(1) == 0xbb && at(2) == 0xbf {
			return 0xfeff, 3
		}
	}
	return 0, 0
}

// unsafeLeads are the first bytes of the characters unsafeRuneAt matches.
var unsafeLeads = [...]byte{0x7f, 0xc2, 0xd8, 0xe2, 0xef}

// inertIndex is the index of the first character of b that InertJSON escapes, or -1.
// It looks for each possible first byte with bytes.IndexByte, which passes over clean
// data many bytes at a time (five passes cost less than one byte-by-byte loop), and
// checks only the candidates it finds.
func inertIndex(b []byte) int {
	first := len(b)
	for _, lead := range unsafeLeads {
		for off := 0; off < first; {
			j := bytes.IndexByte(b[off:first], lead)
			if j < 0 {
				break
			}
			if _, size := unsafeRuneAt(b, off+j); size > 0 {
				first = off + j
				break
			}
			off += j + 1
		}
	}
	if first == len(b) {
		return -1
	}
	return first
}

// Cut returns s whole when it is at most max bytes long, else its first max bytes (at
// a character boundary) and how much was left out: "… (102,400 bytes, 102,200 not
// shown)". It is for echoing what a user or a node gave (a handle, a name) on an error
// line, which a 100 KB value would flood.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "… (" + groupDigits(len(s)) + " bytes, " + groupDigits(len(s)-end) + " not shown)"
}

// groupDigits writes n (not negative) with thousands separators.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
