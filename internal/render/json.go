package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
)

var errInvalidPayloadJSON = errors.New("payload is not valid JSON")

// appendJSON appends m as one JSON object and a newline: the fields in the API's order,
// optional ones only when set, the payload's raw JSON bytes verbatim.
//
// It is written by hand rather than with json.Marshal because Marshal compacts a
// json.RawMessage, which would change the bytes a JSON payload was produced with
// (whitespace included), and `sub -o json | produce --json` must copy them exactly.
//
// Two cases are re-encoded, both so that a record stays one line and still round-trips:
//   - A payload whose raw JSON holds a newline or carriage return (a pretty-printed
//     document) is written as "payload":"<base64 of the exact produced bytes>" with
//     "payload_encoding":"base64". Compacting it would change the produced bytes, and a
//     raw newline would split the record; base64 is the API's own way of carrying bytes
//     exactly, and `produce --json` already decodes it.
//   - A key that is not valid UTF-8 without key_encoding (an older node's escapes, read
//     leniently by the client) is written base64 with "key_encoding":"base64", because a
//     JSON string cannot carry those bytes unchanged.
func appendJSON(dst []byte, m *client.Message) ([]byte, error) {
	raw := []byte(m.Payload)
	if len(trimJSONSpace(raw)) == 0 {
		return dst, errNoPayload
	}
	multiline := bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0
	if multiline && m.PayloadEncoding != "" {
		// An encoded payload is a JSON string, which cannot span lines; only the
		// whitespace around it can, and that carries no bytes of the message.
		raw, multiline = trimJSONSpace(raw), false
	}
	if !multiline && !json.Valid(raw) {
		// Checked because a line that is not JSON would break every reader downstream;
		// the node's payload is valid JSON, so this costs a scan and never fires.
		return dst, errInvalidPayloadJSON
	}

	dst = append(dst, `{"topic":`...)
	dst = appendJSONString(dst, m.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(m.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, m.Offset, 10)
	if m.Key != nil {
		dst = append(dst, `,"key":`...)
		switch {
		case m.KeyEncoding == "" && !utf8.ValidString(*m.Key):
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, []byte(*m.Key))
			dst = append(dst, `","key_encoding":"base64"`...)
		default:
			dst = appendJSONString(dst, *m.Key)
			if m.KeyEncoding != "" {
				dst = append(dst, `,"key_encoding":`...)
				dst = appendJSONString(dst, m.KeyEncoding)
			}
		}
	}
	dst = append(dst, `,"payload":`...)
	if multiline {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, raw)
		dst = append(dst, `","payload_encoding":"base64"`...)
	} else {
		dst = append(dst, raw...)
		if m.PayloadEncoding != "" {
			dst = append(dst, `,"payload_encoding":`...)
			dst = appendJSONString(dst, m.PayloadEncoding)
		}
	}
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, m.Timestamp, 10)
	if m.ReceiptHandle != "" {
		dst = append(dst, `,"receipt_handle":`...)
		dst = appendJSONString(dst, m.ReceiptHandle)
	}
	return append(dst, "}\n"...), nil
}
