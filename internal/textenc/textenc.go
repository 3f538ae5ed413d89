// Package textenc owns the two ways narad writes text it did not write itself: as a
// JSON string (a request body, a node's answer, a -o json line) and escaped for a
// terminal (a payload, a key or an error shown to a person). It imports nothing of
// narad, so the client side and the dev broker can both use it without an arrow running
// between them.
package textenc

const hexDigits = "0123456789abcdef"

// byteseq lets one implementation serve both the strings of a decoded message (keys,
// topics) and the byte slices of payloads without converting, and so without allocating.
type byteseq interface{ ~string | ~[]byte }

// IsC1 reports whether r is a C1 control: a terminal in UTF-8 mode may act on U+009B as
// CSI just as on ESC [.
func IsC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// IsInvisible reports whether r is a bidi control (U+061C, U+200E/F, U+202A..U+202E,
// U+2066..U+2069) or a zero-width character (U+200B..U+200D, U+2060, U+FEFF): shown
// raw, they let a payload reorder or hide what the operator reads ("Trojan Source").
func IsInvisible(r rune) bool {
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
func mustEscape(r rune) bool { return IsC1(r) || IsInvisible(r) }

// appendUEscape appends r (in the BMP) as a \u escape.
func appendUEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendControl appends the escape of the ASCII control or DEL c: \n, \r and \t short,
// any other as \u00NN in JSON and as \xNN for a terminal (see Escape).
func appendControl(dst []byte, c byte, json bool) []byte {
	switch c {
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if json {
		return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}
