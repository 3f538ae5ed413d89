package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAckStdin feeds any input to the `ack -` reader: one item per line that is not
// blank, in order, numbered by line, and each either a handle that is not empty or an
// error. scripts/fuzz.sh runs every target.
func FuzzAckStdin(f *testing.F) {
	for _, s := range []string{
		"4:0:123\n4:0:124\n",
		"  4:0:1 \r\n\n\t\n{\"receipt_handle\":\"4:0:2\",\"payload\":1}\n{\"receipt_handle\":\n",
		"{\"topic\":\"t\",\"payload\":\"x\"}\nlast-without-newline",
		"\x00\x1b[2J\u202e\xff\n",
		"{\"receipt_handle\":\"a\\nb\\u0000\"}",
		"", "\n\n\n", "\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		r := newHandleReader(context.Background(), bytes.NewReader(input), []string{"arg:1", "-"})
		var got []settleItem
		for it := range r.items {
			got = append(got, it)
		}
		if err := <-r.readErr; err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		if len(got) == 0 || got[0].handle != "arg:1" {
			t.Fatalf("the argument before - is not the first item: %+v", got)
		}
		got = got[1:]
		var want []string // the non-blank lines' numbers
		for i, l := range strings.Split(string(input), "\n") {
			if len(bytes.TrimSpace([]byte(l))) > 0 {
				want = append(want, "line "+strconv.Itoa(i+1))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d items for %d non-blank lines", len(got), len(want))
		}
		for i, it := range got {
			if it.where != want[i] {
				t.Fatalf("item %d is from %s, want %s", i, it.where, want[i])
			}
			if it.err != nil {
				if it.handle != "" {
					t.Fatalf("%s: a handle %q with an error %v", it.where, it.handle, it.err)
				}
				continue
			}
			if it.handle == "" {
				t.Fatalf("%s: an empty handle without an error", it.where)
			}
		}
	})
}

// FuzzParseHandleLine: a handle written as a bare line or as the receipt_handle of a
// `sub -o json` line is read back exactly (a bare line trimmed of its spaces).
func FuzzParseHandleLine(f *testing.F) {
	for _, s := range []string{"4:0:3327358780392153864", " x ", "{", "a\tb", "\u00a0h\u00a0", "\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		// As a JSON line, the way sub -o json writes it.
		line, _ := json.Marshal(map[string]any{"topic": "t", "payload": 1, "receipt_handle": h})
		got, ok, err := parseHandleLine(line)
		switch {
		case !ok:
			t.Fatalf("JSON line %s read as blank", line)
		case h == "":
			if err == nil {
				t.Fatalf("JSON line without a handle accepted as %q", got)
			}
		case err != nil:
			t.Fatalf("JSON line %s: %v", line, err)
		case utf8.ValidString(h) && got != h:
			t.Fatalf("handle %q read back as %q", h, got)
		}
		// As a bare line.
		if strings.ContainsAny(h, "\n") {
			return
		}
		got, ok, err = parseHandleLine([]byte(h))
		want := string(bytes.TrimSpace([]byte(h)))
		switch {
		case want == "":
			if ok {
				t.Fatalf("blank line %q read as %q, %v", h, got, err)
			}
		case want[0] == '{':
			// Read as JSON: an error or a handle, never a panic.
		case err != nil || !ok || got != want:
			t.Fatalf("bare line %q read as %q, %v, %v; want %q", h, got, ok, err, want)
		}
	})
}
