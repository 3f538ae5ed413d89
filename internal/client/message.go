package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// PayloadBytes is the message as it was produced. The node sends bytes that are not
// text as base64 (PayloadEncoding "base64"), text as a JSON string, and a produced
// JSON value verbatim; so a JSON string payload yields its text (a produced `"hi"`
// and a produced `hi` both come back as hi, as the API says a client prints them) and
// any other JSON value yields its bytes exactly as they arrived.
func (m *Message) PayloadBytes() ([]byte, error) {
	p := bytes.TrimSpace(m.Payload)
	if m.PayloadEncoding == "base64" {
		b, err := decodeBase64String(p)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		return b, nil
	}
	if len(p) > 0 && p[0] == '"' {
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		return []byte(s), nil
	}
	return []byte(m.Payload), nil
}

// HasKey reports whether the message carries a key; an empty key is still a key.
func (m *Message) HasKey() bool { return m.Key != nil }

// KeyBytes is the key's bytes, base64-decoded when KeyEncoding is "base64"; ok is
// false when the message has no key.
func (m *Message) KeyBytes() (key []byte, ok bool, err error) {
	if m.Key == nil {
		return nil, false, nil
	}
	if m.KeyEncoding == "base64" {
		b, err := decodeBase64(*m.Key)
		if err != nil {
			return nil, true, fmt.Errorf("key: %w", err)
		}
		return b, true, nil
	}
	return []byte(*m.Key), true, nil
}

func decodeBase64String(raw []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("base64 value is not a JSON string: %w", err)
	}
	return decodeBase64(s)
}

// decodeBase64 takes standard base64, and the unpadded form too: a node (or a
// proxy) leaving the padding off should not make a message unreadable.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return b2, nil
		}
		return nil, err
	}
	return b, nil
}
