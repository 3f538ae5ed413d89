package render

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

// The characters that reorder or hide what is read, or that a terminal acts on, and
// that JSON allows raw in a string.
var hidden = []rune{0x7f, 0x9b, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
	0x200b, 0x200c, 0x200d, 0xfeff, 0x200e, 0x061c, 0x2028}

func rawHidden(b []byte) string {
	for _, r := range hidden {
		if strings.ContainsRune(string(b), r) {
			return string(r)
		}
	}
	return ""
}

// -o json writes each of them as a \u escape, in keys and in text payloads, and a
// JSON document holding one goes base64: the line stays valid JSON with the same
// value, and none of them reaches a terminal raw.
func TestJSONWritesHiddenCharactersEscaped(t *testing.T) {
	r := mustNew(t, Options{Format: JSON})
	for _, c := range hidden {
		s := "pay" + string(c) + "load"
		for _, m := range []*client.Message{
			with(func(m *client.Message) { m.Key = ptr("key" + string(c)) }),
			with(func(m *client.Message) { q, _ := json.Marshal(s); m.Payload = q }),
			with(func(m *client.Message) { m.Payload = json.RawMessage(`{"note":"` + s + `"}`) }),
		} {
			out, err := r.Append(nil, m)
			if err != nil {
				t.Fatalf("U+%04X: %v", c, err)
			}
			if raw := rawHidden(out); raw != "" {
				t.Errorf("U+%04X: written raw: %q", c, out)
			}
			var got struct {
				Key             string          `json:"key"`
				Payload         json.RawMessage `json:"payload"`
				PayloadEncoding string          `json:"payload_encoding"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("U+%04X: not JSON: %v: %q", c, err, out)
			}
			if got.Key != *m.Key {
				t.Errorf("U+%04X: key %q; want %q", c, got.Key, *m.Key)
			}
			var want, have any
			json.Unmarshal(m.Payload, &want)
			if got.PayloadEncoding == "base64" {
				var b64 string
				json.Unmarshal(got.Payload, &b64)
				dec, _ := base64.StdEncoding.DecodeString(b64)
				json.Unmarshal(dec, &have)
			} else {
				json.Unmarshal(got.Payload, &have)
			}
			if w, _ := json.Marshal(want); string(w) != mustMarshal(have) {
				t.Errorf("U+%04X: payload %s; want %s", c, mustMarshal(have), w)
			}
		}
	}
}

func mustMarshal(v any) string { b, _ := json.Marshal(v); return string(b) }

// textenc.InertJSON, which every other -o json document goes through, escapes them too and
// leaves everything else, bytes that are not UTF-8 included, as it was.
func TestInertJSONEscapesHiddenCharacters(t *testing.T) {
	for _, c := range hidden {
		in, _ := json.Marshal(map[string]string{"name" + string(c): "v" + string(c) + "é日"})
		out := textenc.InertJSON(in)
		if raw := rawHidden(out); raw != "" {
			t.Errorf("U+%04X: written raw: %q", c, out)
		}
		var a, b map[string]string
		if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil || mustMarshal(a) != mustMarshal(b) {
			t.Errorf("U+%04X: %q became %q", c, in, out)
		}
	}
	for _, clean := range []string{`{"a":"plain ascii, long enough to pass a word at a time"}`, `"é日本\xff"`} {
		if out := textenc.InertJSON([]byte(clean)); string(out) != clean {
			t.Errorf("%q became %q", clean, out)
		}
	}
}
