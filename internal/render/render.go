package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/narad/narad/internal/client"
)

// Format is one of the output formats of `sub` and `replay`.
type Format int

const (
	// Text is one human-readable line a message: `[p4 @0] key=K 03:06:49 payload`.
	Text Format = iota
	// JSON is one JSON object a line, the message as the API gave it.
	JSON
	// Raw is the produced payload bytes, each followed by a delimiter.
	Raw
	// Template is a user's Go text/template over the message fields.
	Template
)

// String names f as the -o flag spells it.
func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case JSON:
		return "json"
	case Raw:
		return "raw"
	case Template:
		return "template"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat reads the value of -o. Template is not spelled here: it is chosen by
// --template, which carries the template itself.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "text":
		return Text, nil
	case "json":
		return JSON, nil
	case "raw":
		return Raw, nil
	}
	return Text, fmt.Errorf("unknown output format %q (use text, json or raw)", s)
}

// Options configure a Renderer.
type Options struct {
	Format Format
	// Template is the text/template source for Format Template.
	Template string
	// Delimiter follows each payload in Raw; nil means "\n", an empty non-nil slice means
	// nothing at all (payloads back to back).
	Delimiter []byte
	// UTC shows text times in UTC; it wins over Location.
	UTC bool
	// Location shows text times in this zone; nil means time.Local. Tests pin it.
	Location *time.Location
	// EscapeRaw escapes control characters in Raw payloads as the text format does: raw
	// output to a terminal must not let a payload drive it (set its title, recolour it).
	EscapeRaw bool
	// Color styles the text format's tag, key and time. The caller decides (--color, a
	// terminal, NO_COLOR); the renderer then forces colour on, so what is asked for is
	// what is written whatever the environment says.
	Color bool
	// JQ, with Format JSON, writes what this expression makes of each message (--jq)
	// instead of the message itself.
	JQ *JQ
	// EscapeJQ escapes control characters in the strings JQ writes raw: the output is
	// a terminal.
	EscapeJQ bool
	// Context, when set, ends a JQ run on a message that goes on and on: its end is
	// the stop a signal makes. Nil: a run ends only on its own.
	Context context.Context
}

// Renderer turns messages into output records. Its state is fixed by New, so one
// Renderer may be used from several goroutines at once.
type Renderer struct {
	format Format
	loc    *time.Location
	delim  []byte
	tmpl   *template.Template
	tmplNL bool // the template source already ends in a newline
	// tmplFields: the template reads fields of the payload (.Payload.order_id), so
	// each JSON payload is decoded for it.
	tmplFields bool
	escRaw     bool
	jq         *JQ
	jqEscape   bool
	ctx        context.Context // ends a --jq run (Options.Context); nil: never
	// tag, key and clock wrap the styled parts of a colour text line.
	tag, key, clock affix
}

// WithContext is r with Options.Context ctx: a read makes its own context, after the
// renderer (the output flags) was made.
func (r *Renderer) WithContext(ctx context.Context) *Renderer {
	c := *r
	c.ctx = ctx
	return &c
}

// context is what ends a JQ run.
func (r *Renderer) context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// affix is what a style puts before and after a one-line text. Rendering through lipgloss
// once in New and reusing the result keeps a colour line at plain-line cost (lipgloss
// allocates per call). It holds for inline styles (colours, bold, faint: all of styles.go
// that a text line uses), and TestColorAffix checks it against Style.Render.
type affix struct{ pre, post string }

// affixOf renders a marker and splits around it; SGR sequences never contain an X.
func affixOf(s lipgloss.Style) affix {
	out := s.Render("X")
	i := strings.Index(out, "X")
	if i < 0 {
		return affix{} // a style that rewrites its text: better no colour than a wrong line
	}
	return affix{pre: out[:i], post: out[i+1:]}
}

// New checks o and builds a Renderer. Every error it returns is a usage error (a bad
// template, an unknown format, a template given with another format), so the caller
// can map them all to exit 2.
func New(o Options) (*Renderer, error) {
	r := &Renderer{format: o.Format, loc: o.Location, escRaw: o.EscapeRaw, jq: o.JQ, jqEscape: o.EscapeJQ, ctx: o.Context}
	switch {
	case o.UTC:
		r.loc = time.UTC
	case r.loc == nil:
		r.loc = time.Local
	}
	if o.Delimiter == nil {
		r.delim = []byte{'\n'}
	} else {
		// Copied: the renderer is shared across goroutines and must not see the caller
		// reuse its slice.
		r.delim = append([]byte{}, o.Delimiter...)
	}
	switch o.Format {
	case Text:
		// Colour is only for the line meant for people; machine formats never get it.
		if o.Color {
			// Options has no writer, and none is needed: the profile is forced, so the
			// writer is never probed.
			st := NewStyles(io.Discard, true)
			r.tag, r.key, r.clock = affixOf(st.Tag), affixOf(st.Key), affixOf(st.Time)
		}
	case JSON, Raw:
	case Template:
		if o.Template == "" {
			return nil, errors.New("empty template")
		}
		t, err := template.New("template").Parse(o.Template)
		if err != nil {
			return nil, templateErr(err)
		}
		r.tmplFields = payloadText(t)
		// text/template finds an unknown field only when it runs. Running it once here
		// on a sample message makes a typo a usage error before anything is consumed,
		// instead of a failure on every message, each of which would be given back.
		// The sample's payload has only its own fields: what a template does with
		// others (index .Payload.items 1, index .Payload 0) is left to the messages that have them.
		if err := t.Execute(io.Discard, sampleData()); err != nil && !(r.tmplFields && readsPayloadFields(err)) {
			return nil, templateErr(err)
		}
		r.tmpl = t
		r.tmplNL = strings.HasSuffix(o.Template, "\n")
	default:
		return nil, fmt.Errorf("unknown output format %v", o.Format)
	}
	if o.JQ != nil && o.Format != JSON {
		return nil, fmt.Errorf("a jq expression cannot be combined with output format %v", o.Format)
	}
	if o.Template != "" && o.Format != Template {
		return nil, fmt.Errorf("a template cannot be combined with output format %v", o.Format)
	}
	return r, nil
}

// Append appends the record for m, terminator included, to dst. On error dst is returned
// unchanged, so a message that could not be rendered leaves nothing half written (the
// caller gives it back instead of acking it).
func (r *Renderer) Append(dst []byte, m *client.Message) ([]byte, error) {
	return r.AppendContext(r.context(), dst, m)
}

// AppendContext is Append with ctx, not Options.Context, ending a --jq run: a consuming
// run ends it at its own stop (consumer.ContextRenderer).
func (r *Renderer) AppendContext(ctx context.Context, dst []byte, m *client.Message) ([]byte, error) {
	if m == nil {
		return dst, errors.New("no message")
	}
	orig := len(dst)
	var err error
	switch r.format {
	case Text:
		dst, err = r.appendText(dst, m)
	case JSON:
		if r.jq != nil {
			dst, err = r.appendJQ(ctx, dst, m)
		} else {
			dst, err = appendJSON(dst, m)
		}
	case Raw:
		dst, _, err = m.AppendPayload(dst)
		if err == nil {
			if r.escRaw {
				dst = escapeTail(dst, orig)
			}
			dst = append(dst, r.delim...)
		}
	case Template:
		dst, err = r.appendTemplate(dst, m)
	}
	if err != nil {
		return dst[:orig], fmt.Errorf("message p%d @%d: %w", m.Partition, m.Offset, err)
	}
	return dst, nil
}

// appendTag appends `[p4 @0]`.
func appendTag(dst []byte, m *client.Message) []byte {
	dst = append(dst, "[p"...)
	dst = strconv.AppendInt(dst, int64(m.Partition), 10)
	dst = append(dst, " @"...)
	dst = strconv.AppendInt(dst, m.Offset, 10)
	return append(dst, ']')
}

// appendText appends `[p4 @0] key=customer-42 03:06:49 payload\n`. With colour, the
// tag, key and time are styled; the payload never is: its bytes are the user's, and a
// style could not be told apart from them.
func (r *Renderer) appendText(dst []byte, m *client.Message) ([]byte, error) {
	dst = append(dst, r.tag.pre...)
	dst = appendTag(dst, m)
	dst = append(dst, r.tag.post...)
	dst = append(dst, ' ')
	start := len(dst)
	dst = append(dst, r.key.pre...)
	dst = append(dst, "key="...)
	dst, hasKey, err := appendKeyText(dst, m, true)
	if err != nil {
		return dst, err
	}
	if hasKey {
		dst = append(dst, r.key.post...)
		dst = append(dst, ' ')
	} else {
		dst = dst[:start]
	}
	dst = append(dst, r.clock.pre...)
	dst = time.Unix(m.Timestamp, 0).In(r.loc).AppendFormat(dst, "15:04:05")
	dst = append(dst, r.clock.post...)
	dst = append(dst, ' ')
	dst, err = appendPayloadText(dst, m, true)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}
