package render

import (
	"bytes"
	"encoding/json"
	"text/template"
	"text/template/parse"

	"github.com/narad/narad/internal/client"
)

// A template reaches into a JSON payload with {{.Payload.order_id}}, while
// {{.Payload}} on its own stays the payload's text, as it always was. One value
// cannot be both (a map prints as map[...], a string has no fields), so the
// template is rewritten once, when it is parsed: wherever it uses .Payload itself
// (printed, or handed to a function such as slice or printf) it reads the hidden
// PayloadText instead, and only .Payload.FIELD chains read the decoded fields.

// payloadText rewrites t's trees as above and reports whether any of them reads a
// payload field (then each message's JSON payload is decoded for it).
func payloadText(t *template.Template) (fields bool) {
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			fields = rewritePayload(tt.Tree.Root) || fields
		}
	}
	return fields
}

// rewritePayload walks n (see payloadText).
func rewritePayload(n parse.Node) (fields bool) {
	walk := func(ns ...parse.Node) {
		for _, c := range ns {
			if c != nil && !isNilNode(c) {
				fields = rewritePayload(c) || fields
			}
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				walk(c)
			}
		}
	case *parse.ActionNode:
		walk(n.Pipe)
	case *parse.IfNode:
		walk(n.Pipe, n.List, n.ElseList)
	case *parse.RangeNode:
		// range .Payload goes over the fields (text cannot be ranged over).
		if payloadAlone(n.Pipe) {
			fields = true
			walk(n.List, n.ElseList)
			break
		}
		walk(n.Pipe, n.List, n.ElseList)
	case *parse.WithNode:
		walk(n.Pipe, n.List, n.ElseList)
	case *parse.TemplateNode:
		walk(n.Pipe)
	case *parse.PipeNode:
		if n != nil {
			for _, c := range n.Cmds {
				walk(c)
			}
		}
	case *parse.CommandNode:
		// index .Payload "order-id" reads a field, the only way to one whose name
		// is not a template identifier (text cannot be indexed by name).
		if len(n.Args) > 1 && isIdent(n.Args[0], "index") && isPayload(n.Args[1]) {
			fields = true
			walk(n.Args[2:]...)
			break
		}
		for _, c := range n.Args {
			walk(c)
		}
	case *parse.ChainNode:
		walk(n.Node)
	case *parse.FieldNode:
		// .Payload alone is the text; .Payload.order_id a field.
		if len(n.Ident) > 0 && n.Ident[0] == "Payload" {
			if len(n.Ident) == 1 {
				n.Ident = []string{"PayloadText"}
			} else {
				fields = true
			}
		}
	case *parse.VariableNode:
		// $.Payload, the same from inside a range or with.
		if len(n.Ident) > 1 && n.Ident[0] == "$" && n.Ident[1] == "Payload" {
			if len(n.Ident) == 2 {
				n.Ident = []string{"$", "PayloadText"}
			} else {
				fields = true
			}
		}
	}
	return fields
}

// isPayload reports whether n is .Payload itself (or $.Payload), no field of it.
func isPayload(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.FieldNode:
		return len(n.Ident) == 1 && n.Ident[0] == "Payload"
	case *parse.VariableNode:
		return len(n.Ident) == 2 && n.Ident[0] == "$" && n.Ident[1] == "Payload"
	}
	return false
}

// payloadAlone reports whether the pipeline p is .Payload alone (range .Payload,
// range $k, $v := .Payload).
func payloadAlone(p *parse.PipeNode) bool {
	return p != nil && len(p.Cmds) == 1 && len(p.Cmds[0].Args) == 1 && isPayload(p.Cmds[0].Args[0])
}

func isIdent(n parse.Node, name string) bool {
	id, ok := n.(*parse.IdentifierNode)
	return ok && id.Ident == name
}

// isNilNode reports a typed nil (an if without else has a nil *ListNode ElseList).
func isNilNode(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		return n == nil
	case *parse.PipeNode:
		return n == nil
	}
	return false
}

// jsonObject and jsonArray are a JSON payload's objects and arrays as a template
// sees them: fields and elements by name and index, and printed whole as compact
// JSON rather than Go's map[...] (a template is read by people).
type (
	jsonObject map[string]any
	jsonArray  []any
)

func (o jsonObject) String() string { return templateJSON(map[string]any(o)) }
func (a jsonArray) String() string  { return templateJSON([]any(a)) }

// templateJSON is v as compact JSON for a template, made inert for a terminal: it
// holds strings already escaped (see templateValue).
func templateJSON(v any) string {
	b, err := jsonMarshalPlain(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// jsonMarshalPlain is compact JSON without encoding/json's HTML escapes (a template
// prints for people, not for a web page).
func jsonMarshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// payloadFields is what .Payload holds for a template that reads fields: a JSON
// object payload's fields, anything else its text as before (a field of it is then
// an error naming what it is: text, a number, an array).
func payloadFields(m *client.Message, text string) any {
	kind, err := m.PayloadKind()
	if err != nil || kind != client.PayloadJSON {
		return text
	}
	v, err := decodeJSONValue(trimJSONSpace([]byte(m.Payload)))
	if err != nil {
		return text
	}
	return templateValue(v)
}

// templateValue wraps a decoded JSON value's objects and arrays (jsonObject,
// jsonArray) and escapes its strings as the text format does: they are printed on
// a terminal as often as the text line is. An object's field names are escaped the
// same way (a range over it prints them).
func templateValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		o := make(jsonObject, len(v))
		for k, e := range v {
			// The names too: a range over an object prints them.
			o[Escape(k)] = templateValue(e)
		}
		return o
	case []any:
		a := make(jsonArray, len(v))
		for i, e := range v {
			a[i] = templateValue(e)
		}
		return a
	case string:
		return Escape(v)
	}
	return v
}
