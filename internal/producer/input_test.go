package producer

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// all reads src to its end.
func all(t *testing.T, src Source) []*Record {
	t.Helper()
	var out []*Record
	for {
		rec, err := src.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func TestArgs(t *testing.T) {
	recs := all(t, Args([]string{"one", "", "three"}))
	if len(recs) != 3 || recs[1].Pos != 2 || string(recs[2].Body) != "three" || recs[1].Size != 0 {
		t.Errorf("records %+v", recs)
	}
}

func TestWhole(t *testing.T) {
	recs := all(t, Whole(strings.NewReader("first\nsecond\n")))
	if len(recs) != 1 || string(recs[0].Body) != "first\nsecond\n" || recs[0].Pos != 0 {
		t.Errorf("records %+v", recs)
	}
	recs = all(t, Whole(io.LimitReader(zeros{}, MaxInput+10)))
	if len(recs) != 1 || !errors.Is(recs[0].Err, ErrTooLargeToRead) || recs[0].Body != nil || recs[0].Size != MaxInput+1 {
		t.Errorf("too large: %+v", recs[0])
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Lines: empty lines skipped (their numbers still counted), a trailing \r dropped, a
// last line without a newline still a line, each record owning its bytes.
func TestLines(t *testing.T) {
	recs := all(t, Lines(strings.NewReader("alpha\n\nbeta\r\ngam")))
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Body)+"@"+string(rune('0'+r.Pos)))
	}
	if want := []string{"alpha@1", "beta@3", "gam@4"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("ab\r\n\ncdefgh\nij"), 16)
	type line struct {
		s string
		n int64
	}
	var got []line
	for {
		l, n, err := ReadLine(r, 5)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line{string(l), n})
	}
	want := []line{{"ab", 2}, {"", 0}, {"", 6}, {"ij", 2}}
	if !slices.Equal(got, want) {
		t.Errorf("lines %v, want %v (a line over the limit comes back empty with its length)", got, want)
	}
	// A line longer than the reader's buffer arrives whole.
	long := strings.Repeat("x", 100)
	l, n, err := ReadLine(bufio.NewReaderSize(strings.NewReader(long+"\nnext\n"), 16), 1000)
	if err != nil || string(l) != long || n != 100 {
		t.Errorf("long line %q %d %v", l, n, err)
	}
}

func TestJSONLines(t *testing.T) {
	in := `{"topic":"a","key":"k","payload":{"a": 1},"timestamp":1}

{oops
  {"payload":"text"}  ` + "\n"
	recs := all(t, JSONLines(strings.NewReader(in)))
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (the empty line skipped)", len(recs))
	}
	if string(recs[0].Body) != `{"a": 1}` || *recs[0].Key != "k" || recs[0].Pos != 1 || recs[0].Size != 8 {
		t.Errorf("first %+v", recs[0])
	}
	if recs[1].Err == nil || recs[1].Pos != 3 || recs[1].Size != 5 {
		t.Errorf("bad line %+v", recs[1])
	}
	if string(recs[2].Body) != "text" || recs[2].Key != nil || recs[2].Pos != 4 {
		t.Errorf("third %+v", recs[2])
	}
}

func TestParseJSONLine(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name, line string
		body       string
		key        *string
		err        string
	}{
		{"json verbatim", `{"payload":{"b":  [1, 2]},"key":"k"}`, `{"b":  [1, 2]}`, str("k"), ""},
		{"json with whitespace around", "{\"payload\": {\"b\": 1}\n,\"key\":\"k\"}", " {\"b\": 1}\n", str("k"), ""},
		{"json number", `{"payload":42}`, `42`, nil, ""},
		{"text", `{"payload":"hello"}`, "hello", nil, ""},
		{"text with escapes", `{"payload":"a\nb\u00e9\"q\""}`, "a\nbé\"q\"", nil, ""},
		{"base64", `{"payload":"iVBORw0KGgo=","payload_encoding":"base64"}`, "\x89PNG\r\n\x1a\n", nil, ""},
		{"base64 key", `{"payload":"x","key":"AP8=","key_encoding":"base64"}`, "x", str("\x00\xff"), ""},
		{"empty key is a key", `{"payload":"x","key":""}`, "x", str(""), ""},
		{"not json", `hello`, "", nil, "not a JSON message line"},
		{"a partition not whole", `{"payload":"x","partition":1.0}`, "", nil, "not a JSON message line: partition is the number 1.0, want a whole number"},
		{"a timestamp as a string", `{"payload":"x","timestamp":"100"}`, "", nil, "not a JSON message line: timestamp is a string, want a whole number"},
		{"a key as a number", `{"payload":"x","key":42}`, "", nil, "not a JSON message line: key is a number, want a string"},
		{"no payload", `{"topic":"t"}`, "", nil, "no payload field"},
		{"unknown encoding", `{"payload":"x","payload_encoding":"rot13"}`, "", nil, "rot13"},
		{"bad base64", `{"payload":"!!","payload_encoding":"base64"}`, "", nil, "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, key, err := ParseJSONLine([]byte(tt.line))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if (key == nil) != (tt.key == nil) || (key != nil && *key != *tt.key) {
				t.Errorf("key %v, want %v", key, tt.key)
			}
		})
	}
}
