package render

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
)

// The encodings the API marks with payload_encoding / key_encoding.
const encodingBase64 = "base64"

// errNoPayload is a message without a payload field: the API never sends one (a produce
// needs at least one byte), so it is reported instead of being shown as something else.
var errNoPayload = errors.New("message has no payload")

var errBadString = errors.New("payload is not a valid JSON string")

// payloadKind is what the node made of the produced bytes (API.md, "Payload").
type payloadKind int

const (
	// kindJSON: a produced JSON value other than a string, sent back byte for byte.
	kindJSON payloadKind = iota
	// kindString: a JSON string, either produced as one ("hi") or made from text (hi);
	// both stand for the text inside the quotes.
	kindString
	// kindBinary: bytes that are not text, sent as a base64 JSON string.
	kindBinary
)

// classify tells the kind of m's payload and returns the bytes to work from: for
// kindJSON the raw payload untouched, for the others the JSON string with any
// surrounding whitespace removed.
func classify(m *client.Message) (payloadKind, []byte, error) {
	raw := []byte(m.Payload)
	v := trimJSONSpace(raw)
	if len(v) == 0 {
		return 0, nil, errNoPayload
	}
	switch m.PayloadEncoding {
	case "":
	case encodingBase64:
		if v[0] != '"' {
			return 0, nil, fmt.Errorf("base64 payload is not a JSON string")
		}
		return kindBinary, v, nil
	default:
		// Guessing at an encoding this client does not know would print wrong bytes.
		return 0, nil, fmt.Errorf("unknown payload_encoding %q", m.PayloadEncoding)
	}
	if v[0] == '"' {
		return kindString, v, nil
	}
	return kindJSON, raw, nil
}

// DecodePayload returns the bytes that were produced: a base64 payload decoded, a JSON
// string's text (so a produced "hi" and a produced hi both give hi), any other JSON value
// as its raw bytes. The result may share memory with m.Payload; do not modify it.
func DecodePayload(m *client.Message) ([]byte, error) {
	kind, v, err := classify(m)
	if err != nil {
		return nil, err
	}
	switch kind {
	case kindString:
		return jsonText(v)
	case kindBinary:
		b64, err := jsonText(v)
		if err != nil {
			return nil, err
		}
		out, err := base64.StdEncoding.AppendDecode(nil, b64)
		if err != nil {
			return nil, fmt.Errorf("payload is not valid base64: %w", err)
		}
		return out, nil
	}
	return v, nil
}

// appendPayload appends what DecodePayload returns to dst, decoding base64 straight
// into dst so raw output of a binary message needs no buffer of its own. On error dst
// is returned unchanged.
func appendPayload(dst []byte, m *client.Message) ([]byte, error) {
	kind, v, err := classify(m)
	if err != nil {
		return dst, err
	}
	switch kind {
	case kindString:
		return appendJSONText(dst, v)
	case kindBinary:
		b64, err := jsonText(v)
		if err != nil {
			return dst, err
		}
		out, err := base64.StdEncoding.AppendDecode(dst, b64)
		if err != nil {
			return dst, fmt.Errorf("payload is not valid base64: %w", err)
		}
		return out, nil
	}
	return append(dst, v...), nil
}

// appendKey appends the produced key to dst: a base64 key (one that is not valid UTF-8,
// v3.1) decoded, otherwise the key string as it came. ok is false when m has no key.
func appendKey(dst []byte, m *client.Message) (out []byte, ok bool, err error) {
	if m.Key == nil {
		return dst, false, nil
	}
	switch m.KeyEncoding {
	case "":
		return append(dst, *m.Key...), true, nil
	case encodingBase64:
		out, err := base64.StdEncoding.AppendDecode(dst, []byte(*m.Key))
		if err != nil {
			return dst, false, fmt.Errorf("key is not valid base64: %w", err)
		}
		return out, true, nil
	default:
		return dst, false, fmt.Errorf("unknown key_encoding %q", m.KeyEncoding)
	}
}

// trimJSONSpace drops the whitespace JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// jsonText returns the text of the JSON string q (quotes included). The usual string has
// no escapes, and then the result shares q's memory and nothing is allocated.
func jsonText(q []byte) ([]byte, error) {
	if s, ok := plainJSONString(q); ok {
		return s, nil
	}
	return appendJSONText(nil, q)
}

// plainJSONString returns the inside of the JSON string q when it has no escapes, which
// is then its text as it is.
func plainJSONString(q []byte) ([]byte, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return nil, false
	}
	s := q[1 : len(q)-1]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '"') >= 0 {
		return nil, false
	}
	return s, true
}

// appendJSONText appends the text of the JSON string q (quotes included) to dst, with
// the semantics of encoding/json: a lone or broken surrogate escape becomes U+FFFD.
// Raw bytes that are not valid UTF-8 are kept as they are (encoding/json would replace
// them), and so are raw control bytes JSON does not allow, as the fast path of jsonText
// does: text output escapes them anyway, and raw output should not depend on which path
// ran. On error dst is returned unchanged.
func appendJSONText(dst, q []byte) ([]byte, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return dst, errBadString
	}
	orig := len(dst)
	s := q[1 : len(q)-1]
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			if c == '"' {
				return dst[:orig], errBadString
			}
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] != '"' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return dst[:orig], errBadString
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := getu4(s[i:])
			if r < 0 {
				return dst[:orig], errBadString
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A valid pair consumes the second escape; anything else leaves it to
				// be read on its own, as encoding/json does.
				if r2 := getu4(s[i:]); r2 >= 0 {
					if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
						r = dec
						i += 6
					} else {
						r = unicode.ReplacementChar
					}
				} else {
					r = unicode.ReplacementChar
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst[:orig], errBadString
		}
		i += 2
	}
	return dst, nil
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
