package render

import (
	"unicode/utf8"

	"github.com/narad/narad/internal/textenc"
)

const hexDigits = "0123456789abcdef"

// Escape is textenc.Escape, kept here because every command prints through render and
// names it so.
func Escape(s string) string { return textenc.Escape(s) }

// escapeTail escapes dst[start:] in place. Data that first has to be decoded (a base64
// key, an unquoted JSON string, a compacted document) is decoded into dst's own spare
// room and escaped from there, so a caller that reuses its buffer pays no allocation.
func escapeTail(dst []byte, start int) []byte {
	if !textenc.NeedsEscape(dst[start:]) {
		return dst
	}
	mid := len(dst)
	// If append reallocates, dst[start:mid] still reads the old array, which is
	// untouched; if it does not, the writes land at mid and beyond. Either way the
	// source is never overwritten while it is read.
	dst = textenc.AppendEscape(dst, dst[start:mid])
	n := copy(dst[start:], dst[mid:])
	return dst[:start+n]
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
	return s[:end] + "… (" + textenc.GroupDigits(int64(len(s))) + " bytes, " + textenc.GroupDigits(int64(len(s)-end)) + " not shown)"
}
