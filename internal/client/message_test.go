package client

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPayloadBytes(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		enc     string
		want    string
		kind    PayloadKind
	}{
		{"JSON object raw", `{"a": 1}`, "", `{"a": 1}`, PayloadJSON},
		{"multi-line JSON exact", "{\n \"a\": 1\n}\n", "", "{\n \"a\": 1\n}\n", PayloadJSON},
		{"JSON string text", `"hi"`, "", "hi", PayloadText},
		{"JSON string with space around", " \"hi\"\n", "", "hi", PayloadText},
		{"JSON string escapes", `"\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00"`, "", "\"\\/\b\f\n\r\tAé😀", PayloadText},
		{"lone surrogates", `"\ud800x\udc00\ud800\u0041"`, "", "\uFFFDx\uFFFD\uFFFDA", PayloadText},
		{"invalid UTF-8 kept as it came", "\"a\xffb\"", "", "a\xffb", PayloadText},
		{"base64", `"AAH/"`, "base64", "\x00\x01\xff", PayloadBinary},
		{"base64 with escaped slash", `"\/\/8="`, "base64", "\xff\xff", PayloadBinary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Message{Payload: json.RawMessage(tt.payload), PayloadEncoding: tt.enc}
			got, err := m.PayloadBytes()
			if err != nil || string(got) != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
			if kind, err := m.PayloadKind(); err != nil || kind != tt.kind {
				t.Errorf("kind %v, %v; want %v", kind, err, tt.kind)
			}
			// Appending keeps what was there and adds the same bytes.
			out, _, err := m.AppendPayload([]byte("pre:"))
			if err != nil || string(out) != "pre:"+tt.want {
				t.Errorf("AppendPayload = %q, %v", out, err)
			}
		})
	}
}

// TestPayloadBytesStrict: one decoder, and a strict one. Unpadded base64 is not the
// API's encoding, and an encoding this client does not know is an error naming it,
// never a guess.
func TestPayloadBytesStrict(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		enc     string
		want    string // in the error
	}{
		{"unpadded base64", `"AAE"`, "base64", "base64"},
		{"URL-safe base64", `"-_8="`, "base64", "base64"},
		{"base64 that is not a string", `12`, "base64", "not a JSON string"},
		{"unknown encoding", `"KLUv/QBYAQAA"`, "zstd", `unknown payload_encoding "zstd"`},
		{"no payload", ``, "", "no payload"},
		{"bad escape", `"\x"`, "", "not a valid JSON string"},
		{"short unicode escape", `"\u12"`, "", "not a valid JSON string"},
		{"quote inside", `"a"b"`, "", "not a valid JSON string"},
		{"unterminated escape", `"\`, "", "not a valid JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Message{Payload: json.RawMessage(tt.payload), PayloadEncoding: tt.enc}
			got, err := m.PayloadBytes()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("PayloadBytes = %q, %v; want an error with %q", got, err, tt.want)
			}
			out, _, err2 := m.AppendPayload([]byte("pre"))
			if err2 == nil || string(out) != "pre" {
				t.Errorf("AppendPayload on error = %q, %v: want dst unchanged", out, err2)
			}
		})
	}
	var ue *UnknownEncodingError
	_, err := (&Message{Payload: json.RawMessage(`"x"`), PayloadEncoding: "zstd"}).PayloadKind()
	if !errors.As(err, &ue) || ue.Field != "payload_encoding" || ue.Value != "zstd" {
		t.Errorf("PayloadKind: %v, want an *UnknownEncodingError", err)
	}
}

func TestKeyBytes(t *testing.T) {
	k := func(s string) *string { return &s }
	tests := []struct {
		name    string
		key     *string
		enc     string
		want    string
		ok      bool
		wantErr string
	}{
		{"no key", nil, "", "", false, ""},
		{"empty key", k(""), "", "", true, ""},
		{"text key", k("customer-42"), "", "customer-42", true, ""},
		{"base64 key", k("//5hYg=="), "base64", "\xff\xfeab", true, ""},
		{"unpadded base64 key", k("//5hYg"), "base64", "", true, "base64"},
		{"unknown key encoding", k("x"), "rot13", "", true, `unknown key_encoding "rot13"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Message{Key: tt.key, KeyEncoding: tt.enc}
			got, ok, err := m.KeyBytes()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("KeyBytes = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.ok || string(got) != tt.want {
				t.Errorf("KeyBytes = %q, %v, %v; want %q, %v", got, ok, err, tt.want, tt.ok)
			}
		})
	}
}

// A key passed on keeps what can be read of it: decoded when it can be, the node's own
// text when it cannot, nothing when there is none.
func TestForwardKey(t *testing.T) {
	k := func(s string) *string { return &s }
	tests := []struct {
		name string
		key  *string
		enc  string
		want *string
	}{
		{"no key", nil, "", nil},
		{"empty key", k(""), "", k("")},
		{"text key", k("customer-42"), "", k("customer-42")},
		{"base64 key", k("//5hYg=="), "base64", k("\xff\xfeab")},
		{"bad base64 key", k("//5hYg"), "base64", k("//5hYg")},
		{"unknown key encoding", k("x"), "rot13", k("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Message{Key: tt.key, KeyEncoding: tt.enc}
			got := m.ForwardKey()
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("ForwardKey = %s; want %s", show(got), show(tt.want))
			}
			if got != nil && got == m.Key {
				t.Errorf("ForwardKey returned the message's own key; want a copy")
			}
		})
	}
}

func show(p *string) string {
	if p == nil {
		return "nil"
	}
	return strconv.Quote(*p)
}

// FuzzJSONText: our unquoting agrees with encoding/json on every valid JSON string.
func FuzzJSONText(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800\u0041"`, `"\udc00"`, `"\/\b\f\n\r\t\"\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var want string
		m := &Message{Payload: json.RawMessage(q)}
		if kind, err := m.PayloadKind(); err != nil || kind != PayloadText {
			return
		}
		if json.Unmarshal([]byte(q), &want) != nil || !utf8.ValidString(q) {
			return // encoding/json replaces invalid UTF-8, which we keep on purpose
		}
		got, err := m.PayloadBytes()
		if err != nil || string(got) != want {
			t.Fatalf("PayloadBytes(%s) = %q, %v; encoding/json says %q", q, got, err, want)
		}
	})
}

func TestLoneSurrogate(t *testing.T) {
	for q, want := range map[string]string{
		`"\ud800"`:          `\ud800`,
		`"a\uDC00b"`:        `\uDC00`,
		`"\ud83d\ude00"`:    "",
		`"\ud83d\u0041"`:    `\ud83d`,
		`"\\ud800"`:         "",
		`"\\\ud800"`:        `\ud800`,
		`"plain"`:           "",
		`{"a":"\ud83d"}`:    `\ud83d`,
		`"\ud83d\ude00\ud"`: "",
	} {
		if got := LoneSurrogate([]byte(q)); got != want {
			t.Errorf("LoneSurrogate(%s) = %q; want %q", q, got, want)
		}
	}
}
