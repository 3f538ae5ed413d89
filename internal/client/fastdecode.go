package client

import (
	"strconv"
	"unicode/utf8"
)

// fastDecodeConsume reads a consume answer laid out the way a node writes it (compact,
// known fields once each, plain strings) in one pass and a handful of allocations,
// where encoding/json took two passes and five allocations a message: it was the
// largest part of a drain's CPU. ok is false for anything else (whitespace between
// tokens, an escape in a string field, an unknown or repeated field, null, a number
// that is not an integer): the caller then decodes the body the general way, so the
// answer is always what decodeConsume gives.
//
// Payloads point into body, which the messages keep alive; the string fields of a
// batch share one allocation.
func fastDecodeConsume(body []byte, expect int) (msgs []Message, batch, ok bool) {
	expect = max(expect, 1)
	d := fastDecoder{b: trimTrailingSpace(body), spans: make([]fieldSpans, 0, expect), arena: make([]byte, 0, 64*expect)}
	const head = `{"messages":[`
	if len(d.b) > len(head) && string(d.b[:len(head)]) == head {
		d.i = len(head)
		msgs = make([]Message, 0, expect)
		for {
			var m Message
			if !d.message(&m, len(msgs)) {
				return nil, false, false
			}
			msgs = append(msgs, m)
			if d.next(',') {
				continue
			}
			if !d.next(']') || !d.next('}') || d.i != len(d.b) {
				return nil, false, false
			}
			break
		}
		d.fill(msgs)
		return msgs, true, true
	}
	msgs = make([]Message, 1)
	if !d.message(&msgs[0], 0) || d.i != len(d.b) {
		return nil, false, false
	}
	d.fill(msgs)
	if m := &msgs[0]; m.Payload == nil && m.ReceiptHandle == "" && m.Topic == "" {
		return nil, false, false // neither shape: decodeConsume says why
	}
	return msgs, false, true
}

func trimTrailingSpace(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\r', '\n':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}

// span is a string field's text in the decoder's arena; set says the field was there.
type span struct {
	start, end int32
	set        bool
}

// fieldSpans are one message's string fields, filled in from the arena at the end.
type fieldSpans struct {
	topic, key, keyEncoding, payloadEncoding, handle span
}

type fastDecoder struct {
	b     []byte
	i     int
	arena []byte // the text of every string field, in one allocation at the end
	spans []fieldSpans
	topic span // the last topic, which the next message most likely repeats
}

// next consumes c if it is the next byte.
func (d *fastDecoder) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// Field bits, to refuse a field given twice.
const (
	fTopic = 1 << iota
	fPartition
	fOffset
	fKey
	fKeyEncoding
	fPayload
	fPayloadEncoding
	fTimestamp
	fHandle
)

// message reads one compact message object into m (its string fields into the arena,
// as message number k).
func (d *fastDecoder) message(m *Message, k int) bool {
	if !d.next('{') {
		return false
	}
	d.spans = append(d.spans, fieldSpans{})
	fs := &d.spans[k]
	seen := 0
	if d.next('}') {
		return true
	}
	for {
		name, ok := d.plainString()
		if !ok || !d.next(':') {
			return false
		}
		var bit int
		switch string(name) {
		case "topic":
			bit = fTopic
			s, ok := d.plainString()
			if !ok {
				return false
			}
			fs.topic = d.intern(s)
		case "partition":
			bit = fPartition
			n, ok := d.integer()
			if !ok || int64(int(n)) != n {
				return false
			}
			m.Partition = int(n)
		case "offset":
			bit = fOffset
			n, ok := d.integer()
			if !ok {
				return false
			}
			m.Offset = n
		case "timestamp":
			bit = fTimestamp
			n, ok := d.integer()
			if !ok {
				return false
			}
			m.Timestamp = n
		case "key":
			bit = fKey
			if !d.stringField(&fs.key) {
				return false
			}
		case "key_encoding":
			bit = fKeyEncoding
			if !d.stringField(&fs.keyEncoding) {
				return false
			}
		case "payload_encoding":
			bit = fPayloadEncoding
			if !d.stringField(&fs.payloadEncoding) {
				return false
			}
		case "receipt_handle":
			bit = fHandle
			if !d.stringField(&fs.handle) {
				return false
			}
		case "payload":
			bit = fPayload
			start := d.i
			// A null payload, and whitespace next to one (kept as the payload's own,
			// see keepPayloadSpace), are left to the general way.
			if d.i >= len(d.b) || d.b[d.i] == 'n' || isSpace(d.b[d.i]) {
				return false
			}
			end, ok := skipValue(d.b, d.i, 0)
			if !ok || isSpace(d.b[end-1]) {
				return false
			}
			d.i = end
			m.Payload = d.b[start:end:end]
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// stringField reads a plain string into the arena.
func (d *fastDecoder) stringField(sp *span) bool {
	s, ok := d.plainString()
	if !ok {
		return false
	}
	*sp = d.keep(s)
	return true
}

func (d *fastDecoder) keep(s []byte) span {
	start := len(d.arena)
	d.arena = append(d.arena, s...)
	return span{start: int32(start), end: int32(len(d.arena)), set: true}
}

// intern keeps a topic, once for a run of messages of the same topic.
func (d *fastDecoder) intern(s []byte) span {
	if d.topic.set && string(d.arena[d.topic.start:d.topic.end]) == string(s) {
		return d.topic
	}
	d.topic = d.keep(s)
	return d.topic
}

// plainString reads a string with no escape in it, whose text is valid UTF-8: what
// encoding/json would give unchanged. It returns the text between the quotes.
func (d *fastDecoder) plainString() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false // encoding/json would replace the bad bytes
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return nil, false
}

// integer reads a JSON number that is an integer within int64, as encoding/json
// takes one into an integer field.
func (d *fastDecoder) integer() (int64, bool) {
	start := d.i
	d.next('-')
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return n, err == nil
}

// fill gives the messages their string fields, from one string of the arena.
func (d *fastDecoder) fill(msgs []Message) {
	text := string(d.arena)
	var keys []string
	for i := range msgs {
		fs, m := &d.spans[i], &msgs[i]
		get := func(sp span) string { return text[sp.start:sp.end] }
		if fs.topic.set {
			m.Topic = get(fs.topic)
		}
		if fs.key.set {
			if keys == nil {
				keys = make([]string, 0, len(msgs)-i)
			}
			keys = append(keys, get(fs.key))
			m.Key = &keys[len(keys)-1]
		}
		if fs.keyEncoding.set {
			m.KeyEncoding = get(fs.keyEncoding)
		}
		if fs.payloadEncoding.set {
			m.PayloadEncoding = get(fs.payloadEncoding)
		}
		if fs.handle.set {
			m.ReceiptHandle = get(fs.handle)
		}
	}
}

// skipValue returns the index just past the JSON value starting at b[i], checking it
// as encoding/json does (whitespace inside objects and arrays allowed), or false.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 1000 {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			var ok bool
			if i, ok = skipString(b, i); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = skipValue(b, skipSpace(b, i+1), depth+1); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '"':
		return skipString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	case c == 't':
		return skipWord(b, i, "true")
	case c == 'f':
		return skipWord(b, i, "false")
	case c == 'n':
		return skipWord(b, i, "null")
	}
	return 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func skipWord(b []byte, i int, w string) (int, bool) {
	if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return 0, false
}

// skipString checks the string starting at b[i] (its escapes, no control byte; other
// bytes as they come, as encoding/json's scanner does) and returns the index past it.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber checks a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	return i, true
}
