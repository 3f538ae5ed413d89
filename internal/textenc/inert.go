package textenc

import "bytes"

// InertJSON returns the JSON document j with every character a terminal may act on or
// hide written as a \u escape: DEL, C1 controls, bidi controls, zero-width characters
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

// IndexInert is the index of the first character of b that InertJSON escapes, or -1.
// It looks for each possible first byte with bytes.IndexByte, which passes over clean
// data many bytes at a time (five passes cost less than one byte-by-byte loop), and
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
