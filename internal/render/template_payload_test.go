package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/narad/narad/internal/client"
)

// A template reads a JSON payload's fields, while .Payload alone prints what it
// always printed.
func TestTemplatePayloadFields(t *testing.T) {
	order := &client.Message{Topic: "t", Payload: json.RawMessage(
		`{"order_id": "ord_7", "amount": 12345678901234567890, "customer": {"name": "Ana"}, "items": ["a", "b"], "note": "\u001b[2J"}`)}
	text := &client.Message{Topic: "t", Payload: json.RawMessage(`"hello"`)}
	dashed := &client.Message{Topic: "t", Payload: json.RawMessage(`{"order-id": "o-1", "order_id": "ord_9"}`)}
	array := &client.Message{Topic: "t", Payload: json.RawMessage(`[10, 20]`)}
	odd := &client.Message{Topic: "t", Payload: json.RawMessage(`{"odd": {"\u001b]0;title\u0007": 1}}`)}
	for _, tc := range []struct {
		name, tmpl string
		m          *client.Message
		want       string
	}{
		{"field", "{{.Payload.order_id}}", seedMsg(), "ord_123\n"},
		{"payload alone as before", "{{.Payload}}", seedMsg(), `{"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"both", "{{.Payload.order_id}} {{.Payload}}", seedMsg(), `ord_123 {"order_id": "ord_123", "amount": 4999}` + "\n"},
		{"a function of the payload as before", "{{slice .Payload 0 5}}", seedMsg(), `{"ord` + "\n"},
		{"nested", "{{.Payload.customer.name}}", order, "Ana\n"},
		{"number keeps its digits", "{{.Payload.amount}}", order, "12345678901234567890\n"},
		{"object printed as JSON", "{{.Payload.customer}}", order, `{"name":"Ana"}` + "\n"},
		{"array", "{{index .Payload.items 1}} {{range .Payload.items}}<{{.}}>{{end}}", order, "b <a><b>\n"},
		{"escaped", "{{.Payload.note}}", order, `\x1b[2J` + "\n"},
		{"field names escaped", "{{range $k, $v := .Payload.odd}}{{$k}}={{$v}}{{end}}", odd, `\x1b]0;title\x07=1` + "\n"},
		{"from a range", "{{range .Payload.items}}{{$.Payload.order_id}}{{end}}", order, "ord_7ord_7\n"},
		{"missing field", "{{.Payload.nope}}", order, "<no value>\n"},
		{"text payload alone", "{{.Payload}}", text, "hello\n"},
		{"a field by index, its name not an identifier", `{{index .Payload "order-id"}} {{index $.Payload "order_id"}}`, dashed, "o-1 ord_9\n"},
		{"a range over the fields", "{{range $k, $v := .Payload}}{{$k}}={{$v}};{{end}}", dashed, "order-id=o-1;order_id=ord_9;\n"},
		{"an array payload by index", "{{index .Payload 1}} {{.Payload}}", array, "20 [10, 20]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustNew(t, Options{Format: Template, Template: tc.tmpl})
			out, err := r.Append(nil, tc.m)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if string(out) != tc.want {
				t.Errorf("got %q, want %q", out, tc.want)
			}
		})
	}

	// A field of a payload that is not a JSON object is an error naming what it is.
	r := mustNew(t, Options{Format: Template, Template: "{{.Payload.order_id}}"})
	if out, err := r.Append(nil, text); err == nil {
		t.Errorf("a field of a text payload: %q, want an error", out)
	} else if got := err.Error(); got != "message p0 @0: <.Payload.order_id> (line 1, column 10): can't evaluate field order_id in a value that is not a JSON object" {
		t.Errorf("error %q", got)
	}

	// An error says .Payload as the template wrote it, never the name it is read by.
	r = mustNew(t, Options{Format: Template, Template: `{{index .Payload "order-id"}}`})
	if out, err := r.Append(nil, array); err == nil {
		t.Errorf("a field by name of an array: %q, want an error", out)
	} else if got := err.Error(); strings.Contains(got, "PayloadText") || !strings.Contains(got, `<index .Payload "order-id">`) {
		t.Errorf("error %q", got)
	}
	if _, err := New(Options{Format: Template, Template: `{{slice .Payload 5 1}}`}); err == nil || strings.Contains(err.Error(), "PayloadText") {
		t.Errorf("a template that fails on the payload's text: %v, want an error naming .Payload", err)
	}
}
