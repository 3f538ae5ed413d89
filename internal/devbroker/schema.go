package devbroker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Topic schemas. A schema is registered as the next version of the topic's history
// (create with "schema", PATCH with "schema"), the history is read back from
// GET /v1/topics/{topic}/schema, and every produce must be one JSON text that the
// current version accepts.
//
// The dev broker enforces a subset of JSON Schema: type (integer included, checked
// exactly), enum, const, required, properties, additionalProperties and items (one
// schema for every element), with true/false subschemas. Every other keyword is
// accepted at registration and not enforced, and a new version is not checked for
// compatibility with the previous one, as a real node does.
const (
	maxSchemaBytes    = 256 << 10
	maxSchemaDepth    = 64
	maxSchemaVersions = 1000
	maxPayloadDepth   = 256
)

// schemaHistory is a topic's schema versions, oldest first. It is never changed in
// place: a new version makes a new history, so a produce validates against the one it
// loaded without a lock, and a child shares its parent's.
type schemaHistory struct {
	versions []schemaVersion
}

type schemaVersion struct {
	doc  json.RawMessage // compacted, as stored and served
	root *schemaNode
}

// version is the current version number, from 1.
func (h *schemaHistory) version() int {
	if h == nil {
		return 0
	}
	return len(h.versions)
}

func (h *schemaHistory) current() schemaVersion { return h.versions[len(h.versions)-1] }

// equal reports whether two histories hold the same documents, version for version,
// as JSON values (formatting and key order aside).
func (h *schemaHistory) equal(o *schemaHistory) bool {
	if h.version() != o.version() {
		return false
	}
	for i := 0; i < h.version(); i++ {
		if !sameJSON(h.versions[i].doc, o.versions[i].doc) {
			return false
		}
	}
	return true
}

// errSchemaUnchanged is registerSchema's answer to the current schema sent again: no
// new version, and the request succeeds.
var errSchemaUnchanged = errors.New("schema unchanged")

// registerSchema returns h with doc as its next version. A document equal to the
// current version is errSchemaUnchanged; a bad document is a 400, a full history a 409.
func registerSchema(h *schemaHistory, doc json.RawMessage) (*schemaHistory, error) {
	compact, root, err := compileSchema(doc)
	if err != nil {
		return nil, err
	}
	n := h.version()
	if n > 0 && sameJSON(h.current().doc, compact) {
		return h, errSchemaUnchanged
	}
	if n >= maxSchemaVersions {
		return nil, errSchemaHistoryFull
	}
	next := &schemaHistory{versions: make([]schemaVersion, n, n+1)}
	if h != nil {
		copy(next.versions, h.versions)
	}
	next.versions = append(next.versions, schemaVersion{doc: compact, root: root})
	return next, nil
}

var errSchemaHistoryFull = conflictf("the schema history holds %d versions, the most a topic keeps", maxSchemaVersions)

// invalidSchema is a schema document refused at registration (400).
func invalidSchema(format string, args ...any) error {
	return invalidf("invalid schema: "+format, args...)
}

// schemaRefused is a payload the topic's schema refuses (400 on produce).
func schemaRefused(format string, args ...any) error {
	return invalidf("invalid argument: schema: "+format, args...)
}

// validate checks one produce's payload against the current version.
func (h *schemaHistory) validate(topic string, payload []byte) error {
	if !utf8.Valid(payload) || !json.Valid(payload) {
		return schemaRefused("payload is not one JSON text in valid UTF-8")
	}
	v, err := decodeJSON(payload)
	if err != nil {
		return schemaRefused("payload is not one JSON text: %v", err)
	}
	if depth(v) > maxPayloadDepth {
		return schemaRefused("payload nests deeper than %d levels", maxPayloadDepth)
	}
	if msg := h.current().root.check(v, ""); msg != "" {
		return schemaRefused("jsonschema validation failed with 'narad://schema/%s/%d#'\n%s", topic, h.version(), msg)
	}
	return nil
}

// decodeJSON decodes one JSON text keeping numbers exact.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// canonicalJSON is a decoded value encoded with sorted keys and no whitespace, to
// compare JSON values.
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func sameJSON(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	return errA == nil && errB == nil && canonicalJSON(va) == canonicalJSON(vb)
}

// schemaNode is a compiled (sub)schema: the keywords the dev broker enforces.
type schemaNode struct {
	never    bool            // the schema false
	types    map[string]bool // nil: any type
	enum     []string        // canonical JSON of the allowed values; nil: any
	required []string
	props    map[string]*schemaNode
	addl     *schemaNode // additionalProperties; nil: anything
	items    *schemaNode // nil: anything
}

var schemaTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// compileSchema checks a document at registration and returns it compacted.
func compileSchema(doc json.RawMessage) (json.RawMessage, *schemaNode, error) {
	if len(doc) > maxSchemaBytes {
		return nil, nil, invalidSchema("the document is over %d bytes", maxSchemaBytes)
	}
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, nil, invalidSchema("not JSON: %v", err)
	}
	switch v.(type) {
	case map[string]any:
	case bool:
		if v == false {
			return nil, nil, invalidSchema("false refuses every message; a schema is a JSON object or true")
		}
	case nil:
		return nil, nil, invalidSchema("a schema cannot be removed (null)")
	default:
		return nil, nil, invalidSchema("a schema is a JSON object or true")
	}
	root, err := compileNode(v, "", 0)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return nil, nil, invalidSchema("not JSON: %v", err)
	}
	return buf.Bytes(), root, nil
}

// compileNode compiles the schema v, found at the JSON pointer at, level schemas deep.
func compileNode(v any, at string, level int) (*schemaNode, error) {
	if level > maxSchemaDepth {
		return nil, invalidSchema("nests deeper than %d levels", maxSchemaDepth)
	}
	switch x := v.(type) {
	case bool:
		return &schemaNode{never: !x}, nil
	case map[string]any:
		n := &schemaNode{}
		if err := n.compileValueRules(x, at); err != nil {
			return nil, err
		}
		if err := n.compileChildren(x, at, level); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, invalidAt(at, "a schema is a JSON object or a boolean")
}

// invalidAt is an invalid schema, naming where in it the fault is.
func invalidAt(at, format string, args ...any) error {
	return invalidSchema("at '%s': %s", at, fmt.Sprintf(format, args...))
}

// compileValueRules reads the keywords about the value itself: type, enum, const and
// required.
func (n *schemaNode) compileValueRules(x map[string]any, at string) error {
	if t, ok := x["type"]; ok {
		n.types = map[string]bool{}
		names, isList := t.([]any)
		if !isList {
			names = []any{t}
		}
		for _, e := range names {
			s, ok := e.(string)
			if !ok || !schemaTypes[s] {
				return invalidAt(at, "type must be one of null, boolean, object, array, number, string, integer, or a list of them")
			}
			n.types[s] = true
		}
	}
	if e, ok := x["enum"]; ok {
		list, ok := e.([]any)
		if !ok {
			return invalidAt(at, "enum must be an array")
		}
		n.enum = []string{}
		for _, val := range list {
			n.enum = append(n.enum, canonicalJSON(val))
		}
	}
	if c, ok := x["const"]; ok {
		n.enum = []string{canonicalJSON(c)}
	}
	if r, ok := x["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return invalidAt(at, "required must be an array of strings")
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return invalidAt(at, "required must be an array of strings")
			}
			n.required = append(n.required, s)
		}
	}
	return nil
}

// compileChildren reads the keywords holding the schemas of what the value contains:
// properties, additionalProperties and items.
func (n *schemaNode) compileChildren(x map[string]any, at string, level int) error {
	if p, ok := x["properties"]; ok {
		m, ok := p.(map[string]any)
		if !ok {
			return invalidAt(at, "properties must be an object of schemas")
		}
		n.props = map[string]*schemaNode{}
		for name, sub := range m {
			c, err := compileSubschema(sub, at+"/properties/"+name, level)
			if err != nil {
				return err
			}
			n.props[name] = c
		}
	}
	if a, ok := x["additionalProperties"]; ok {
		c, err := compileSubschema(a, at+"/additionalProperties", level)
		if err != nil {
			return err
		}
		n.addl = c
	}
	if it, ok := x["items"]; ok {
		if _, tuple := it.([]any); tuple {
			return invalidAt(at, "items must be one schema; the array form is not supported")
		}
		c, err := compileSubschema(it, at+"/items", level)
		if err != nil {
			return err
		}
		n.items = c
	}
	return nil
}

func compileSubschema(v any, at string, level int) (*schemaNode, error) {
	switch v.(type) {
	case bool, map[string]any:
		return compileNode(v, at, level+1)
	}
	return nil, invalidSchema("at '%s': a schema is a JSON object or a boolean", at)
}

// check returns "" when v is valid, else the first violation as "- at 'PATH': what".
func (n *schemaNode) check(v any, at string) string {
	fail := func(format string, args ...any) string {
		return fmt.Sprintf("- at '%s': ", at) + fmt.Sprintf(format, args...)
	}
	if n.never {
		return fail("false schema refuses every value")
	}
	if n.types != nil && !n.types[jsonType(v)] && !(n.types["integer"] && isInteger(v)) &&
		!(n.types["number"] && jsonType(v) == "integer") {
		want := make([]string, 0, len(n.types))
		for t := range n.types {
			want = append(want, t)
		}
		slices.Sort(want)
		return fail("got %s, want %s", jsonType(v), strings.Join(want, " or "))
	}
	if n.enum != nil && !slices.Contains(n.enum, canonicalJSON(v)) {
		return fail("value must be one of %s", strings.Join(n.enum, ", "))
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range n.required {
			if _, ok := x[r]; !ok {
				return fail("missing property '%s'", r)
			}
		}
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		slices.Sort(names) // the first violation in a stable order
		for _, k := range names {
			sub, ok := n.props[k]
			if !ok {
				sub = n.addl
			}
			if sub == nil {
				continue
			}
			if !ok && sub.never {
				return fail("additional property '%s' is not allowed", k)
			}
			if msg := sub.check(x[k], at+"/"+k); msg != "" {
				return msg
			}
		}
	case []any:
		if n.items != nil {
			for i, e := range x {
				if msg := n.items.check(e, at+"/"+strconv.Itoa(i)); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

// jsonType names a decoded value's JSON type; a number without a fractional part is
// "integer" (1.0 and 1e2 included, as JSON Schema counts them).
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		if isInteger(x) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

// isInteger checks a number literal exactly, not as a float64 (9007199254740993 is an
// integer, 1.5 is not, 1e400 is), and without building the number, so that an
// exponent of a billion costs nothing.
func isInteger(v any) bool {
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	s := strings.TrimPrefix(string(num), "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return true // zero
	}
	zeros := len(digits) - len(strings.TrimRight(digits, "0"))
	e, err := strconv.ParseInt(exp, 10, 64)
	if exp == "" {
		e, err = 0, nil
	}
	if err != nil {
		return !strings.HasPrefix(exp, "-") // out of range: huge is whole, tiny is not
	}
	// The value is digits × 10^(e - len(frac)); it is whole when the trailing zeros of
	// digits make up for a negative power.
	return e-int64(len(frac))+int64(zeros) >= 0
}
