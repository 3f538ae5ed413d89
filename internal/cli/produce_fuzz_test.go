package cli

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/producer"
	"github.com/narad/narad/internal/render"
)

// The fuzz targets of produce's input readers: --lines, --json, and the round trip
// `sub -o json | produce --json`. scripts/fuzz.sh runs every target.

// FuzzProduceLines reads any input with --lines: the records are the input's lines,
// in order, without their "\n" or "\r\n", empty ones skipped.
func FuzzProduceLines(f *testing.F) {
	for _, s := range []string{"a\nb\r\n\nc", "\r\n\r\n", "x\r", "\x00\xff\n\n", "", "no newline"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		var got []string
		src := producer.Lines(bytes.NewReader(input))
		for {
			r, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Err != nil {
				t.Fatalf("line %d: %v", r.Pos, r.Err)
			}
			if r.Size != int64(len(r.Body)) {
				t.Fatalf("line %d: size %d for %d bytes", r.Pos, r.Size, len(r.Body))
			}
			got = append(got, string(r.Body))
		}
		var want []string
		for _, l := range strings.SplitAfter(string(input), "\n") {
			if strings.HasSuffix(l, "\n") { // a last line without one keeps its "\r"
				l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
			}
			if l != "" {
				want = append(want, l)
			}
		}
		if strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}

// FuzzProduceJSONLine reads any line as --json does: an error, or a body; never a panic,
// and a line it accepts again after being re-encoded by sub -o json gives the same bytes.
func FuzzProduceJSONLine(f *testing.F) {
	for _, s := range []string{
		`{"topic":"t","partition":0,"offset":1,"key":"k","payload":{"a":  1},"timestamp":1,"receipt_handle":"0:1:2"}`,
		`{"payload":"iVBORw0KGgo=","payload_encoding":"base64","key":"AP8=","key_encoding":"base64"}`,
		`{"payload":"a\nb\u00e9\ud800"}`, `{"payload":"x","payload_encoding":"rot13"}`,
		`{"payload":null}`, `{"payload":"!!","payload_encoding":"base64"}`, `{"payload":1,"key":5}`,
		`{"payload":"x","key":"!","key_encoding":"base64"}`, `{"payload":"x","key_encoding":"gzip","key":"k"}`,
		"{\"payload\":\"\xff\"}", `[]`, `{`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	r, err := render.New(render.Options{Format: render.JSON})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		body, key, err := producer.ParseJSONLine(line)
		if err != nil {
			if body != nil || key != nil {
				t.Fatalf("error %v with a body or key", err)
			}
			return
		}
		var m client.Message
		if json.Unmarshal(line, &m) != nil {
			t.Fatal("accepted a line encoding/json refuses")
		}
		out, err := r.Append(nil, &m)
		if err != nil {
			return // the renderer is stricter (a payload that spans lines, say); it refuses, never garbles
		}
		body2, key2, err := producer.ParseJSONLine(bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("sub -o json's line %s is refused: %v", out, err)
		}
		if !bytes.Equal(body, body2) || !sameKey(key, key2) {
			t.Fatalf("line %s gives %q key %v; re-encoded as %s it gives %q key %v", line, body, key, out, body2, key2)
		}
	})
}

// FuzzSubJSONToProduce is `narad sub a -o json | narad produce b --json` for any
// message the node can hand out: the bytes produced to b are the bytes produced to a,
// and so is the key.
func FuzzSubJSONToProduce(f *testing.F) {
	f.Add([]byte(`{"order_id": "ord_1",  "amount": 4999}`), uint8(0), []byte("customer-42"), uint8(1))
	f.Add([]byte("hello\nworld \u202e \x1b[31m"), uint8(1), []byte("\xff\x00"), uint8(2))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00"), uint8(2), []byte(""), uint8(1))
	f.Add([]byte("{\n  \"a\": \"\u0085\"\n}"), uint8(0), []byte("k"), uint8(0))
	f.Add([]byte(`"quoted"`), uint8(0), []byte("\u009b"), uint8(1))
	f.Fuzz(func(t *testing.T, produced []byte, as uint8, key []byte, keyMode uint8) {
		// How the node hands the produced bytes out (API.md, "Payload").
		m := client.Message{Topic: "a", Partition: 1, Offset: 2, Timestamp: 3, ReceiptHandle: "1:2:3"}
		switch as % 3 {
		case 0: // a JSON value, verbatim: only bytes that are one
			if !json.Valid(produced) || !utf8.Valid(produced) {
				return
			}
			m.Payload = bytes.Trim(produced, " \t\r\n")
			if len(m.Payload) > 0 && m.Payload[0] == '"' {
				return // a JSON string stands for its text: case 1
			}
		case 1: // text, as a JSON string
			if !utf8.Valid(produced) {
				return
			}
			m.Payload, _ = json.Marshal(string(produced))
		case 2: // bytes, base64
			m.Payload = json.RawMessage(`"` + base64.StdEncoding.EncodeToString(produced) + `"`)
			m.PayloadEncoding = "base64"
		}
		var wantKey *string
		switch keyMode % 3 {
		case 1:
			if utf8.Valid(key) {
				k := string(key)
				m.Key, wantKey = &k, &k
			}
		case 2:
			k, w := base64.StdEncoding.EncodeToString(key), string(key)
			m.Key, m.KeyEncoding, wantKey = &k, "base64", &w
		}
		want := produced
		if as%3 == 0 {
			want = m.Payload
		}
		r, err := render.New(render.Options{Format: render.JSON})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Append(nil, &m)
		if err != nil {
			t.Fatalf("sub -o json refused a message the node can send: %v", err)
		}
		body, gotKey, err := producer.ParseJSONLine(bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("produce --json refused %s: %v", out, err)
		}
		if !bytes.Equal(body, want) || !sameKey(gotKey, wantKey) {
			t.Fatalf("produced %q key %v; copied as %q key %v via %s", want, ptrText(wantKey), body, ptrText(gotKey), out)
		}
	})
}

func sameKey(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func ptrText(p *string) string {
	if p == nil {
		return "none"
	}
	return strconv.Quote(*p)
}

// TestReadLineCountsCutLines: a line over the limit is reported with its own length,
// without its "\n" or "\r\n", like a line within it.
func TestReadLineCountsCutLines(t *testing.T) {
	// Lines longer than the reader's buffer of 16 come in more than one piece.
	r := bufio.NewReaderSize(strings.NewReader("abcdefghijklmnopqrstuvwxyz\r\n0123456789abcdefghij\nshort\n\r\nxyz\r"), 16)
	var got []int64
	for {
		_, n, err := readLine(r, 5)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if want := []int64{26, 20, 5, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("lengths %v, want %v", got, want)
	}
}
