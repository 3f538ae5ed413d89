package render

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

// JQ is a jq expression (--jq, --filter), compiled once and run on each value a
// command writes. It is safe for concurrent use.
type JQ struct {
	code *gojq.Code
}

// JQError is a jq expression that failed on a value at run time (it compiled): the
// CLI tells it from a node that could not be reached.
type JQError struct{ Err error }

func (e *JQError) Error() string { return e.Err.Error() }
func (e *JQError) Unwrap() error { return e.Err }

// CompileJQ parses and compiles src. No environment is given to the expression
// ($ENV and env are empty): a --jq typed from a shell history must not be able to
// print NARAD_PASS.
func CompileJQ(src string) (*JQ, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	q, err := gojq.Parse(src)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) && pe.Offset > 0 {
			return nil, fmt.Errorf("%v at column %d", err, pe.Offset)
		}
		return nil, err
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, err
	}
	return &JQ{code: code}, nil
}

// jqOutputMax bounds what one value's results may add: they are gathered before any is
// written (a consumer acks a message once its whole output is out), so an endless
// generator (repeat, range(1e12)) would take memory until the system killed narad,
// without a word. No real output of one message or document comes near it. A
// variable for tests.
var jqOutputMax = 64 << 20

// AppendResults runs q on v and appends each result on its own line: a string as its
// text, anything else as compact JSON, as gh --jq does. With escape (the output is a
// terminal) a string's control characters are escaped as the text format does; the
// JSON is always inert (no raw C1 control). On error dst is returned unchanged.
//
// ctx's end stops the run: an expression that does not end on a value
// (last(range(1e12))) must not keep narad from a signal. The error is then ctx's,
// not a *JQError: the expression did not fail.
func (q *JQ) AppendResults(ctx context.Context, dst []byte, v any, escape bool) ([]byte, error) {
	orig := len(dst)
	iter := q.code.RunWithContext(ctx, v)
	for {
		r, ok := iter.Next()
		if !ok {
			return dst, nil
		}
		switch r := r.(type) {
		case error:
			if he, ok := r.(*gojq.HaltError); ok && he.Value() == nil {
				return dst, nil // halt: stop without an error
			}
			if err := ctx.Err(); err != nil {
				return dst[:orig], err
			}
			return dst[:orig], &JQError{Err: r}
		case string:
			if escape {
				dst = textenc.AppendEscape(dst, r)
			} else {
				dst = append(dst, r...)
			}
		default:
			start := len(dst)
			b, err := gojq.Marshal(r)
			if err != nil {
				return dst[:orig], &JQError{Err: err}
			}
			dst = append(dst, b...)
			dst = append(dst[:start], textenc.InertJSON(dst[start:])...)
		}
		dst = append(dst, '\n')
		if len(dst)-orig > jqOutputMax {
			return dst[:orig], &JQError{Err: fmt.Errorf("more than %s of output for one value (an endless generator, such as repeat?)", ByteSize(int64(jqOutputMax)))}
		}
	}
}

// Truthy runs q on v and reports whether any of its results is neither false nor
// null, as jq's select(q) keeps an input once a result of q is: for
// `.payload.items[].sku == "B"` the second item's true counts, not only the first's
// false. It stops at that result; no result at all is false. An error before it is
// the run's error. ctx's end stops the run, as for AppendResults, with ctx's error.
func (q *JQ) Truthy(ctx context.Context, v any) (bool, error) {
	iter := q.code.RunWithContext(ctx, v)
	for {
		r, ok := iter.Next()
		if !ok {
			return false, nil
		}
		switch r := r.(type) {
		case error:
			if err := ctx.Err(); err != nil {
				return false, err
			}
			return false, &JQError{Err: r}
		case nil:
			continue
		case bool:
			if !r {
				continue
			}
		}
		return true, nil
	}
}

// DocumentValue is the JSON document b as a jq value; numbers keep their digits
// (json.Number), so an id too long for a float64 is not rounded.
func DocumentValue(b []byte) (any, error) {
	return decodeJSONValue(b)
}

// MessageValue is m as a jq value, in the shape -o json writes it: topic, partition,
// offset, key (base64 with key_encoding when it is not text), payload, its
// payload_encoding when the node sent one, timestamp and receipt_handle when set. A
// JSON payload is its value (decoded once, here), a text payload its text, a binary
// one the node's base64 string. A JSON payload that -o json writes base64 to keep
// its record on one line (it spans lines) is its value here all the same: jq reads
// the value, not the line.
func MessageValue(m *client.Message) (map[string]any, error) {
	if m == nil {
		return nil, errors.New("no message")
	}
	raw := trimJSONSpace([]byte(m.Payload))
	if len(raw) == 0 {
		return nil, client.ErrNoPayload
	}
	payload, err := decodeJSONValue(raw)
	if err != nil {
		return nil, errInvalidPayloadJSON
	}
	v := make(map[string]any, 8)
	v["topic"] = m.Topic
	v["partition"] = m.Partition
	v["offset"] = int(m.Offset)
	if m.Key != nil {
		switch {
		case m.KeyEncoding == "" && !utf8.ValidString(*m.Key):
			v["key"] = base64.StdEncoding.EncodeToString([]byte(*m.Key))
			v["key_encoding"] = client.EncodingBase64
		default:
			v["key"] = *m.Key
			if m.KeyEncoding != "" {
				v["key_encoding"] = m.KeyEncoding
			}
		}
	}
	if m.PayloadEncoding != "" {
		if _, ok := payload.(string); !ok {
			return nil, fmt.Errorf("payload_encoding %q on a payload that is not a JSON string", m.PayloadEncoding)
		}
		v["payload_encoding"] = m.PayloadEncoding
	}
	v["payload"] = payload
	v["timestamp"] = int(m.Timestamp)
	if m.ReceiptHandle != "" {
		v["receipt_handle"] = m.ReceiptHandle
	}
	return v, nil
}

// appendJQ appends what the expression makes of m.
func (r *Renderer) appendJQ(ctx context.Context, dst []byte, m *client.Message) ([]byte, error) {
	v, err := MessageValue(m)
	if err != nil {
		return dst, err
	}
	return r.jq.AppendResults(ctx, dst, v, r.jqEscape)
}
