package client

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The one decoder of a message's payload and key. Everything that needs the produced
// bytes (printing, exec mode's stdin, produce --json) asks the message, so two parts of
// narad can never disagree about what a message holds.

// EncodingBase64 is the only payload_encoding / key_encoding the API defines.
const EncodingBase64 = "base64"

// PayloadKind is what the node made of the produced bytes (API.md, "Payload").
type PayloadKind int

const (
	// PayloadJSON is a produced JSON value other than a string, sent back byte for byte.
	PayloadJSON PayloadKind = iota
	// PayloadText is a JSON string, produced as one ("hi") or made from text (hi); both
	// stand for the text inside the quotes.
	PayloadText
	// PayloadBinary is bytes that are not text, sent as a base64 JSON string.
	PayloadBinary
)

// UnknownEncodingError is a payload_encoding or key_encoding this client does not know.
// Guessing at it would hand out wrong bytes, so the message cannot be decoded; a
// person can still be shown that it exists.
type UnknownEncodingError struct {
	Field string // "payload_encoding" or "key_encoding"
	Value string
}

func (e *UnknownEncodingError) Error() string {
	return fmt.Sprintf("unknown %s %q", e.Field, e.Value)
}

var (
	// ErrNoPayload is a message without a payload: the API never sends one (a produce
	// needs at least one byte), so it is reported instead of being shown as something else.
	ErrNoPayload  = errors.New("message has no payload")
	errBadString  = errors.New("payload is not a valid JSON string")
	errNotAString = errors.New("base64 payload is not a JSON string")
)

// PayloadKind tells how the node sent the payload. An unknown payload_encoding is an
// *UnknownEncodingError.
func (m *Message) PayloadKind() (PayloadKind, error) {
	kind, _, err := m.classify()
	return kind, err
}

// classify returns the payload's kind and the bytes to decode it from: for PayloadJSON
// the raw payload untouched (its whitespace is part of what was produced), for the
// others the JSON string with the whitespace around it removed.
func (m *Message) classify() (PayloadKind, []byte, error) {
	raw := []byte(m.Payload)
	v := bytes.Trim(raw, " \t\r\n")
	if len(v) == 0 {
		return 0, nil, ErrNoPayload
	}
	switch m.PayloadEncoding {
	case "":
	case EncodingBase64:
		if v[0] != '"' {
			return 0, nil, errNotAString
		}
		return PayloadBinary, v, nil
	default:
		return 0, nil, &UnknownEncodingError{Field: "payload_encoding", Value: m.PayloadEncoding}
	}
	if v[0] == '"' {
		return PayloadText, v, nil
	}
	return PayloadJSON, raw, nil
}

// PayloadBytes is the message as it was produced: a base64 payload decoded (standard
// padded base64 only), a JSON string's text (a produced `"hi"` and a produced `hi` both
// come back as hi, as the API says a client prints them), any other JSON value its
// bytes exactly as they arrived. An unknown payload_encoding is an
// *UnknownEncodingError. The result is the caller's own.
func (m *Message) PayloadBytes() ([]byte, error) {
	b, _, err := m.AppendPayload(nil)
	return b, err
}

// AppendPayload appends what PayloadBytes returns to dst and says which kind of payload
// it was, decoding straight into dst so a caller that reuses its buffer allocates
// nothing. On error dst is returned unchanged.
func (m *Message) AppendPayload(dst []byte) ([]byte, PayloadKind, error) {
	kind, v, err := m.classify()
	if err != nil {
		return dst, kind, err
	}
	switch kind {
	case PayloadText:
		dst, err = appendJSONText(dst, v)
	case PayloadBinary:
		dst, err = appendBase64String(dst, v)
	default:
		dst = append(dst, v...)
	}
	return dst, kind, err
}

// appendBase64String appends the bytes the base64 JSON string q stands for.
func appendBase64String(dst, q []byte) ([]byte, error) {
	b64 := q
	if s, ok := plainJSONString(q); ok {
		b64 = s // the usual case: no escapes, nothing to copy
	} else {
		t, err := appendJSONText(nil, q)
		if err != nil {
			return dst, err
		}
		b64 = t
	}
	start := len(dst)
	out, err := base64.StdEncoding.AppendDecode(dst, b64)
	if err != nil {
		return dst[:start], fmt.Errorf("payload is not valid base64: %w", err)
	}
	return out, nil
}

// HasKey reports whether the message carries a key; an empty key is still a key.
func (m *Message) HasKey() bool { return m.Key != nil }

// KeyBytes is the key's bytes, decoded when KeyEncoding is "base64" (standard padded
// base64 only); ok is false when the message has no key. An unknown key_encoding is
// an *UnknownEncodingError.
func (m *Message) KeyBytes() (key []byte, ok bool, err error) {
	return m.AppendKey(nil)
}

// AppendKey appends what KeyBytes returns to dst. On error dst is returned unchanged.
func (m *Message) AppendKey(dst []byte) (out []byte, ok bool, err error) {
	if m.Key == nil {
		return dst, false, nil
	}
	switch m.KeyEncoding {
	case "":
		return append(dst, *m.Key...), true, nil
	case EncodingBase64:
		start := len(dst)
		out, err := base64.StdEncoding.AppendDecode(dst, []byte(*m.Key))
		if err != nil {
			return dst[:start], true, fmt.Errorf("key is not valid base64: %w", err)
		}
		return out, true, nil
	}
	return dst, true, &UnknownEncodingError{Field: "key_encoding", Value: m.KeyEncoding}
}

// ForwardKey is the key to produce m with when passing it on to another topic (a dead
// letter): decoded, else as the node sent it, since a key that cannot be decoded is
// still better kept than dropped; nil when m has no key.
func (m *Message) ForwardKey() *string {
	key, ok, err := m.KeyBytes()
	if !ok {
		return nil
	}
	k := string(key)
	if err != nil {
		k = *m.Key
	}
	return &k
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
// the semantics of encoding/json for escapes (a lone or broken surrogate escape becomes
// U+FFFD). Raw bytes that are not valid UTF-8 and raw control bytes are kept as they
// are (encoding/json would replace the first): the produced bytes, exactly. On error
// dst is returned unchanged.
func appendJSONText(dst, q []byte) ([]byte, error) {
	if s, ok := plainJSONString(q); ok {
		return append(dst, s...), nil
	}
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

// LoneSurrogate finds in the JSON text q a \u escape of a UTF-16 surrogate that is not
// half of a pair (`"\ud800"`), and returns that escape, or "" when there is none. No
// UTF-8 text can hold such a character: every decoder, this package's included, turns
// it into U+FFFD, so text produced from it would silently not be what was written.
func LoneSurrogate(q []byte) string {
	for i := 0; i+1 < len(q); i++ {
		if q[i] != '\\' {
			continue
		}
		if q[i+1] != 'u' {
			i++ // an escaped character, a backslash included: not the start of one
			continue
		}
		r := getu4(q[i:])
		if r < 0 || !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 { // a high half: a low one must follow
			if r2 := getu4(q[i+6:]); r2 >= 0xdc00 && r2 <= 0xdfff {
				i += 11
				continue
			}
		}
		return string(q[i : i+6])
	}
	return ""
}

// Check reports why m cannot be decoded (no payload, an unknown encoding, bad base64
// in its payload or key), or nil when PayloadBytes and KeyBytes will succeed. It
// decodes into scratch, returned for reuse, so a caller that checks every message
// allocates nothing; a JSON payload or a plain string is not copied at all.
func (m *Message) Check(scratch []byte) ([]byte, error) {
	kind, v, err := m.classify()
	if err != nil {
		return scratch, err
	}
	switch kind {
	case PayloadText:
		if _, ok := plainJSONString(v); !ok {
			scratch, err = appendJSONText(scratch[:0], v)
		}
	case PayloadBinary:
		scratch, err = appendBase64String(scratch[:0], v)
	}
	if err != nil {
		return scratch, err
	}
	if m.Key != nil && m.KeyEncoding != "" {
		scratch, _, err = m.AppendKey(scratch[:0])
	}
	return scratch, err
}
