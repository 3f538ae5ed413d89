package devbroker

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/narad/narad/internal/textenc"
)

// payloadKind is decided once, at produce, because it depends only on the bytes.
type payloadKind uint8

const (
	payloadJSON   payloadKind = iota // valid JSON: emitted verbatim, whitespace kept
	payloadText                      // other valid UTF-8: emitted as a JSON string
	payloadBinary                    // anything else: base64 with payload_encoding
)

func classifyPayload(p []byte) payloadKind {
	switch {
	case !utf8.Valid(p):
		// json.Valid does not check the bytes inside strings: "\xff" in quotes would
		// pass, and emitted verbatim it would make the whole body invalid JSON.
		return payloadBinary
	case json.Valid(p):
		return payloadJSON
	default:
		return payloadText
	}
}

// encodedPayloadLen is the size the payload takes in a response, used to cut batches at
// about 4 MiB without encoding a message that will not go.
func encodedPayloadLen(p []byte, kind payloadKind) int {
	switch kind {
	case payloadJSON:
		return len(p)
	case payloadText:
		n := 2
		for _, c := range p {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
		}
		return n
	default:
		return base64.StdEncoding.EncodedLen(len(p)) + 2 + len(`,"payload_encoding":"base64"`)
	}
}

// msgOverhead bounds what a message object adds around its topic name, key and payload:
// the field names, the longest partition, offset, timestamp and receipt handle, the
// key_encoding flag and the comma between batch elements.
const msgOverhead = 256

// encodedMessageLen bounds the size of m's object in a v3.1 response, less its topic
// name (take adds it): batches are cut on it, so that a response never passes 8 MiB.
func encodedMessageLen(key string, hasKey bool, payload []byte, kind payloadKind) int {
	n := msgOverhead + encodedPayloadLen(payload, kind)
	if hasKey {
		k := payloadText
		if !utf8.ValidString(key) {
			k = payloadBinary
		}
		n += encodedPayloadLen([]byte(key), k)
	}
	return n
}

// appendMessage writes one message object exactly as a v3.1 node does: compact, with the
// fields in the order of the consuming guide (topic, partition, offset, key, key_encoding,
// payload, payload_encoding, timestamp, receipt_handle). It is written by hand because
// encoding/json would compact a verbatim JSON payload, and the payload must come back
// byte for byte. handle is nil for a replay, which carries no receipt_handle.
func appendMessage(dst []byte, topic string, part int, m *message, legacy bool, handle []byte) []byte {
	dst = append(dst, `{"topic":`...)
	dst = textenc.AppendJSONString(dst, topic, textenc.Wire)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(part), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, m.offset, 10)
	if m.hasKey {
		dst = append(dst, `,"key":`...)
		switch {
		case utf8.ValidString(m.key):
			dst = textenc.AppendJSONString(dst, m.key, textenc.Wire)
		case legacy:
			// What a v3.0 node did: a Go-quoted string, whose \x escapes are not valid
			// JSON. Clients must survive it, so the dev broker reproduces it.
			dst = strconv.AppendQuote(dst, m.key)
		default:
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, []byte(m.key))
			dst = append(dst, `","key_encoding":"base64"`...)
		}
	}
	dst = append(dst, `,"payload":`...)
	switch m.kind {
	case payloadJSON:
		dst = append(dst, m.payload...)
	case payloadText:
		dst = textenc.AppendJSONString(dst, string(m.payload), textenc.Wire)
	default:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, m.payload)
		dst = append(dst, `","payload_encoding":"base64"`...)
	}
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, m.timestamp, 10)
	if handle != nil {
		dst = append(dst, `,"receipt_handle":"`...)
		dst = append(dst, handle...)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}
