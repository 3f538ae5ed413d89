package render

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"sync"
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
	// Payload is, for a JSON object payload, its fields: {{.Payload.order_id}}. Where
	// a template writes .Payload itself (printed, or handed to a function), it reads
	// PayloadText instead (see payloadText): so {{.Payload}} is what it always was.
	Payload       any
	Timestamp     int64
	Time          time.Time
	ReceiptHandle string
	// PayloadText is the text format's payload, except that a binary payload is its
	// escaped bytes instead of a summary: a template asks for the content.
	PayloadText string `template:"-"`
}

// TemplateFields lists what a template can use (".Topic .Partition ..."), for help
// and errors; read from templateData so that it cannot fall behind.
func TemplateFields() string {
	t := reflect.TypeFor[templateData]()
	var names []string
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("template") != "-" {
			names = append(names, "."+f.Name)
		}
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
		Payload:       jsonObject{"order_id": "ord_123", "amount": json.Number("4999")},
		PayloadText:   `{"order_id": "ord_123", "amount": 4999}`,
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
	d.PayloadText = string(pb)
	d.Payload = d.PayloadText
	if r.tmplFields {
		d.Payload = payloadFields(m, d.PayloadText)
	}

	w := sliceWriter(dst)
	if err := r.tmpl.Execute(&w, d); err != nil {
		return dst, templateErr(err)
	}
	dst = []byte(w)
	if !r.tmplNL {
		dst = append(dst, '\n')
	}
	return dst, nil
}

// readsPayloadFields reports whether a sample run's error is in an action that
// reads the payload's fields (.Payload.items, index .Payload 0), which the sample's
// payload need not have.
func readsPayloadFields(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, ".Payload.") || strings.Contains(msg, ".Payload ") || strings.Contains(msg, ".Payload>")
}

// templateError words a text/template error for the person who wrote the
// template: where in it, and what kind of value a field was asked of, never a Go
// type name of ours. It unwraps to the original (the CLI tells a template that
// failed from a node that could not be reached by it).
type templateError struct {
	err error
	msg string
}

func (e *templateError) Error() string { return e.msg }
func (e *templateError) Unwrap() error { return e.err }

// templatePlace matches the prefix text/template puts on its errors:
// `template: template:1:2: executing "template" at <.Nope>: ` (column and action
// only when executing). Compiled on the first error, not at every start.
var templatePlace = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^template: template:(\d+)(?::(\d+))?: (?:executing "template" at (<.*?>): )?`)
})

// templateKinds names the values a template sees by what they are to its writer.
var templateKinds = strings.NewReplacer(
	// The payload's text as a template reads it (see payloadText) is .Payload to
	// the one who wrote it.
	".PayloadText", ".Payload",
	" in type render.templateData", " in a message",
	" in type interface {}", " in a value that is not a JSON object",
	" in type render.jsonObject", " in a JSON object",
	" in type render.jsonArray", " in a JSON array",
	" in type json.Number", " in a number",
	" in type bool", " in true or false",
	" in type string", " in text",
	" in type int64", " in a number",
	" in type int", " in a number",
	" in type time.Time", " in a time",
)

func templateErr(err error) error {
	msg := err.Error()
	if m := templatePlace().FindStringSubmatch(msg); m != nil {
		place := "line " + m[1]
		if m[2] != "" {
			place += ", column " + m[2]
		}
		if m[3] != "" {
			place = m[3] + " (" + place + ")"
		}
		msg = place + ": " + msg[len(m[0]):]
	}
	return &templateError{err: err, msg: templateKinds.Replace(msg)}
}
