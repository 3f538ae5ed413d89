package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

// The fuzz targets of the render layer: whatever a node sends in a message, text and
// template output is inert on a terminal, json output is one valid JSON line that
// decodes back to the same message, and raw output is the produced bytes. Also the
// payload classifier and tables. scripts/fuzz.sh runs every target.

// isBidiControl reports the characters that reorder how a line is displayed: a payload
// must not be able to make the operator read something else than what is there.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200e || r == 0x200f || r == 0x061c
}

// inert reports the first thing in b (outside the allowed final newline) that could act
// on a terminal: a C0 control, DEL, a C1 control, a byte that is not UTF-8, or a bidi
// control.
func inert(b []byte) error {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("byte %#x at %d is not UTF-8", b[i], i)
		case r < 0x20 || r == 0x7f || textenc.IsC1(r):
			return fmt.Errorf("control %U at %d", r, i)
		case isBidiControl(r):
			return fmt.Errorf("bidi control %U at %d", r, i)
		}
		i += n
	}
	return nil
}

// fuzzMessage builds a message from raw fields as any node could send them. enc picks
// the payload_encoding: none, base64, or something unknown.
func fuzzMessage(topic string, key []byte, keyMode uint8, payload []byte, enc uint8, handle string) *client.Message {
	m := &client.Message{Topic: topic, Partition: int(keyMode) % 7, Offset: int64(enc) * 1000,
		Payload: json.RawMessage(payload), Timestamp: 1790623277, ReceiptHandle: handle}
	switch keyMode % 4 {
	case 1:
		k := string(key)
		m.Key = &k
	case 2:
		k := base64.StdEncoding.EncodeToString(key)
		m.Key, m.KeyEncoding = &k, "base64"
	case 3:
		k := string(key) // not base64, but says it is
		m.Key, m.KeyEncoding = &k, "base64"
	}
	switch enc % 3 {
	case 1:
		m.PayloadEncoding = "base64"
	case 2:
		m.PayloadEncoding = "gzip"
	}
	return m
}

func addMessageSeeds(f *testing.F) {
	type seed struct {
		topic   string
		key     []byte
		keyMode uint8
		payload string
		enc     uint8
		handle  string
	}
	for _, s := range []seed{
		{"orders", []byte("customer-42"), 1, `{"order_id": "ord_123", "amount": 4999}`, 0, "4:0:1"},
		{"orders", []byte("\xff\x00k"), 2, `"iVBORw0KGgo="`, 1, "4:0:1"},
		{"t\x1b[2J", []byte("\x1b]0;title\x07"), 1, "\"\\u001b[31mred \\u009b \u202e evil \u2066\"", 0, "h\x1b"},
		{"t", []byte("\u202ek"), 1, "{\n  \"a\": \"\u0085\"\n}", 0, ""},
		{"t", []byte("k"), 3, "\"\xff\xfe\x7f\"", 0, "h"},
		{"t", nil, 0, "\"\\ud800 \\udc00\"", 0, "h"},
		{"t", nil, 0, `"a\u2028b"`, 0, "h"},
		{"t", nil, 0, "  [1, 2.5e10, null, true]\r\n", 0, "h"},
		{"t", nil, 0, "\"\x7f\u061c\u200f\"", 0, "h"},
		{"t", nil, 0, `"AAECAwQFBgcICQoLDA0ODxAREhM"`, 1, "h"},
		{"t", nil, 0, `"not base64!"`, 1, "h"},
		{"t", nil, 0, `"x"`, 2, "h"},
		{"t", nil, 0, ``, 0, "h"},
		{"t", nil, 0, `{"a":`, 0, "h"},
		{"t", nil, 0, "\"a\nb\"", 1, "h"},
	} {
		f.Add(s.topic, s.key, s.keyMode, []byte(s.payload), s.enc, s.handle)
	}
}

// FuzzRenderText: a text line (with colour or without) and a template's output hold no
// terminal control and no bidi control, and a text record is exactly one line.
func FuzzRenderText(f *testing.F) {
	addMessageSeeds(f)
	plain := mustNew(f, Options{Format: Text, Location: time.UTC})
	color := mustNew(f, Options{Format: Text, Location: time.UTC, Color: true})
	tmpl := mustNew(f, Options{Format: Template, Template: "{{.Topic}} {{.Key}} {{.Payload}} {{.ReceiptHandle}}"})
	f.Fuzz(func(t *testing.T, topic string, key []byte, keyMode uint8, payload []byte, enc uint8, handle string) {
		m := fuzzMessage(topic, key, keyMode, payload, enc, handle)
		out, err := plain.Append([]byte("prefix"), m)
		if err != nil {
			if string(out) != "prefix" {
				t.Fatalf("a failed render left %q behind", out)
			}
			return
		}
		line := out[len("prefix"):]
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("text record is not one line: %q", line)
		}
		if err := inert(line[:len(line)-1]); err != nil {
			t.Fatalf("text line %q: %v", line, err)
		}

		cl, err := color.Append(nil, m)
		if err != nil {
			t.Fatalf("colour failed where plain did not: %v", err)
		}
		// Without the styles' own sequences, a colour line is the plain line.
		stripped := string(cl)
		for _, a := range []affix{color.tag, color.key, color.clock} {
			stripped = strings.ReplaceAll(stripped, a.pre, "")
			stripped = strings.ReplaceAll(stripped, a.post, "")
		}
		if stripped != string(line) {
			t.Fatalf("colour line %q is not the plain line %q with styles", cl, line)
		}

		tl, err := tmpl.Append(nil, m)
		if err != nil {
			return
		}
		if bytes.IndexByte(tl, '\n') != len(tl)-1 {
			t.Fatalf("template record is not one line: %q", tl)
		}
		if err := inert(tl[:len(tl)-1]); err != nil {
			t.Fatalf("template output %q: %v", tl, err)
		}
	})
}

// FuzzRenderJSON: a json record is one line of valid JSON, inert on a terminal (no raw
// C0 or C1 control), and decoding it gives back the same message: the same fields and
// the same produced bytes of key and payload. That is what `sub -o json | produce
// --json` relies on.
func FuzzRenderJSON(f *testing.F) {
	addMessageSeeds(f)
	r := mustNew(f, Options{Format: JSON})
	f.Fuzz(func(t *testing.T, topic string, key []byte, keyMode uint8, payload []byte, enc uint8, handle string) {
		m := fuzzMessage(topic, key, keyMode, payload, enc, handle)
		// A decoded RawMessage holds the value alone, never whitespace around it, and
		// the json record carries the value alone.
		m.Payload = trimJSONSpace(m.Payload)
		out, err := r.Append(nil, m)
		if err != nil {
			if len(out) != 0 {
				t.Fatalf("a failed render left %q behind", out)
			}
			return
		}
		if bytes.IndexByte(out, '\n') != len(out)-1 {
			t.Fatalf("json record is not one line: %q", out)
		}
		if !json.Valid(out) {
			t.Fatalf("json record is not JSON: %s", out)
		}
		for i := 0; i < len(out)-1; {
			r, n := utf8.DecodeRune(out[i:])
			// A tab can only be whitespace between a JSON payload's tokens (a string
			// cannot hold one raw), kept for the exact bytes; it moves the cursor and
			// does nothing else.
			if (r < 0x20 && r != '\t') || textenc.IsC1(r) {
				t.Fatalf("json record holds %U raw at %d: %q", r, i, out)
			}
			i += n
		}
		var back client.Message
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("json record does not decode as a message: %v", err)
		}
		if back.Partition != m.Partition || back.Offset != m.Offset || back.Timestamp != m.Timestamp {
			t.Fatalf("numbers changed: %s", out)
		}
		if utf8.ValidString(m.Topic) && back.Topic != m.Topic {
			t.Fatalf("topic %q came back as %q", m.Topic, back.Topic)
		}
		if utf8.ValidString(m.ReceiptHandle) && back.ReceiptHandle != m.ReceiptHandle {
			t.Fatalf("receipt handle %q came back as %q", m.ReceiptHandle, back.ReceiptHandle)
		}
		want, werr := m.PayloadBytes()
		got, gerr := back.PayloadBytes()
		if werr == nil && (gerr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("payload %q came back as %q (%v) via %s", want, got, gerr, out)
		}
		wk, wok, werr := m.KeyBytes()
		gk, gok, gerr := back.KeyBytes()
		if werr == nil && (gerr != nil || wok != gok || !bytes.Equal(wk, gk)) {
			t.Fatalf("key %q came back as %q (%v) via %s", wk, gk, gerr, out)
		}
	})
}

// FuzzRenderRaw: raw output is exactly the produced bytes and the delimiter.
func FuzzRenderRaw(f *testing.F) {
	addMessageSeeds(f)
	r := mustNew(f, Options{Format: Raw, Delimiter: []byte{0}})
	f.Fuzz(func(t *testing.T, topic string, key []byte, keyMode uint8, payload []byte, enc uint8, handle string) {
		m := fuzzMessage(topic, key, keyMode, payload, enc, handle)
		out, err := r.Append([]byte("pre"), m)
		want, werr := m.PayloadBytes()
		if (err == nil) != (werr == nil) {
			t.Fatalf("raw error %v, DecodePayload error %v", err, werr)
		}
		if err != nil {
			if string(out) != "pre" {
				t.Fatalf("a failed render left %q behind", out)
			}
			return
		}
		if !bytes.Equal(out, append(append([]byte("pre"), want...), 0)) {
			t.Fatalf("raw output %q, want %q and the delimiter", out, want)
		}
	})
}

// FuzzPayloadClassifier: bytes produced as base64 and text produced as a JSON string
// come back exactly, and the message's two decoding paths (PayloadBytes, AppendPayload) agree.
func FuzzPayloadClassifier(f *testing.F) {
	for _, s := range []string{"", "hi", "\xff\x00", "{\"a\":1}", "\"quoted\"", "\u2028", "\ud7ff\U0010ffff", "  "} {
		f.Add([]byte(s), []byte(`"`+s+`"`))
	}
	f.Add([]byte("x"), []byte(`"\ud83d\ude00\ud800\u0041\udc00"`))
	f.Add([]byte("x"), []byte(" \t\r\n 12 "))
	f.Fuzz(func(t *testing.T, produced []byte, raw []byte) {
		// Any bytes, sent as the API sends bytes that are not text.
		b := &client.Message{Payload: json.RawMessage(`"` + base64.StdEncoding.EncodeToString(produced) + `"`), PayloadEncoding: "base64"}
		if got, err := b.PayloadBytes(); err != nil || !bytes.Equal(got, produced) {
			t.Fatalf("base64 of %q decoded to %q, %v", produced, got, err)
		}
		// Valid text, sent as a JSON string.
		if utf8.Valid(produced) {
			q, _ := json.Marshal(string(produced))
			s := &client.Message{Payload: q}
			if got, err := s.PayloadBytes(); err != nil || !bytes.Equal(got, produced) {
				t.Fatalf("text %q sent as %s decoded to %q, %v", produced, q, got, err)
			}
		}
		// Whatever the node sends: both paths give the same answer.
		for _, enc := range []string{"", "base64"} {
			m := &client.Message{Payload: json.RawMessage(raw), PayloadEncoding: enc}
			d, derr := m.PayloadBytes()
			a, _, aerr := m.AppendPayload([]byte("pre"))
			if (derr == nil) != (aerr == nil) {
				t.Fatalf("%q (%q): DecodePayload error %v, appendPayload error %v", raw, enc, derr, aerr)
			}
			if derr != nil {
				if string(a) != "pre" {
					t.Fatalf("a failed appendPayload left %q", a)
				}
				continue
			}
			if !bytes.Equal(a, append([]byte("pre"), d...)) {
				t.Fatalf("%q (%q): DecodePayload %q, appendPayload %q", raw, enc, d, a[3:])
			}
			// A JSON string payload that encoding/json reads gives its text.
			var s string
			if enc == "" && json.Unmarshal(raw, &s) == nil && utf8.Valid(raw) && !bytes.Equal(d, []byte(s)) {
				if v := trimJSONSpace(raw); len(v) > 0 && v[0] == '"' {
					t.Fatalf("%s decoded to %q, encoding/json says %q", raw, d, s)
				}
			}
		}
	})
}

// FuzzTable: a plain table has a line per row and header, each inert on a terminal.
func FuzzTable(f *testing.F) {
	f.Add("NAME", "orders", "\x1b[2Jx\u202e", "3", "\t\n")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, h, a, b, c, d string) {
		var buf bytes.Buffer
		if err := Table(&buf, false, false, []string{h, "N"}, [][]string{{a, b}, {c}, {d, a, b}}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("%d lines for a header and 3 rows: %q", len(lines), buf.String())
		}
		for _, l := range lines {
			if err := inert([]byte(l)); err != nil {
				t.Fatalf("table line %q: %v", l, err)
			}
		}
	})
}
