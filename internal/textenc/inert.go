package textenc

import (
	"bytes"
	"unicode/utf8"
)

// InertJSON returns the JSON document j with every character a terminal may act on or
// hide written as a \u escape: DEL, C1 controls, bidi controls, zero-width and the
// other invisible format characters (IsInvisible; a pair of \u escapes beyond the BMP)
// and U+2028/U+2029 (encoding/json leaves all but the last two raw, and a payload's
// JSON has them as it was produced). The value is the same. Outside a string none of
// them is valid JSON, and none of their bytes is the continuation of another
// character, so the bytes around them, even ones that are not UTF-8, are kept as they
// are. j itself is returned when there is none.
func InertJSON(j []byte) []byte {
	i := IndexInert(j)
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

// unsafeRuneAt reports the character at b[i] when it is one InertJSON escapes, with
// its size in bytes; size is 0 for anything else (printable text, bytes that are not
// UTF-8). It runs at every candidate byte IndexInert finds, so a byte that cannot
// start one is turned away before anything is decoded.
func unsafeRuneAt(b []byte, i int) (rune, int) {
	c := b[i]
	if c == 0x7f {
		return 0x7f, 1
	}
	if !isUnsafeLead(c) {
		return 0, 0
	}
	r, size := utf8.DecodeRune(b[i:min(i+utf8.UTFMax, len(b))])
	if size > 1 && (mustEscape(r) || r == '\u2028' || r == '\u2029') {
		return r, size
	}
	return 0, 0
}

// unsafeLeads are the first bytes of the characters InertJSON escapes: DEL, C1
// (0xc2), U+061C (0xd8), U+180E (0xe1), U+2000..U+2FFF (0xe2), U+F000..U+FFFF (0xef),
// U+10000..U+3FFFF (0xf0) and the tag characters' U+C0000..U+FFFFF (0xf3).
var unsafeLeads = [...]byte{0x7f, 0xc2, 0xd8, 0xe1, 0xe2, 0xef, 0xf0, 0xf3}

func isUnsafeLead(c byte) bool {
	for _, lead := range unsafeLeads {
		if c == lead {
			return true
		}
	}
	return false
}

// IndexInert is the index of the first character of b that InertJSON escapes, or -1.
// It looks for each possible first byte with bytes.IndexByte, which passes over clean
// data many bytes at a time (eight passes cost less than one byte-by-byte loop), and
// checks only the candidates it finds.
func IndexInert(b []byte) int {
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
