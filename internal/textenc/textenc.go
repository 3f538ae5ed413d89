// Package textenc owns the two ways narad writes text it did not write itself: as a
// JSON string (a request body, a node's answer, a -o json line) and escaped for a
// terminal (a payload, a key or an error shown to a person). It imports nothing of
// narad, so the client side and the dev broker can both use it without an arrow running
// between them.
package textenc

import "unicode/utf16"

const hexDigits = "0123456789abcdef"

// byteseq lets one implementation serve both the strings of a decoded message (keys,
// topics) and the byte slices of payloads without converting, and so without allocating.
type byteseq interface{ ~string | ~[]byte }

// IsC1 reports whether r is a C1 control: a terminal in UTF-8 mode may act on U+009B as
// CSI just as on ESC [.
func IsC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// IsInvisible reports whether r is a format character a terminal draws as nothing
// (width 0) while it changes or hides the text around it: the bidi controls (U+061C,
// U+200E/F, U+202A..U+202E, U+2066..U+2069), the zero-width characters (U+200B..U+200D,
// U+2060, U+FEFF), and the rest of Unicode's format characters (Cf) that are never
// drawn: U+180E, U+2061..U+2064, U+206A..U+206F, U+FFF9..U+FFFB, U+13430..U+1343F,
// U+1BCA0..U+1BCA3, U+1D173..U+1D17A, and the tag characters U+E0000..U+E007F, which
// spell out ASCII no one sees ("ASCII smuggling"; the whole block, unassigned ones
// included). Shown raw, they let a payload reorder or hide what the operator reads
// ("Trojan Source"). The Cf characters a terminal does draw, with a width of 1, are
// text: the soft hyphen U+00AD and the prepended marks U+0600..U+0605, U+06DD, U+070F,
// U+0890/1, U+08E2, U+110BD, U+110CD.
func IsInvisible(r rune) bool {
	switch {
	case r < 0x061c:
		return false
	case r <= 0xffff:
		return r == 0x061c || r == 0x180e || r >= 0x200b && r <= 0x200f || r >= 0x202a && r <= 0x202e ||
			r >= 0x2060 && r <= 0x2064 || r >= 0x2066 && r <= 0x206f || r == 0xfeff || r >= 0xfff9 && r <= 0xfffb
	}
	return r >= 0x13430 && r <= 0x1343f || r >= 0x1bca0 && r <= 0x1bca3 || r >= 0x1d173 && r <= 0x1d17a ||
		r >= 0xe0000 && r <= 0xe007f
}

// mustEscape reports whether the non-ASCII rune r must be written as an escape.
func mustEscape(r rune) bool { return IsC1(r) || IsInvisible(r) }

// appendUEscape appends r as a JSON \u escape: a pair of them, UTF-16 surrogates, for
// a character beyond the BMP (a tag character), as JSON spells it.
func appendUEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		return appendUEscape(appendUEscape(dst, hi), lo)
	}
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendTerminalEscape appends r as Escape writes it: \u and four hex digits, or
// beyond the BMP \U and eight (\U000e0041), one escape a character as Go and Python
// write them, where a surrogate pair would read as two characters.
func appendTerminalEscape(dst []byte, r rune) []byte {
	if r <= 0xffff {
		return appendUEscape(dst, r)
	}
	dst = append(dst, '\\', 'U')
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[r>>shift&0xf])
	}
	return dst
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
