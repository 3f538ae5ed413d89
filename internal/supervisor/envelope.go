package supervisor

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// Dead-letter formats: raw produces the payload as it was (the default, as before
// envelopes existed); envelope produces a JSON object saying where it came from and
// why it failed.
const (
	FormatRaw      = "raw"
	FormatEnvelope = "envelope"
)

// envelopeTail is how much of a command's stderr an envelope keeps: enough for a
// stack trace's end, small next to a message.
const envelopeTail = 4 << 10

// Failure is what a dead letter's envelope says about why the message failed.
type Failure struct {
	// Attempts is how many times it failed in this process.
	Attempts int
	// ExitCode is the last run's exit status; nil when it did not exit on its own
	// (not started, stopped after --max-processing-time, ended by a signal) or was
	// never run by narad (hold mode's d).
	ExitCode *int
	// Stderr is the end of the last run's stderr, as the command wrote it.
	Stderr []byte
}

// Envelope is the dead letter of m in the envelope format, one JSON object:
// topic, partition, offset, key (when m has one), attempts, exit_code, stderr_tail,
// timestamp (the original's), and payload as `-o json` shows it (with
// payload_encoding when it is base64). The stderr tail is text: bytes that are not
// UTF-8 become U+FFFD, and control characters are escaped as JSON escapes them.
func Envelope(m *client.Message, topic string, f Failure) ([]byte, error) {
	if m.Topic != "" {
		topic = m.Topic
	}
	rec, err := render.JSONRecord(&client.Message{Topic: topic, Partition: m.Partition, Offset: m.Offset,
		Key: m.Key, KeyEncoding: m.KeyEncoding, Payload: m.Payload, PayloadEncoding: m.PayloadEncoding, Timestamp: m.Timestamp})
	if err != nil {
		return nil, err
	}
	var shown struct {
		Key             *json.RawMessage `json:"key"`
		KeyEncoding     string           `json:"key_encoding"`
		Payload         json.RawMessage  `json:"payload"`
		PayloadEncoding string           `json:"payload_encoding"`
	}
	if err := json.Unmarshal(rec, &shown); err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	b := []byte(`{"topic":`)
	b = appendString(b, topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(m.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, m.Offset, 10)
	b = append(b, `,"key":`...)
	if shown.Key != nil {
		b = append(b, *shown.Key...)
		if shown.KeyEncoding != "" {
			b = append(b, `,"key_encoding":`...)
			b = appendString(b, shown.KeyEncoding)
		}
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(f.Attempts), 10)
	b = append(b, `,"exit_code":`...)
	if f.ExitCode != nil {
		b = strconv.AppendInt(b, int64(*f.ExitCode), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"stderr_tail":`...)
	b = appendString(b, string(f.Stderr))
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.Timestamp, 10)
	b = append(b, `,"payload":`...)
	b = append(b, shown.Payload...)
	if shown.PayloadEncoding != "" {
		b = append(b, `,"payload_encoding":`...)
		b = appendString(b, shown.PayloadEncoding)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string; json.Marshal escapes every control
// character and turns bytes that are not UTF-8 into U+FFFD.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// MaxLetter is the most a node takes in one message (1 MiB, API.md): a dead letter
// over it is refused (413) at every attempt.
const MaxLetter = 1 << 20

// LetterOrPayload is the dead letter to produce: the envelope env, or, where env is over
// MaxLetter and the payload alone is not (a payload near 1 MiB, or a binary one over
// about 768 KiB, which the envelope holds as base64), the payload, with replaced the
// size of the envelope it stands for (0 when env is the letter). An envelope the node
// refuses every time would leave the message failing again for good, never
// dead-lettered; the payload alone keeps it.
func LetterOrPayload(env, payload []byte) (letter []byte, replaced int) {
	if len(env) <= MaxLetter || len(payload) > MaxLetter {
		return env, 0
	}
	return payload, len(env)
}

// EnvelopeOrPayload is m's dead letter in the envelope format, or payload, the
// message's decoded bytes, in its place as LetterOrPayload says. Exec mode's dead
// letters and hold mode's d both come from here, so the two never disagree on what
// goes to the topic.
func EnvelopeOrPayload(m *client.Message, topic string, f Failure, payload []byte) (letter []byte, replaced int, err error) {
	env, err := Envelope(m, topic, f)
	if err != nil {
		return nil, 0, err
	}
	letter, replaced = LetterOrPayload(env, payload)
	return letter, replaced, nil
}

// payloadAlone is what a message's line adds when its dead letter is the payload in
// place of an envelope of replaced bytes.
func payloadAlone(replaced int) string {
	return fmt.Sprintf(" as the payload alone (its envelope would be %s, over the node's 1 MiB)", render.ByteSize(int64(replaced)))
}
