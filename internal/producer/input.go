package producer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/narad/narad/internal/client"
)

// MaxInput bounds one message read from the input. The node takes at most 1 MiB;
// anything this much larger is reported without being held in memory or sent (a stray
// binary file given to --lines must not take all the RAM).
const MaxInput = 16 << 20

// ErrTooLargeToRead is an input message over MaxInput: reported, never sent.
var ErrTooLargeToRead = fmt.Errorf("over %d MiB, not sent", MaxInput>>20)

// Record is one message read from the input. A record with Err set was bad input (an
// invalid --json line, a line too large to read): it is reported and not sent.
type Record struct {
	// Pos is where the record was in the input, counting from 1: its line, or its
	// argument among the MESSAGE arguments; 0 for a whole input read as one message.
	Pos  int
	Body []byte
	// Size is the bytes seen, for reports: len(Body), or the size of what was too
	// large or was not a message.
	Size int64
	// Key is the record's own key (a --json line's); nil when it has none.
	Key *string
	// Partition and Timestamp are a --json line's own, read only when JSONFields asks
	// for them; nil when not read or the line has none.
	Partition *int
	Timestamp *int64
	// Last is known to be the input's last record (the last MESSAGE argument, a whole
	// input); a line is never known to be, as that would mean waiting for the next.
	Last bool
	Err  error
}

// Source yields the input's records in order; Next returns io.EOF after the last.
type Source interface {
	Next() (*Record, error)
	// Unit names what Pos counts ("line", "argument"); "" for a single message.
	Unit() string
}

// Args is the MESSAGE arguments, one message each.
func Args(msgs []string) Source { return &argSource{msgs: msgs} }

type argSource struct {
	msgs []string
	i    int
}

func (s *argSource) Unit() string { return "argument" }

func (s *argSource) Next() (*Record, error) {
	if s.i >= len(s.msgs) {
		return nil, io.EOF
	}
	m := s.msgs[s.i]
	s.i++
	return &Record{Pos: s.i, Body: []byte(m), Size: int64(len(m)), Last: s.i == len(s.msgs)}, nil
}

// Whole reads all of r as one message, byte for byte.
func Whole(r io.Reader) Source { return &wholeSource{r: r} }

type wholeSource struct {
	r    io.Reader
	done bool
}

func (s *wholeSource) Unit() string { return "" }

func (s *wholeSource) Next() (*Record, error) {
	if s.done {
		return nil, io.EOF
	}
	s.done = true
	body, err := io.ReadAll(io.LimitReader(s.r, MaxInput+1))
	if err != nil {
		return nil, err
	}
	rec := &Record{Body: body, Size: int64(len(body)), Last: true}
	if rec.Size > MaxInput {
		rec.Body, rec.Err = nil, ErrTooLargeToRead
	}
	return rec, nil
}

// Lines reads one message per line of r: a trailing \r is dropped, empty lines are
// skipped, a last line without a newline is a line.
func Lines(r io.Reader) Source { return &lineSource{r: bufio.NewReaderSize(r, 64<<10)} }

// JSONLines reads one message per line of r in the shape `narad sub -o json` prints:
// the payload decoded back to the bytes that were produced, the key kept.
func JSONLines(r io.Reader) Source { return JSONLinesWith(r, JSONFields{}) }

// JSONFields names the fields of a --json line read besides its payload and key.
type JSONFields struct {
	// Partition reads "partition" (restoring a topic partition for partition).
	Partition bool
	// Timestamp reads "timestamp" (playing a tape at its own pace).
	Timestamp bool
}

// JSONLinesWith is JSONLines that also reads the fields f names into each Record.
func JSONLinesWith(r io.Reader, f JSONFields) Source {
	return &lineSource{r: bufio.NewReaderSize(r, 64<<10), json: true, fields: f}
}

type lineSource struct {
	r      *bufio.Reader
	json   bool
	fields JSONFields
	line   int
}

func (s *lineSource) Unit() string { return "line" }

func (s *lineSource) Next() (*Record, error) {
	for {
		line, n, err := ReadLine(s.r, MaxInput)
		if err != nil {
			return nil, err
		}
		s.line++
		rec := &Record{Pos: s.line, Size: n}
		switch {
		case n > MaxInput:
			rec.Err = ErrTooLargeToRead
		case s.json:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			rec.Body, rec.Key, rec.Err = ParseJSONLine(line)
			if rec.Err == nil && (s.fields.Partition || s.fields.Timestamp) {
				rec.Partition, rec.Timestamp, rec.Err = parsePlace(line, s.fields)
			}
			if rec.Err == nil {
				rec.Size = int64(len(rec.Body))
			} else {
				rec.Size = int64(len(line))
			}
		default:
			if len(line) == 0 {
				continue
			}
			// The reader's buffer is reused by the next read: the record owns a copy.
			rec.Body = bytes.Clone(line)
		}
		return rec, nil
	}
}

// ReadLine returns the next line without its "\n" or "\r\n", keeping at most limit
// bytes of it; n is its length (more than limit: it was too long and was cut). It
// returns io.EOF only when nothing was left to read; a last line without a newline
// is a line. The line may share the reader's buffer.
func ReadLine(r *bufio.Reader, limit int64) (line []byte, n int64, err error) {
	// The last two bytes read: a line cut at limit no longer holds its "\r\n", yet its
	// length must not count them.
	var tail [2]byte
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		for _, c := range chunk[max(0, len(chunk)-2):] {
			tail[0], tail[1] = tail[1], c
		}
		switch {
		case err == bufio.ErrBufferFull:
			if int64(len(line)) <= limit {
				line = append(line, chunk...)
			}
			continue
		case err == io.EOF && n == 0:
			return nil, 0, io.EOF
		case err != nil && err != io.EOF:
			return nil, n, err
		}
		if line == nil {
			line = chunk // the common case: the whole line in the buffer, no copy
		} else if int64(len(line)) <= limit {
			line = append(line, chunk...)
		}
		break
	}
	if n > 0 && tail[1] == '\n' {
		n--
		if n > 0 && tail[0] == '\r' {
			n--
		}
	}
	if n > limit {
		return nil, n, nil
	}
	return line[:n], n, nil
}

// ParseJSONLine turns one line of `sub -o json` back into the produced bytes and key:
// a base64 payload decoded, a JSON string's text, any other JSON value its raw bytes
// verbatim (whitespace kept). A message without a key gives a nil key.
func ParseJSONLine(line []byte) (body []byte, key *string, err error) {
	var m client.Message
	if err := client.UnmarshalMessage(line, &m); err != nil {
		return nil, nil, fmt.Errorf("not a JSON message line: %v", JSONErrorText(err))
	}
	if len(m.Payload) == 0 {
		return nil, nil, errors.New("no payload field (want a line of narad sub -o json)")
	}
	// An encoding this reader does not know is refused, never guessed at.
	if e := m.PayloadEncoding; e != "" && e != "base64" {
		return nil, nil, fmt.Errorf("unknown payload_encoding %q", e)
	}
	// A lone surrogate (\ud800) in a text payload or a key cannot be produced as
	// written: decoding makes it U+FFFD. The line is refused rather than changed.
	if kind, _ := m.PayloadKind(); kind == client.PayloadText {
		if u := client.LoneSurrogate(m.Payload); u != "" {
			return nil, nil, fmt.Errorf("payload holds a lone surrogate %s, which text cannot carry: it would be produced as U+FFFD", u)
		}
	}
	if m.Key != nil && m.KeyEncoding == "" && bytes.Contains(line, []byte(`\u`)) {
		var raw struct {
			Key json.RawMessage `json:"key"`
		}
		if json.Unmarshal(line, &raw) == nil {
			if u := client.LoneSurrogate(raw.Key); u != "" {
				return nil, nil, fmt.Errorf("key holds a lone surrogate %s, which text cannot carry: it would be produced as U+FFFD", u)
			}
		}
	}
	body, err = m.PayloadBytes()
	if err != nil {
		return nil, nil, err
	}
	if kb, ok, err := m.KeyBytes(); err != nil {
		return nil, nil, err
	} else if ok {
		k := string(kb)
		key = &k
	}
	// The decoded payload may share memory with the line, which the reader reuses.
	return bytes.Clone(body), key, nil
}

// parsePlace reads a line's partition and timestamp, those f asks for. The line
// already decoded as a message, so only the two fields' own values can be wrong.
func parsePlace(line []byte, f JSONFields) (partition *int, timestamp *int64, err error) {
	var v struct {
		Partition *json.Number `json:"partition"`
		Timestamp *json.Number `json:"timestamp"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return nil, nil, fmt.Errorf("not a JSON message line: %v", JSONErrorText(err))
	}
	if f.Partition && v.Partition != nil {
		n, err := strconv.ParseInt(v.Partition.String(), 10, 32)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("partition %s is not a partition (want an integer, 0 or more)", v.Partition)
		}
		p := int(n)
		partition = &p
	}
	if f.Timestamp && v.Timestamp != nil {
		n, err := strconv.ParseInt(v.Timestamp.String(), 10, 64)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("timestamp %s is not a time (want unix seconds)", v.Timestamp)
		}
		timestamp = &n
	}
	return partition, timestamp, nil
}

// JSONErrorText is a decoding error with the byte it happened at, when known; a
// field of the wrong kind is named as the line has it, never by the Go struct and
// type it was decoded into (Message.partition of type int).
func JSONErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && te.Type != nil {
		return fmt.Sprintf("%s is %s, want %s", te.Field, jsonValueWords(te.Value), jsonTypeWords(te.Type))
	}
	return err.Error()
}

// jsonValueWords is what encoding/json says a value was ("number 1.0", "string")
// as a person would.
func jsonValueWords(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "true or false"
	}
	return "a " + v
}

// jsonTypeWords is what a field of Go type t takes, in the line's terms.
func jsonTypeWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}
