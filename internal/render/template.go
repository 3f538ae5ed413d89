package render

import (
	"reflect"
	"strings"
	"time"

	"github.com/narad/narad/internal/client"
)

// templateData is what a --template sees. Key and Payload are decoded text, escaped like
// the text format, because a template's output is read on a terminal as often as the
// text line is; Topic and ReceiptHandle are escaped too, since they come from the node.
type templateData struct {
	Topic     string
	Partition int
	Offset    int64
	// Key is empty when the message has none.
	Key string
	// Payload is the text format's payload, except that a binary payload is its escaped
	// bytes instead of a summary: a template asks for the content.
	Payload       string
	Timestamp     int64
	Time          time.Time
	ReceiptHandle string
}

// TemplateFields lists what a template can use (".Topic .Partition ..."), for help
// and errors; read from templateData so that it cannot fall behind.
func TemplateFields() string {
	t := reflect.TypeFor[templateData]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = "." + t.Field(i).Name
	}
	return strings.Join(names, " ")
}

// sampleData is the message a template is tried on in New.
func sampleData() templateData {
	return templateData{
		Topic:         "orders",
		Partition:     4,
		Offset:        0,
		Key:           "customer-42",
		Payload:       `{"order_id": "ord_123", "amount": 4999}`,
		Timestamp:     1790623277,
		Time:          time.Unix(1790623277, 0).UTC(),
		ReceiptHandle: "4:0:3327358780392153864",
	}
}

// sliceWriter lets a template execute straight into the caller's buffer.
type sliceWriter []byte

func (w *sliceWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

func (r *Renderer) appendTemplate(dst []byte, m *client.Message) ([]byte, error) {
	d := templateData{
		Topic:         Escape(m.Topic),
		Partition:     m.Partition,
		Offset:        m.Offset,
		Timestamp:     m.Timestamp,
		Time:          time.Unix(m.Timestamp, 0).In(r.loc),
		ReceiptHandle: Escape(m.ReceiptHandle),
	}
	kb, _, err := appendKeyText(nil, m, false)
	if err != nil {
		return dst, err
	}
	d.Key = string(kb)
	pb, err := appendPayloadText(nil, m, false)
	if err != nil {
		return dst, err
	}
	d.Payload = string(pb)

	w := sliceWriter(dst)
	if err := r.tmpl.Execute(&w, d); err != nil {
		return dst, err
	}
	dst = []byte(w)
	if !r.tmplNL {
		dst = append(dst, '\n')
	}
	return dst, nil
}
