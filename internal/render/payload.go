package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

// The message decodes itself (client.Message.AppendPayload, AppendKey): this file only
// formats what it gives.

// appendUnknown appends `(unknown payload_encoding "zstd")` when err is an encoding this
// client does not know: a person is shown that the message exists and why it cannot be
// shown, never a guess at its bytes. ok is false for any other error.
func appendUnknown(dst []byte, err error) (out []byte, ok bool) {
	var ue *client.UnknownEncodingError
	if !errors.As(err, &ue) {
		return dst, false
	}
	dst = append(dst, "(unknown "...)
	dst = append(dst, ue.Field...)
	dst = append(dst, ' ')
	// strconv.Quote escapes everything that is not printable, so the node's value
	// cannot drive the terminal.
	dst = strconv.AppendQuoteToASCII(dst, ue.Value)
	return append(dst, ')'), true
}

// appendKeyText appends the key as a person should see it, escaped. ok is false when
// m has no key. With showUnknown, an unknown key_encoding is shown as such (the text
// line); without, it is an error (a template, which promises the content).
func appendKeyText(dst []byte, m *client.Message, showUnknown bool) (out []byte, ok bool, err error) {
	start := len(dst)
	out, ok, err = m.AppendKey(dst)
	if err != nil {
		if out, shown := appendUnknown(dst, err); shown && showUnknown {
			return out, true, nil
		}
		return dst, ok, err
	}
	if !ok {
		return dst, false, nil
	}
	return escapeTail(out, start), true, nil
}

// binaryHead is how many bytes of a binary payload the text line shows in hex: enough to
// recognise a file signature (PNG, gzip, protobuf tags) without flooding the line.
const binaryHead = 16

// appendPayloadText appends the payload as a person should see it, escaped for a
// terminal. A JSON value is shown verbatim, compacted only when it spans lines so the
// record stays one line; a JSON string as its text. A binary payload is summarised as
// `(binary, N bytes) 89504e47…` when summary is set, else shown as its escaped bytes.
// With summary (the text line), an unknown payload_encoding is shown as such; without
// (a template, which asks for the content), it is an error.
func appendPayloadText(dst []byte, m *client.Message, summary bool) ([]byte, error) {
	kind, err := m.PayloadKind()
	if err != nil {
		if out, shown := appendUnknown(dst, err); shown && summary {
			return out, nil
		}
		return dst, err
	}
	if kind == client.PayloadJSON {
		// The produced bytes are the payload as it came: format it from there.
		v := []byte(m.Payload)
		if bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
			start := len(dst)
			buf := bytes.NewBuffer(dst) // Compact appends after what dst holds
			if json.Compact(buf, v) == nil {
				return escapeTail(buf.Bytes(), start), nil
			}
			// Not valid JSON after all: show it escaped rather than refuse it.
		}
		return textenc.AppendEscape(dst, v), nil
	}
	// Decoded into dst's own spare room, and formatted from there.
	start := len(dst)
	out, _, err := m.AppendPayload(dst)
	if err != nil {
		return dst, err
	}
	if kind == client.PayloadBinary && summary {
		var head [binaryHead]byte
		n := copy(head[:], out[start:])
		return appendSummary(out[:start], head[:n], len(out)-start), nil
	}
	return escapeTail(out, start), nil
}

func appendSummary(dst, head []byte, total int) []byte {
	dst = append(dst, "(binary, "...)
	dst = strconv.AppendInt(dst, int64(total), 10)
	dst = append(dst, " bytes)"...)
	if len(head) > 0 {
		dst = append(dst, ' ')
		for _, c := range head {
			dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	if total > len(head) {
		dst = append(dst, "…"...)
	}
	return dst
}
