package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/textenc"
)

// seedZone makes the seed guide's example come out as printed there: its timestamp
// 1790623277 is 19:21:17 UTC and the guide shows 03:06:49, seven hours, 45 minutes and
// 32 seconds later.
var seedZone = time.FixedZone("seed", 7*3600+45*60+32)

const seedHandle = "4:0:3327358780392153864"

func ptr(s string) *string { return &s }

// seedMsg is the message of the consuming guide, payload with its whitespace.
func seedMsg() *client.Message {
	return &client.Message{
		Topic:         "orders",
		Partition:     4,
		Offset:        0,
		Key:           ptr("customer-42"),
		Payload:       json.RawMessage(`{"order_id": "ord_123", "amount": 4999}`),
		Timestamp:     1790623277,
		ReceiptHandle: seedHandle,
	}
}

// with returns the seed message changed by f.
func with(f func(m *client.Message)) *client.Message {
	m := seedMsg()
	f(m)
	return m
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// binaryMsg is a message whose produced bytes were not text.
func binaryMsg(data []byte) *client.Message {
	return with(func(m *client.Message) {
		m.Payload = json.RawMessage(`"` + base64.StdEncoding.EncodeToString(data) + `"`)
		m.PayloadEncoding = "base64"
	})
}

func mustNew(t testing.TB, o Options) *Renderer {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return r
}

func render(t testing.TB, r *Renderer, m *client.Message) string {
	t.Helper()
	out, err := r.Append(nil, m)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return string(out)
}

func TestText(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
	long := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 750) // 3000 bytes: several decode chunks
	// A base64 payload with a line break in it, long enough that the chunked decode
	// cannot cope and the whole decode has to.
	wrapped := base64.StdEncoding.EncodeToString(long[:900])
	wrapped = wrapped[:4] + `\r\n` + wrapped[4:]

	tests := []struct {
		name string
		m    *client.Message
		want string
	}{
		{"seed guide line", seedMsg(),
			`[p4 @0] key=customer-42 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"no key", with(func(m *client.Message) { m.Key = nil }),
			`[p4 @0] 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"empty key is still a key", with(func(m *client.Message) { m.Key = ptr("") }),
			`[p4 @0] key= 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"partition and offset", with(func(m *client.Message) { m.Partition, m.Offset = 11, 1234567 }),
			`[p11 @1234567] key=customer-42 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"text payload", with(func(m *client.Message) { m.Payload = json.RawMessage(`"hello world"`) }),
			"[p4 @0] key=customer-42 03:06:49 hello world\n"},
		{"produced JSON string prints as its text", with(func(m *client.Message) { m.Payload = json.RawMessage(`"hi"`) }),
			"[p4 @0] key=customer-42 03:06:49 hi\n"},
		{"JSON string with escapes", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"a \u003c b \"q\" \\ \/ \u00e9 \ud83d\ude00"`)
		}), "[p4 @0] key=customer-42 03:06:49 a < b \"q\" \\ / é 😀\n"},
		{"JSON number", with(func(m *client.Message) { m.Payload = json.RawMessage(`42`) }),
			"[p4 @0] key=customer-42 03:06:49 42\n"},
		{"JSON array and literals verbatim", with(func(m *client.Message) { m.Payload = json.RawMessage(`[1, true, null]`) }),
			"[p4 @0] key=customer-42 03:06:49 [1, true, null]\n"},
		{"multi-line JSON compacted", with(func(m *client.Message) {
			m.Payload = json.RawMessage("{\n  \"order_id\": \"ord_123\",\n  \"amount\": 4999\n}")
		}), `[p4 @0] key=customer-42 03:06:49 {"order_id":"ord_123","amount":4999}` + "\n"},
		{"CRLF JSON compacted", with(func(m *client.Message) {
			m.Payload = json.RawMessage("[\r\n  1,\r\n  2\r\n]\r\n")
		}), "[p4 @0] key=customer-42 03:06:49 [1,2]\n"},
		{"trailing newline only", with(func(m *client.Message) { m.Payload = json.RawMessage("{\"a\": 1}\n") }),
			"[p4 @0] key=customer-42 03:06:49 {\"a\":1}\n"},
		{"binary short", binaryMsg([]byte("\x89PNG\r\n\x1a\n")),
			"[p4 @0] key=customer-42 03:06:49 (binary, 8 bytes) 89504e470d0a1a0a\n"},
		{"binary exactly 16 bytes has no ellipsis", binaryMsg(png[:16]),
			"[p4 @0] key=customer-42 03:06:49 (binary, 16 bytes) 89504e470d0a1a0a0000000d49484452\n"},
		{"binary long", binaryMsg(png),
			"[p4 @0] key=customer-42 03:06:49 (binary, 20 bytes) 89504e470d0a1a0a0000000d49484452…\n"},
		{"binary over several chunks", binaryMsg(long),
			"[p4 @0] key=customer-42 03:06:49 (binary, 3000 bytes) deadbeefdeadbeefdeadbeefdeadbeef…\n"},
		{"binary base64 with a line break", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"` + wrapped + `"`)
			m.PayloadEncoding = "base64"
		}), "[p4 @0] key=customer-42 03:06:49 (binary, 900 bytes) deadbeefdeadbeefdeadbeefdeadbeef…\n"},
		{"non-ASCII text unchanged", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"héllo wörld 日本語 😀 ﬁ"`)
			m.Key = ptr("clé-ü")
		}), "[p4 @0] key=clé-ü 03:06:49 héllo wörld 日本語 😀 ﬁ\n"},
		{"non-UTF-8 key escaped", with(func(m *client.Message) {
			m.Key = ptr(b64("\xff\xfeab\x00"))
			m.KeyEncoding = "base64"
		}), `[p4 @0] key=\xff\xfeab\x00 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"older node's raw key bytes escaped", with(func(m *client.Message) { m.Key = ptr("k\x01\xff") }),
			`[p4 @0] key=k\x01\xff 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
	}
	r := mustNew(t, Options{Location: seedZone})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, r, tt.m); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestTextInjection: nothing in a key or payload reaches the terminal as a control
// character, whichever way the node encoded it.
func TestTextInjection(t *testing.T) {
	tests := []struct {
		name string
		m    *client.Message
		want string
	}{
		{"ESC colour in a text payload", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"\u001b[31mred\u001b[0m"`)
		}), `[p4 @0] key=customer-42 03:06:49 \x1b[31mred\x1b[0m` + "\n"},
		{"cursor movement and clear screen", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"\u001b[2J\u001b[H\u001b]0;pwned\u0007"`)
		}), `[p4 @0] key=customer-42 03:06:49 \x1b[2J\x1b[H\x1b]0;pwned\x07` + "\n"},
		{"C1 CSI escaped and raw", with(func(m *client.Message) {
			m.Payload = json.RawMessage("\"\\u009b31m and \xc2\x9b2J\"")
		}), `[p4 @0] key=customer-42 03:06:49 \u009b31m and \u009b2J` + "\n"},
		{"newline, CR, tab, NUL, DEL in text", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"line1\nline2\r\tx\u0000\u007f"`)
		}), `[p4 @0] key=customer-42 03:06:49 line1\nline2\r\tx\x00\x7f` + "\n"},
		{"control characters inside a JSON object", with(func(m *client.Message) {
			m.Payload = json.RawMessage("{\"a\":\t\"\x7f\xc2\x9b\"}")
		}), `[p4 @0] key=customer-42 03:06:49 {"a":\t"\x7f\u009b"}` + "\n"},
		{"JSON escapes shown as written", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`{"a":"\u001b[31m"}`)
		}), `[p4 @0] key=customer-42 03:06:49 {"a":"\u001b[31m"}` + "\n"},
		{"key with ESC, BEL and newline", with(func(m *client.Message) {
			m.Key = ptr("\x1b]0;title\x07\nnext\u009b")
		}), `[p4 @0] key=\x1b]0;title\x07\nnext\u009b 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"bidi override in a text payload", with(func(m *client.Message) {
			m.Payload = json.RawMessage(`"amount: 10\u202e00001\u202c EUR"`)
		}), `[p4 @0] key=customer-42 03:06:49 amount: 10\u202e00001\u202c EUR` + "\n"},
		{"bidi isolates raw in a JSON payload", with(func(m *client.Message) {
			m.Payload = json.RawMessage("{\"user\":\"\u2067admin\u2069\"}")
		}), `[p4 @0] key=customer-42 03:06:49 {"user":"\u2067admin\u2069"}` + "\n"},
		{"zero-width characters in a key", with(func(m *client.Message) {
			m.Key = ptr("cust\u200bomer\ufeff-42\u2060")
		}), `[p4 @0] key=cust\u200bomer\ufeff-42\u2060 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"base64 key with ESC", with(func(m *client.Message) {
			m.Key = ptr(b64("\x1b[1A\xff"))
			m.KeyEncoding = "base64"
		}), `[p4 @0] key=\x1b[1A\xff 03:06:49 {"order_id": "ord_123", "amount": 4999}` + "\n"},
	}
	r := mustNew(t, Options{Location: seedZone})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, r, tt.m)
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			assertInert(t, got[:len(got)-1])
		})
	}
}

// assertInert fails when s holds anything a terminal would act on.
func assertInert(t *testing.T, s string) {
	t.Helper()
	for i, r := range s {
		if r < 0x20 || r == 0x7f || textenc.IsC1(r) || textenc.IsInvisible(r) {
			t.Errorf("control character %U at %d in %q", r, i, s)
		}
	}
}

func TestTextTimeZone(t *testing.T) {
	m := seedMsg()
	tests := []struct {
		o    Options
		want string
	}{
		{Options{UTC: true}, "19:21:17"},
		{Options{UTC: true, Location: seedZone}, "19:21:17"}, // --utc wins
		{Options{Location: time.FixedZone("minus", -5*3600)}, "14:21:17"},
		{Options{Location: seedZone}, "03:06:49"},
	}
	for _, tt := range tests {
		got := render(t, mustNew(t, tt.o), m)
		if want := "[p4 @0] key=customer-42 " + tt.want + " "; !strings.HasPrefix(got, want) {
			t.Errorf("%+v: got %q, want prefix %q", tt.o, got, want)
		}
	}
	// Without a location it is the local time zone.
	want := time.Unix(m.Timestamp, 0).Local().Format("15:04:05")
	if got := render(t, mustNew(t, Options{}), m); !strings.Contains(got, " "+want+" ") {
		t.Errorf("local: got %q, want time %s", got, want)
	}
}

func TestColor(t *testing.T) {
	on := mustNew(t, Options{Location: seedZone, Color: true})
	got := render(t, on, seedMsg())
	want := "\x1b[36m[p4 @0]\x1b[0m \x1b[35mkey=customer-42\x1b[0m \x1b[2m03:06:49\x1b[0m " +
		`{"order_id": "ord_123", "amount": 4999}` + "\n"
	if got != want {
		t.Errorf("colour on:\ngot  %q\nwant %q", got, want)
	}

	// The payload is never styled, and escaping still applies to a styled key.
	got = render(t, on, with(func(m *client.Message) {
		m.Key = ptr("\x1b[0m")
		m.Payload = json.RawMessage(`"\u001b[31m"`)
	}))
	want = "\x1b[36m[p4 @0]\x1b[0m \x1b[35mkey=\\x1b[0m\x1b[0m \x1b[2m03:06:49\x1b[0m \\x1b[31m\n"
	if got != want {
		t.Errorf("colour on, hostile key:\ngot  %q\nwant %q", got, want)
	}

	// No key: no key style either.
	got = render(t, on, with(func(m *client.Message) { m.Key = nil }))
	want = "\x1b[36m[p4 @0]\x1b[0m \x1b[2m03:06:49\x1b[0m " + `{"order_id": "ord_123", "amount": 4999}` + "\n"
	if got != want {
		t.Errorf("colour on, no key:\ngot  %q\nwant %q", got, want)
	}

	off := render(t, mustNew(t, Options{Location: seedZone}), seedMsg())
	if strings.Contains(off, "\x1b") {
		t.Errorf("colour off wrote an escape code: %q", off)
	}
	// Colour is for the text line only.
	for _, f := range []Format{JSON, Raw} {
		out := render(t, mustNew(t, Options{Format: f, Color: true}), seedMsg())
		if strings.Contains(out, "\x1b") {
			t.Errorf("%v with colour wrote an escape code: %q", f, out)
		}
	}
	tm := mustNew(t, Options{Format: Template, Template: "{{.Key}}", Color: true})
	if out := render(t, tm, seedMsg()); out != "customer-42\n" {
		t.Errorf("template with colour: %q", out)
	}
}

// TestColorAffix: wrapping text in a style's affix is what Style.Render makes of it, for
// the styles a text line uses and the texts it styles.
func TestColorAffix(t *testing.T) {
	st := NewStyles(io.Discard, true)
	for name, style := range map[string]lipgloss.Style{"Tag": st.Tag, "Key": st.Key, "Time": st.Time} {
		a := affixOf(style)
		if a.pre == "" || a.post == "" {
			t.Errorf("%s: empty affix %q", name, a)
		}
		for _, s := range []string{"[p4 @0]", "key=customer-42", "key=", "03:06:49", `key=\x1b[2J\n日本 😀`} {
			if got, want := a.pre+s+a.post, style.Render(s); got != want {
				t.Errorf("%s: affix gives %q, Render gives %q", name, got, want)
			}
		}
	}
}

func TestJSON(t *testing.T) {
	pretty := "{\n  \"order_id\": \"ord_123\",\n\t\"amount\": 4999\n}\n"
	tests := []struct {
		name string
		m    *client.Message
		want string
	}{
		{"seed, payload bytes verbatim", seedMsg(),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":{"order_id": "ord_123", "amount": 4999},"timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"odd whitespace kept", with(func(m *client.Message) { m.Payload = json.RawMessage("{ \"a\" :\t[ 1 ,2 ] }") }),
			"{\"topic\":\"orders\",\"partition\":4,\"offset\":0,\"key\":\"customer-42\",\"payload\":{ \"a\" :\t[ 1 ,2 ] },\"timestamp\":1790623277,\"receipt_handle\":\"4:0:3327358780392153864\"}\n"},
		{"replay: no key, no handle", with(func(m *client.Message) { m.Key, m.ReceiptHandle = nil, "" }),
			`{"topic":"orders","partition":4,"offset":0,"payload":{"order_id": "ord_123", "amount": 4999},"timestamp":1790623277}` + "\n"},
		{"text payload", with(func(m *client.Message) { m.Payload = json.RawMessage(`"hello world"`) }),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":"hello world","timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"binary", binaryMsg([]byte("\x89PNG\r\n\x1a\n")),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":"iVBORw0KGgo=","payload_encoding":"base64","timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"base64 key", with(func(m *client.Message) { m.Key, m.KeyEncoding = ptr("//5hYg=="), "base64" }),
			`{"topic":"orders","partition":4,"offset":0,"key":"//5hYg==","key_encoding":"base64","payload":{"order_id": "ord_123", "amount": 4999},"timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"older node's raw key bytes sent base64", with(func(m *client.Message) { m.Key = ptr("\xff\xfeab") }),
			`{"topic":"orders","partition":4,"offset":0,"key":"//5hYg==","key_encoding":"base64","payload":{"order_id": "ord_123", "amount": 4999},"timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"multi-line payload sent base64", with(func(m *client.Message) { m.Payload = json.RawMessage(pretty) }),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":"` + b64(pretty) + `","payload_encoding":"base64","timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"strings escaped for JSON and terminal", with(func(m *client.Message) {
			m.Topic = "t\"\\"
			m.Key = ptr("a\x1b\n\u009b\u2028é")
			m.ReceiptHandle = "h\x7f"
		}), `{"topic":"t\"\\","partition":4,"offset":0,"key":"a\u001b\n\u009b\u2028é","payload":{"order_id": "ord_123", "amount": 4999},"timestamp":1790623277,"receipt_handle":"h\u007f"}` + "\n"},
	}
	r := mustNew(t, Options{Format: JSON})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, r, tt.m)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Count(got, "\n") != 1 || !json.Valid([]byte(got)) {
				t.Errorf("not one valid JSON line: %q", got)
			}
		})
	}
}

// TestJSONRoundTrip: a json line, read back as the API's message, gives the produced
// bytes, which is what `sub -o json | produce --json` relies on.
func TestJSONRoundTrip(t *testing.T) {
	msgs := []*client.Message{
		seedMsg(),
		with(func(m *client.Message) { m.Payload = json.RawMessage("{\n  \"a\": [1,\n 2]\n}\n") }),
		with(func(m *client.Message) { m.Payload = json.RawMessage("\r\n42 ") }),
		with(func(m *client.Message) { m.Payload = json.RawMessage(`"text \u003c"`) }),
		binaryMsg([]byte{0, 1, 2, 0xff}),
	}
	r := mustNew(t, Options{Format: JSON})
	for _, m := range msgs {
		line := render(t, r, m)
		var back client.Message
		if err := json.Unmarshal([]byte(line), &back); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want, err := m.PayloadBytes()
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.PayloadBytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("payload %q came back as %q", want, got)
		}
	}
}

// TestJSONFieldOrder checks the order against the API's, key by key.
func TestJSONFieldOrder(t *testing.T) {
	m := binaryMsg([]byte{1, 2, 3})
	m.Key, m.KeyEncoding = ptr("AQ=="), "base64"
	line := render(t, mustNew(t, Options{Format: JSON}), m)
	var keys []string
	dec := json.NewDecoder(strings.NewReader(line))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := "topic partition offset key key_encoding payload payload_encoding timestamp receipt_handle"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("field order %q, want %q", got, want)
	}
}

func TestRaw(t *testing.T) {
	msgs := []*client.Message{
		seedMsg(),
		with(func(m *client.Message) { m.Payload = json.RawMessage(`"hi"`) }),
		with(func(m *client.Message) { m.Payload = json.RawMessage(`"line\nnext \u00e9 \ud83d\ude00 \ud800"`) }),
		binaryMsg([]byte("\x89PNG\r\n\x00\xff")),
		with(func(m *client.Message) { m.Payload = json.RawMessage("{\n  \"a\": 1\n}") }),
	}
	payloads := `{"order_id": "ord_123", "amount": 4999}|hi|line` + "\nnext é 😀 \uFFFD|\x89PNG\r\n\x00\xff|{\n  \"a\": 1\n}|"
	tests := []struct {
		name  string
		delim []byte
		want  string
	}{
		{"default newline", nil, strings.ReplaceAll(payloads, "|", "\n")},
		{"empty delimiter", []byte{}, strings.ReplaceAll(payloads, "|", "")},
		{"NUL delimiter", []byte{0}, strings.ReplaceAll(payloads, "|", "\x00")},
		{"multi-byte delimiter", []byte("\n---\n"), strings.ReplaceAll(payloads, "|", "\n---\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustNew(t, Options{Format: Raw, Delimiter: tt.delim})
			var out []byte
			for _, m := range msgs {
				var err error
				if out, err = r.Append(out, m); err != nil {
					t.Fatal(err)
				}
			}
			if string(out) != tt.want {
				t.Errorf("got  %q\nwant %q", out, tt.want)
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	tests := []struct {
		name, tmpl string
		m          *client.Message
		want       string
	}{
		{"brief example", "{{.Partition}} {{.Key}} {{.Payload}}", seedMsg(),
			`4 customer-42 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"every field",
			"{{.Topic}} {{.Partition}} {{.Offset}} {{.Key}} {{.Payload}} {{.Timestamp}} {{.Time.Format \"15:04:05\"}} {{.ReceiptHandle}}",
			seedMsg(),
			`orders 4 0 customer-42 {"order_id": "ord_123", "amount": 4999} 1790623277 03:06:49 4:0:3327358780392153864` + "\n"},
		{"Time is a time.Time in the chosen zone", "{{.Time}}", seedMsg(), "2026-09-29 03:06:49 +0745 seed\n"},
		{"ending newline not doubled", "{{.Offset}}\n", seedMsg(), "0\n"},
		{"no key is empty", "[{{.Key}}]{{if not .Key}} none{{end}}", with(func(m *client.Message) { m.Key = nil }), "[] none\n"},
		{"text payload decoded", "{{.Payload}}", with(func(m *client.Message) { m.Payload = json.RawMessage(`"hi \u003c"`) }), "hi <\n"},
		{"multi-line JSON compacted", "{{.Payload}}", with(func(m *client.Message) { m.Payload = json.RawMessage("{\n \"a\": 1\n}") }), "{\"a\":1}\n"},
		{"binary payload as escaped bytes", "{{.Payload}}", binaryMsg([]byte("ab\x00\xff")), `ab\x00\xff` + "\n"},
		{"injection escaped", "{{.Key}}|{{.Payload}}", with(func(m *client.Message) {
			m.Key = ptr("\x1b[2J")
			m.Payload = json.RawMessage(`"\u001b]0;x\u0007\n"`)
		}), `\x1b[2J|\x1b]0;x\x07\n` + "\n"},
		{"base64 key decoded", "{{.Key}}", with(func(m *client.Message) { m.Key, m.KeyEncoding = ptr(b64("\xffk")), "base64" }), `\xffk` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustNew(t, Options{Format: Template, Template: tt.tmpl, Location: seedZone})
			if got := render(t, r, tt.m); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"template parse error", Options{Format: Template, Template: "{{.Partition"}, "unclosed action"},
		{"unknown field", Options{Format: Template, Template: "{{.Partiton}}"}, "can't evaluate field Partiton"},
		{"empty template", Options{Format: Template}, "empty template"},
		{"template with another format", Options{Format: JSON, Template: "{{.Key}}"}, "cannot be combined"},
		{"unknown format", Options{Format: Format(42)}, "unknown output format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want error containing %q", r, err, tt.want)
			}
		})
	}
}

// A template error is worded for its writer: where in the template, and what kind of
// value was asked for a field, never a Go type of this package; at run time it still
// unwraps to text/template's ExecError.
func TestTemplateErrorsNameNoGoTypes(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{{.Nope}}":           "<.Nope> (line 1, column 2): can't evaluate field Nope in a message",
		"{{.Offset.X}}":       "<.Offset.X> (line 1, column 9): can't evaluate field X in a number",
		"a\n{{.Partition.X}}": "<.Partition.X> (line 2, column 12): can't evaluate field X in a number",
		"{{.Time.X}}":         "<.Time.X> (line 1, column 7): can't evaluate field X in a time",
		"{{nosuch}}":          `line 1: function "nosuch" not defined`,
		"{{":                  "line 1: unclosed action",
	} {
		_, err := New(Options{Format: Template, Template: tmpl})
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", tmpl, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "render.") || strings.Contains(err.Error(), "templateData") ||
			strings.Contains(err.Error(), `"template"`)) {
			t.Errorf("%q: %v names Go internals", tmpl, err)
		}
	}

	// Passes the sample, fails on a real message: a short payload.
	r := mustNew(t, Options{Format: Template, Template: "{{slice .Payload 0 3}}"})
	m := &client.Message{Topic: "t", Payload: json.RawMessage(`"ab"`)}
	_, err := r.Append(nil, m)
	var execErr template.ExecError
	if err == nil || !errors.As(err, &execErr) || strings.Contains(err.Error(), "templateData") {
		t.Errorf("run-time error %v: want a worded text/template ExecError", err)
	}
}

// TestAppendErrors: a message that cannot be rendered is an error naming it, and dst
// comes back as it was, so nothing half-written reaches the output.
func TestAppendErrors(t *testing.T) {
	tests := []struct {
		name string
		m    *client.Message
		want string
	}{
		{"no payload", with(func(m *client.Message) { m.Payload = nil }), "p4 @0: message has no payload"},
		{"blank payload", with(func(m *client.Message) { m.Payload = json.RawMessage(" ") }), "no payload"},
		{"unknown payload encoding", with(func(m *client.Message) { m.PayloadEncoding = "zstd" }), `unknown payload_encoding "zstd"`},
		{"invalid base64 payload", with(func(m *client.Message) {
			m.Payload, m.PayloadEncoding = json.RawMessage(`"!!!!"`), "base64"
		}), "payload is not valid base64"},
		{"invalid base64 key", with(func(m *client.Message) { m.KeyEncoding = "base64" }), "key is not valid base64"},
		{"unknown key encoding", with(func(m *client.Message) { m.KeyEncoding = "hex" }), `unknown key_encoding "hex"`},
	}
	prefix := []byte("earlier record\n")
	for _, f := range []Format{Text, Raw, Template} {
		o := Options{Format: f}
		if f == Template {
			o.Template = "{{.Key}} {{.Payload}}"
		}
		r := mustNew(t, o)
		for _, tt := range tests {
			if f == Raw && strings.Contains(tt.name, "key") {
				continue // raw output does not show keys
			}
			if f == Text && strings.Contains(tt.name, "unknown") {
				continue // the text line shows it as such: TestUnknownEncodingShownAsSuch
			}
			t.Run(f.String()+"/"+tt.name, func(t *testing.T) {
				dst := append([]byte(nil), prefix...)
				out, err := r.Append(dst, tt.m)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %v, want %q", err, tt.want)
				}
				if string(out) != string(prefix) {
					t.Errorf("dst changed: %q", out)
				}
			})
		}
	}
	// json writes what the API gave, encodings it does not know included, but never a
	// line that is not JSON.
	j := mustNew(t, Options{Format: JSON})
	for _, m := range []*client.Message{
		with(func(m *client.Message) { m.Payload = nil }),
		with(func(m *client.Message) { m.Payload = json.RawMessage(`{"a":`) }),
	} {
		if out, err := j.Append(prefix, m); err == nil || string(out) != string(prefix) {
			t.Errorf("json %q: %q, %v", m.Payload, out, err)
		}
	}
	if _, err := j.Append(nil, nil); err == nil {
		t.Error("nil message accepted")
	}
}

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]Format{"": Text, "text": Text, "json": JSON, "raw": Raw} {
		if got, err := ParseFormat(s); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"JSON", "yaml", "template", " text"} {
		if _, err := ParseFormat(s); err == nil {
			t.Errorf("ParseFormat(%q) accepted", s)
		}
	}
	if got := Template.String(); got != "template" {
		t.Errorf("Template.String() = %q", got)
	}
}

// TestConcurrentAppend: one Renderer serves several goroutines (run with -race).
func TestConcurrentAppend(t *testing.T) {
	for _, o := range []Options{
		{Location: seedZone, Color: true},
		{Format: Template, Template: "{{.Key}} {{.Payload}}"},
	} {
		r := mustNew(t, o)
		want := render(t, r, seedMsg())
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf []byte
				for range 100 {
					out, err := r.Append(buf[:0], seedMsg())
					if err != nil || string(out) != want {
						t.Errorf("got %q, %v", out, err)
						return
					}
					buf = out
				}
			}()
		}
		wg.Wait()
	}
}

// TestJSONPayloadC1 checks that a payload holding a C1 control (U+009B is CSI to a
// terminal that acts on C1) does not reach the terminal raw from -o json, and that
// the line still gives back the produced bytes.
func TestJSONPayloadC1(t *testing.T) {
	obj := "{\"k\":\"x\u009b2Jy\"}"
	tests := []struct {
		name string
		m    *client.Message
		want string
	}{
		{"text payload: the same string, escaped", with(func(m *client.Message) { m.Payload = json.RawMessage("\"p\u009b31my\"") }),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":"p\u009b31my","timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
		{"JSON value: its exact bytes, base64", with(func(m *client.Message) { m.Payload = json.RawMessage(obj) }),
			`{"topic":"orders","partition":4,"offset":0,"key":"customer-42","payload":"` + b64(obj) + `","payload_encoding":"base64","timestamp":1790623277,"receipt_handle":"4:0:3327358780392153864"}` + "\n"},
	}
	r := mustNew(t, Options{Format: JSON})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, r, tt.m)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, "\u009b") {
				t.Errorf("raw C1 in %q", got)
			}
			var back client.Message
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatal(err)
			}
			want, _ := tt.m.PayloadBytes()
			if b, err := back.PayloadBytes(); err != nil || !bytes.Equal(b, want) {
				t.Errorf("payload %q came back as %q (%v)", want, b, err)
			}
		})
	}
}

// TestUnknownEncodingShownAsSuch: an encoding this client does not know is named on the
// text line, never guessed at; raw output and a template, which promise the content,
// refuse the message with an error naming it (it is then given back).
func TestUnknownEncodingShownAsSuch(t *testing.T) {
	zstd := with(func(m *client.Message) {
		m.Payload = json.RawMessage(`"KLUv/QBYAQAA"`)
		m.PayloadEncoding = "zstd"
	})
	text := mustNew(t, Options{Location: seedZone})
	if got, want := render(t, text, zstd), `[p4 @0] key=customer-42 03:06:49 (unknown payload_encoding "zstd")`+"\n"; got != want {
		t.Errorf("text:\ngot  %q\nwant %q", got, want)
	}
	hostile := with(func(m *client.Message) {
		m.PayloadEncoding = "\x1b[2J\u202e"
		m.Key, m.KeyEncoding = ptr("a"), "rot13"
	})
	got := render(t, text, hostile)
	if want := `[p4 @0] key=(unknown key_encoding "rot13") 03:06:49 (unknown payload_encoding "\x1b[2J\u202e")` + "\n"; got != want {
		t.Errorf("text, hostile encoding names:\ngot  %q\nwant %q", got, want)
	}
	for _, o := range []Options{{Format: Raw}, {Format: Template, Template: "{{.Payload}}"}} {
		out, err := mustNew(t, o).Append([]byte("before"), zstd)
		if err == nil || !strings.Contains(err.Error(), `unknown payload_encoding "zstd"`) || string(out) != "before" {
			t.Errorf("%v: %q, %v; want an error naming the encoding and nothing written", o.Format, out, err)
		}
	}
	// Unpadded base64 is not the API's: text refuses it as the decoder does, rather
	// than show bytes another part of narad would not agree with.
	unpadded := with(func(m *client.Message) { m.Payload, m.PayloadEncoding = json.RawMessage(`"AAE"`), "base64" })
	if _, err := text.Append(nil, unpadded); err == nil {
		t.Error("text accepted unpadded base64")
	}
	if _, err := unpadded.PayloadBytes(); err == nil {
		t.Error("PayloadBytes accepted unpadded base64")
	}
}

// TestRawEscapedForATerminal: -o raw to a terminal escapes what text output escapes;
// the delimiter is still written as given.
func TestRawEscapedForATerminal(t *testing.T) {
	m := with(func(m *client.Message) { m.Payload = json.RawMessage(`"\u001b]0;pwned\u0007\u001b[2J\u202eok\nnext"`) })
	esc := mustNew(t, Options{Format: Raw, EscapeRaw: true})
	if got, want := render(t, esc, m), `\x1b]0;pwned\x07\x1b[2J\u202eok\nnext`+"\n"; got != want {
		t.Errorf("escaped raw:\ngot  %q\nwant %q", got, want)
	}
	exact := mustNew(t, Options{Format: Raw})
	if got, want := render(t, exact, m), "\x1b]0;pwned\x07\x1b[2J\u202eok\nnext\n"; got != want {
		t.Errorf("raw:\ngot  %q\nwant %q", got, want)
	}
}
