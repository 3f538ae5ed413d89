package render

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// decodeJSONValue decodes one JSON value (whitespace around it allowed) into what jq
// works on: maps, slices, strings, bools, nil, and numbers as json.Number, so an id
// too long for a float64 keeps its digits. It is encoding/json's `any` decoding with
// UseNumber, without a Decoder per call: --jq and --filter decode every payload, and
// a Decoder (its reader and buffer) was a third of what a message cost them. Strings
// with escapes, the rare case, are still unquoted by encoding/json.
func decodeJSONValue(b []byte) (any, error) {
	p := valueParser{b: b}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, errJSONSyntax
	}
	return v, nil
}

var errJSONSyntax = errors.New("invalid JSON")

// maxJSONDepth bounds nesting as encoding/json does, so a hostile payload of a
// million brackets cannot exhaust the stack.
const maxJSONDepth = 10000

type valueParser struct {
	b []byte
	i int
}

func (p *valueParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *valueParser) value(depth int) (any, error) {
	if p.i >= len(p.b) {
		return nil, errJSONSyntax
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, errJSONSyntax
}

func (p *valueParser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return errJSONSyntax
	}
	p.i += len(word)
	return nil
}

func (p *valueParser) object(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSONSyntax
	}
	p.i++ // {
	m := make(map[string]any)
	p.space()
	if p.at('}') {
		p.i++
		return m, nil
	}
	for {
		p.space()
		if !p.at('"') {
			return nil, errJSONSyntax
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if !p.at(':') {
			return nil, errJSONSyntax
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v // a repeated key: the last wins, as in encoding/json
		more, err := p.more('}')
		if err != nil {
			return nil, err
		}
		if !more {
			return m, nil
		}
	}
}

func (p *valueParser) array(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSONSyntax
	}
	p.i++ // [
	a := []any{}
	p.space()
	if p.at(']') {
		p.i++
		return a, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		more, err := p.more(']')
		if err != nil {
			return nil, err
		}
		if !more {
			return a, nil
		}
	}
}

// more reads what follows a member or an element: a comma (more to come) or the
// container's closing byte (it is done); anything else is a syntax error.
func (p *valueParser) more(closing byte) (bool, error) {
	p.space()
	switch {
	case p.at(','):
		p.i++
		return true, nil
	case p.at(closing):
		p.i++
		return false, nil
	}
	return false, errJSONSyntax
}

// at reports whether the byte at p.i is c (false at the end).
func (p *valueParser) at(c byte) bool {
	return p.i < len(p.b) && p.b[p.i] == c
}

// string reads the string at p.i. One without escapes, valid UTF-8 and no control
// byte (which JSON forbids raw) is its bytes; any other goes to encoding/json, which
// unquotes escapes and replaces invalid UTF-8 as a Decoder would.
func (p *valueParser) string() (string, error) {
	start := p.i
	p.i++ // "
	plain := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			q := p.b[start:p.i]
			if plain {
				return string(q[1 : len(q)-1]), nil
			}
			var s string
			if err := json.Unmarshal(q, &s); err != nil {
				return "", errJSONSyntax
			}
			return s, nil
		case c == '\\':
			plain = false
			p.i += 2 // the escape's first character is never a quote that ends the string
		case c < 0x20:
			return "", errJSONSyntax
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			p.i += size
		default:
			p.i++
		}
	}
	return "", errJSONSyntax
}

// number reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *valueParser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.at('0'):
		p.i++
	case p.digits() == 0:
		return nil, errJSONSyntax
	}
	if p.at('.') {
		p.i++
		if p.digits() == 0 {
			return nil, errJSONSyntax
		}
	}
	if p.at('e') || p.at('E') {
		p.i++
		if p.at('+') || p.at('-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, errJSONSyntax
		}
	}
	return json.Number(p.b[start:p.i]), nil
}

func (p *valueParser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
