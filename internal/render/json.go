package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

var errInvalidPayloadJSON = errors.New("payload is not valid JSON")

// appendJSON appends m as one JSON object and a newline: the fields in the API's order,
// optional ones only when set, the payload's raw JSON bytes verbatim.
//
// It is written by hand rather than with json.Marshal because Marshal compacts a
// json.RawMessage, which would change the bytes a JSON payload was produced with
// (whitespace included), and `sub -o json | produce --json` must copy them exactly.
//
// These cases are re-encoded, so that a record stays one line, inert on a terminal,
// and still round-trips:
//   - A payload whose raw JSON holds a newline or carriage return (a pretty-printed
//     document) is written as "payload":"<base64 of the exact produced bytes>" with
//     "payload_encoding":"base64". Compacting it would change the produced bytes, and a
//     raw newline would split the record; base64 is the API's own way of carrying bytes
//     exactly, and `produce --json` already decodes it.
//   - A payload holding raw a character textenc.InertJSON escapes (DEL, C1 controls, bidi
//     controls, zero-width and other invisible format characters such as the tag
//     characters, U+2028/U+2029: JSON allows them in a string, and a terminal acts on
//     them or hides text with them): a text payload as the same string with them
//     escaped, any other JSON value base64 as above.
//   - A key that is not valid UTF-8 without key_encoding (an older node's escapes, read
//     leniently by the client) is written base64 with "key_encoding":"base64", because a
//     JSON string cannot carry those bytes unchanged.
func appendJSON(dst []byte, m *client.Message) ([]byte, error) {
	payload, asBase64, err := jsonPayload(m)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"topic":`...)
	dst = textenc.AppendJSONString(dst, m.Topic, textenc.Inert)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(m.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, m.Offset, 10)
	if m.Key != nil {
		dst = appendKeyFields(dst, m)
	}
	dst = append(dst, `,"payload":`...)
	if asBase64 {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, payload)
		dst = append(dst, `","payload_encoding":"base64"`...)
	} else {
		dst = append(dst, payload...)
		if m.PayloadEncoding != "" {
			dst = append(dst, `,"payload_encoding":`...)
			dst = textenc.AppendJSONString(dst, m.PayloadEncoding, textenc.Inert)
		}
	}
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, m.Timestamp, 10)
	if m.ReceiptHandle != "" {
		dst = append(dst, `,"receipt_handle":`...)
		dst = textenc.AppendJSONString(dst, m.ReceiptHandle, textenc.Inert)
	}
	return append(dst, "}\n"...), nil
}

// jsonPayload is how m's payload goes into its record: the JSON to write as it is (a
// string maybe with its inert characters escaped), or, asBase64, the bytes to write
// base64; an error for a payload that is not the JSON the node promised.
func jsonPayload(m *client.Message) (payload []byte, asBase64 bool, err error) {
	raw := []byte(m.Payload)
	if len(trimJSONSpace(raw)) == 0 {
		return nil, false, client.ErrNoPayload
	}
	// asBase64: a payload whose raw JSON spans lines (or, below, holds a C1 control)
	// is written base64, exact and inert.
	asBase64 = bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0
	if m.PayloadEncoding != "" {
		// An encoded payload is a JSON string, which cannot span lines; only the
		// whitespace around it can, and that carries no bytes of the message. Any other
		// value is a broken answer, which would be written across lines.
		raw, asBase64 = trimJSONSpace(raw), false
		if raw[0] != '"' {
			return nil, false, fmt.Errorf("payload_encoding %q on a payload that is not a JSON string", m.PayloadEncoding)
		}
	}
	if !json.Valid(raw) {
		// Checked because a line that is not JSON would break every reader downstream,
		// and base64 of bytes that are not JSON would claim they were produced; the
		// node's payload is valid JSON, so this costs a scan and never fires.
		return nil, false, errInvalidPayloadJSON
	}
	// JSON lets a string hold DEL, C1 controls, bidi controls and the other invisible
	// format characters raw; a terminal may act on the first ones (U+009B is CSI), and
	// the others reorder or hide what is read (U+202E). A text payload is written as the
	// same string with them escaped; any other JSON value keeps its exact bytes by going
	// base64, as a multi-line one does.
	// The string is escaped where it stands, not decoded and encoded again: an older
	// node can send bytes that are not UTF-8 inside it, and a new encoding would turn
	// them into U+FFFD where the verbatim string keeps them.
	// An encoded payload is a string too: its value is unchanged by the escapes.
	if !asBase64 && textenc.IndexInert(raw) >= 0 {
		if v := trimJSONSpace(raw); v[0] == '"' {
			raw = textenc.InertJSON(v)
		} else {
			asBase64 = true
		}
	}
	return raw, asBase64, nil
}

// appendKeyFields appends m's key, base64 when it is not UTF-8 text a JSON string can
// carry unchanged, and its key_encoding.
func appendKeyFields(dst []byte, m *client.Message) []byte {
	dst = append(dst, `,"key":`...)
	if m.KeyEncoding == "" && !utf8.ValidString(*m.Key) {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, []byte(*m.Key))
		return append(dst, `","key_encoding":"base64"`...)
	}
	dst = textenc.AppendJSONString(dst, *m.Key, textenc.Inert)
	if m.KeyEncoding != "" {
		dst = append(dst, `,"key_encoding":`...)
		dst = textenc.AppendJSONString(dst, m.KeyEncoding, textenc.Inert)
	}
	return dst
}

// trimJSONSpace drops the whitespace JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// JSONRecord is m as `-o json` writes it, without the newline: what a dead-letter
// envelope takes its payload and key from, so both show a message the same way.
func JSONRecord(m *client.Message) ([]byte, error) {
	b, err := appendJSON(nil, m)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}
