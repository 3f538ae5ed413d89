package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/narad/narad/internal/client"
)

// The benchmarks reuse one buffer, as the consumer does, so they measure the steady
// state of printing a stream.

func benchAppend(b *testing.B, o Options, m *client.Message) {
	r := mustNew(b, o)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Payload)))
	for b.Loop() {
		var err error
		buf, err = r.Append(buf[:0], m)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendText(b *testing.B) {
	benchAppend(b, Options{Location: seedZone}, seedMsg())
}

func BenchmarkAppendJSON(b *testing.B) {
	benchAppend(b, Options{Format: JSON}, seedMsg())
}

func BenchmarkAppendTextString(b *testing.B) {
	m := with(func(m *client.Message) { m.Payload = json.RawMessage(`"a \u003c b, \u00e9t\u00e9"`) })
	benchAppend(b, Options{Location: seedZone}, m)
}

func BenchmarkAppendTextBinary(b *testing.B) {
	benchAppend(b, Options{Location: seedZone}, binaryMsg(make([]byte, 64<<10)))
}

func BenchmarkAppendTextColor(b *testing.B) {
	benchAppend(b, Options{Location: seedZone, Color: true}, seedMsg())
}

func BenchmarkAppendRaw(b *testing.B) {
	benchAppend(b, Options{Format: Raw}, binaryMsg(make([]byte, 1024)))
}

func BenchmarkAppendTemplate(b *testing.B) {
	benchAppend(b, Options{Format: Template, Template: "{{.Partition}} {{.Offset}} {{.Key}} {{.Payload}}\n", Location: seedZone}, seedMsg())
}

// A larger JSON document (ASCII) and a text of non-ASCII letters: the scan for what
// must be escaped runs over every byte of both.
func BenchmarkAppendJSONDocument(b *testing.B) {
	doc := `{"items":[` + strings.Repeat(`{"sku":"A-1029","qty":3,"note":"leave at the door"},`, 80) + `{}]}`
	benchAppend(b, Options{Format: JSON}, with(func(m *client.Message) { m.Payload = json.RawMessage(doc) }))
}

func BenchmarkAppendJSONUnicodeText(b *testing.B) {
	text := `"` + strings.Repeat("日本語のテキスト、ελληνικά, кириллица. ", 60) + `"`
	benchAppend(b, Options{Format: JSON}, with(func(m *client.Message) { m.Payload = json.RawMessage(text) }))
}

// --jq's per-message path against -o json's (BenchmarkAppendJSON): the message's
// value built, its payload decoded once, the expression run, the result written.
func BenchmarkAppendJQField(b *testing.B) {
	q, err := CompileJQ(".payload.order_id")
	if err != nil {
		b.Fatal(err)
	}
	benchAppend(b, Options{Format: JSON, JQ: q}, seedMsg())
}

func BenchmarkAppendJQIdentity(b *testing.B) {
	q, err := CompileJQ(".")
	if err != nil {
		b.Fatal(err)
	}
	benchAppend(b, Options{Format: JSON, JQ: q}, seedMsg())
}

func BenchmarkAppendTemplateField(b *testing.B) {
	benchAppend(b, Options{Format: Template, Template: "{{.Payload.order_id}}\n", Location: seedZone}, seedMsg())
}
