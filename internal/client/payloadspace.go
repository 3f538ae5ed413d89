package client

import (
	"bytes"
	"encoding/json"
)

// A produced JSON document comes back verbatim, the whitespace around it included
// (API.md: "byte for byte, whitespace kept"), but encoding/json leaves that whitespace
// out of a json.RawMessage. These put it back from the body the messages were decoded
// from, so that `sub -o json | produce --json` and -o raw give the produced bytes.

// UnmarshalMessage decodes one message object (a single consume's answer, a line of
// `sub -o json`) into m, keeping the whitespace around a JSON payload.
func UnmarshalMessage(data []byte, m *Message) error {
	if err := json.Unmarshal(data, m); err != nil {
		return err
	}
	ms := []Message{*m}
	keepPayloadSpace(data, ms, false)
	*m = ms[0]
	return nil
}

// keepPayloadSpace gives each of msgs (decoded from body: its message objects in
// order, inside {"messages":[...]} when batch) its payload as the raw bytes between the
// colon and the next field, whitespace included. Bodies without whitespace next to a
// field (what a node writes, unless a payload has some) are not scanned.
func keepPayloadSpace(body []byte, msgs []Message, batch bool) {
	if len(msgs) == 0 || !mayHaveSpacedPayload(body) {
		return
	}
	for i, span := range payloadSpans(body, batch) {
		if i >= len(msgs) {
			break
		}
		if span[0] < 0 {
			continue
		}
		raw := body[span[0]:span[1]]
		m := &msgs[i]
		// Only whitespace may differ from what the decoder kept; anything else means
		// the scan and the decoder disagree, and the decoder is believed.
		if len(raw) != len(m.Payload) && bytes.Equal(bytes.Trim(raw, jsonSpace), m.Payload) {
			m.Payload = bytes.Clone(raw)
		}
	}
}

const jsonSpace = " \t\r\n"

// mayHaveSpacedPayload is a quick look for whitespace right after a "payload": or
// right before a , or }, without which no payload has whitespace around it.
func mayHaveSpacedPayload(b []byte) bool {
	for _, ws := range []byte(jsonSpace) {
		if bytes.Contains(b, []byte{ws, ','}) || bytes.Contains(b, []byte{ws, '}'}) ||
			bytes.Contains(b, []byte{'"', 'p', 'a', 'y', 'l', 'o', 'a', 'd', '"', ':', ws}) {
			return true
		}
	}
	return false
}

// payloadSpans finds, for each message object of body in order, the span of its
// "payload" value from just after the colon to just before the , or } that ends it
// ({-1, -1} when it has none, or when the object is laid out with whitespace, which is
// then layout). Message objects are the top-level object, or with batch the objects of
// the top-level "messages" array.
func payloadSpans(b []byte, batch bool) [][2]int {
	msgDepth := 1
	if batch {
		msgDepth = 3
	}
	var (
		spans      [][2]int
		depth      int
		messagesAt = -1 // with batch: the depth-2 array is "messages"
		inMessages bool
		compact    bool // the current message object is written without layout
		valStart   = -1
	)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return spans
			}
			k := end
			for k < len(b) && bytes.IndexByte([]byte(jsonSpace), b[k]) >= 0 {
				k++
			}
			if k < len(b) && b[k] == ':' {
				key := b[i:end]
				if i > 0 && b[i-1] != ',' && b[i-1] != '{' {
					compact = false
				}
				switch {
				case depth == msgDepth && (!batch || inMessages) && string(key) == `"payload"` && compact:
					valStart = k + 1
				case batch && depth == 1 && string(key) == `"messages"`:
					messagesAt = k
				}
				i = k
				continue
			}
			i = end - 1
		case '{', '[':
			depth++
			if batch && depth == 2 && c == '[' && messagesAt >= 0 {
				inMessages = true
			}
			if depth == msgDepth && c == '{' && (!batch || inMessages) {
				spans = append(spans, [2]int{-1, -1})
				// A node writes a message compactly, so whitespace next to its payload is
				// the payload's; in an object laid out for reading (a guide's example, a
				// proxy that reformats) it is layout.
				compact = i+1 < len(b) && b[i+1] == '"'
			}
		case '}', ']', ',':
			if valStart >= 0 && depth == msgDepth && c != ']' {
				spans[len(spans)-1] = [2]int{valStart, i}
				valStart = -1
			}
			if c != ',' {
				depth--
				if batch && depth == 1 && c == ']' && inMessages {
					inMessages, messagesAt = false, -1
				}
			}
		}
	}
	return spans
}

// stringEnd is the index just past the closing quote of the JSON string starting at
// b[i], or -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
