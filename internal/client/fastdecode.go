package client

import (
	"encoding/json"
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
		bit := d.field(m, fs, name)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// field reads the value of the field called name into m (a string into fs), and
// returns the field's bit, or 0 for a field or value left to the general way.
func (d *fastDecoder) field(m *Message, fs *fieldSpans, name []byte) int {
	switch string(name) {
	case "topic":
		s, ok := d.plainString()
		if !ok {
			return 0
		}
		fs.topic = d.intern(s)
		return fTopic
	case "partition":
		n, ok := d.integer()
		if !ok || int64(int(n)) != n {
			return 0
		}
		m.Partition = int(n)
		return fPartition
	case "offset":
		return d.intField(&m.Offset, fOffset)
	case "timestamp":
		return d.intField(&m.Timestamp, fTimestamp)
	case "key":
		return d.stringField(&fs.key, fKey)
	case "key_encoding":
		return d.stringField(&fs.keyEncoding, fKeyEncoding)
	case "payload_encoding":
		return d.stringField(&fs.payloadEncoding, fPayloadEncoding)
	case "receipt_handle":
		return d.stringField(&fs.handle, fHandle)
	case "payload":
		if !d.payload(m) {
			return 0
		}
		return fPayload
	}
	return 0
}

// payload takes the payload's JSON as it stands in the body, without a copy.
func (d *fastDecoder) payload(m *Message) bool {
	start := d.i
	// A null payload, and whitespace next to one (kept as the payload's own, see
	// keepPayloadSpace), are left to the general way.
	if d.i >= len(d.b) || d.b[d.i] == 'n' || isSpace(d.b[d.i]) {
		return false
	}
	end, ok := valueEnd(d.b, d.i)
	if !ok || end == start || isSpace(d.b[end-1]) || !json.Valid(d.b[start:end]) {
		return false
	}
	d.i = end
	m.Payload = d.b[start:end:end]
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// intField reads an integer into *n and returns bit, or 0 when the value is not one.
func (d *fastDecoder) intField(n *int64, bit int) int {
	v, ok := d.integer()
	if !ok {
		return 0
	}
	*n = v
	return bit
}

// stringField reads a plain string into the arena and returns bit, or 0 when the
// value is not one.
func (d *fastDecoder) stringField(sp *span, bit int) int {
	s, ok := d.plainString()
	if !ok {
		return 0
	}
	*sp = d.keep(s)
	return bit
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

// valueEnd returns the index just past the JSON value starting at b[i], found by its
// strings and brackets alone (a scalar ends at the comma or bracket after it), or
// false when the input ends first. json.Valid then checks the value, so the payload is
// refused exactly where encoding/json would refuse it.
func valueEnd(b []byte, i int) (int, bool) {
	depth, inString := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		if inString {
			switch c {
			case '\\':
				j++
			case '"':
				inString = false
				if depth == 0 {
					return j + 1, true
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, true
			}
			if depth--; depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}
