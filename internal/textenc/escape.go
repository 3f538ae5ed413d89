package textenc

import "unicode/utf8"

// Escape returns s with every character that could drive a terminal written as a visible
// escape instead: C0 controls and DEL as \xNN (\n, \r and \t as themselves, so a multi-line
// text stays one readable line), C1 controls as \u0080..\u009f (written as code points
// because in UTF-8 they are two bytes, and \x9b would wrongly suggest one raw byte), bidi
// controls, zero-width and the other invisible format characters as \u202e and the like
// (they reorder or hide text; see IsInvisible), \U000e0041 beyond the BMP, and bytes
// that are not valid UTF-8 as \xNN. Valid printable text, non-ASCII included, is
// returned unchanged, and s itself is returned when nothing needed escaping.
//
// Backslashes are not doubled: this is for people reading a terminal, where a JSON
// payload's own escapes ("C:\\dir") must read as they were produced. Exact bytes are what
// the json and raw formats are for.
func Escape(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	return string(AppendEscape(make([]byte, 0, len(s)+16), s))
}

// decodeRune decodes the rune at s[i:]. Copying at most four bytes to the stack lets
// utf8.DecodeRune do the validation for strings and slices alike.
func decodeRune[T byteseq](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:])
	return utf8.DecodeRune(buf[:n])
}

// NeedsEscape reports whether AppendEscape would change s; it lets the common clean
// case skip all copying.
func NeedsEscape[T byteseq](s T) bool {
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

// AppendEscape appends s to dst with the escapes described at Escape. Clean runs are
// copied in one append each.
func AppendEscape[T byteseq](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f {
				i++
				continue
			}
			dst = appendControl(append(dst, s[start:i]...), c, false)
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
			dst = appendTerminalEscape(dst, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}
