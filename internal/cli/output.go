package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// MessageOutput is how sub, sub --peek and replay print each message, resolved from
// the output flags (outputFlags) before the command runs.
type MessageOutput struct {
	Format    render.Format
	Template  string // the --template source, with Format render.Template
	Delimiter []byte // written after each payload with Format render.Raw
	UTC       bool
	// UnsafeRaw writes control characters as they are with -o raw to a terminal.
	UnsafeRaw bool
}

// outputFlags are the output flags shared by sub, sub --peek and replay, as typed.
type outputFlags struct {
	format    string
	template  string
	delimiter string
	utc       bool
	unsafeRaw bool
}

// outputFlagNames are the flags addFlags adds: with sub's command, none applies.
var outputFlagNames = []string{"output", "template", "delimiter", "utc", "unsafe-raw", jqFlagName}

func (o *outputFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&o.format, "output", "o", "text", "output format: text, json or raw")
	fl.StringVar(&o.template, "template", "", "Go template per message, e.g. '{{.Partition}} {{.Key}} {{.Payload}}'; '{{.Payload.order_id}}' reads a field of a JSON payload")
	fl.StringVar(&o.delimiter, "delimiter", "\n", "with -o raw: written after each payload, escapes \\n \\t \\r \\0 \\xHH read as in C ('' for none)")
	fl.BoolVar(&o.utc, "utc", false, "show times in UTC instead of local time (and read a --since or --until without a zone as UTC)")
	fl.BoolVar(&o.unsafeRaw, "unsafe-raw", false, "with -o raw to a terminal: write control characters as they are (default there: escaped as in text output)")
	blankOwnChecked(fl, "output")
	emptyNeeds(fl, "template", "a template", "e.g. '{{.Offset}} {{.Payload}}'; leave the flag out for text")
	blankMeansValue(fl, "delimiter")
	addJQFlag(cmd)
}

// location is the zone times are shown in, and so the one a --since or --until
// without a zone is read in: a time copied from a line printed with --utc must mean
// that line's moment.
func (o *outputFlags) location() *time.Location {
	if o.utc {
		return time.UTC
	}
	return localZone()
}

// localZone is the zone times are shown and read in without --utc: time.Local, but in
// a test, which must not write time.Local while the runtime's timers read it.
var localZone = func() *time.Location { return time.Local }

// resolve checks the output flags together; changed says whether a flag was given.
// Bad flags are usage errors.
func (o *outputFlags) resolve(changed func(string) bool) (MessageOutput, error) {
	format, err := render.ParseFormat(o.format)
	if err != nil || changed("output") && o.format == "" {
		// (An empty -o, an unset variable, is no format: not text in place of json.)
		return MessageOutput{}, usageErrorf("invalid --output %q (text, json or raw)", o.format)
	}
	if o.template != "" {
		if changed("output") {
			return MessageOutput{}, usageErrorf("--template and --output cannot be used together")
		}
		format = render.Template
	}
	if changed("delimiter") && format != render.Raw {
		return MessageOutput{}, usageErrorf("--delimiter needs -o raw")
	}
	if o.unsafeRaw && format != render.Raw {
		return MessageOutput{}, usageErrorf("--unsafe-raw needs -o raw")
	}
	delim, err := unescapeDelimiter(o.delimiter)
	if err != nil {
		return MessageOutput{}, err
	}
	return MessageOutput{Format: format, Template: o.template, Delimiter: delim, UTC: o.utc, UnsafeRaw: o.unsafeRaw}, nil
}

// unescapeDelimiter reads a --delimiter as typed. The help shows the default as "\n",
// and kcat's -D reads escapes, so '\n', '\t', '\r', '\0' (for xargs -0), '\xHH' and
// '\\' are the bytes they name: taken as typed, '\0' would write a backslash and a zero
// after each payload. Any other backslash is a mistake, not a literal. An empty --delimiter is no
// delimiter: empty, not nil (nil is the renderer's default, a newline).
func unescapeDelimiter(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, badDelimiter(s)
		}
		i++
		switch s[i] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case '0':
			out = append(out, 0)
		case '\\':
			out = append(out, '\\')
		case 'x':
			if i+2 >= len(s) {
				return nil, badDelimiter(s)
			}
			b, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return nil, badDelimiter(s)
			}
			out = append(out, byte(b))
			i += 2
		default:
			return nil, badDelimiter(s)
		}
	}
	return out, nil
}

func badDelimiter(s string) error {
	return usageErrorf(`invalid --delimiter '%s' (escapes: \n, \t, \r, \0, \xHH, and \\ for a backslash)`, render.Escape(s))
}

// renderer builds the renderer for o on e's stdout, through --jq when one was given
// (f.export); a template that does not parse is a usage error.
func (o MessageOutput) renderer(e runEnv) (*render.Renderer, error) {
	var jq *render.JQ
	if o.Format == render.JSON {
		jq = e.export
	}
	r, err := render.New(render.Options{
		JQ:        jq,
		EscapeJQ:  e.IO.IsStdoutTTY(),
		Format:    o.Format,
		Template:  o.Template,
		Delimiter: o.Delimiter,
		UTC:       o.UTC,
		// A payload must not drive the terminal: raw bytes go to files and pipes.
		EscapeRaw: o.Format == render.Raw && e.IO.IsStdoutTTY() && !o.UnsafeRaw,
		Color:     o.Format == render.Text && e.IO.ColorEnabled(),
		// A --jq that goes on and on for a message ends at the second signal, which
		// gives back what a consuming sub holds (a read narrows it to its own end).
		Context: e.Signals.Hard,
	})
	if err != nil {
		return nil, usageErrorf("invalid --template: %v (fields: %s)", err, render.TemplateFields())
	}
	return r, nil
}

// writeAll writes p and reports a closed output distinctly.
func writeAll(w io.Writer, p []byte) error {
	if _, err := w.Write(p); err != nil {
		if consumer.IsClosedOutput(err) {
			return err
		}
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeJSONLine writes v as one line of JSON with no C1 control raw (encoding/json
// leaves them as they are, and this may go to a terminal).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(textenc.InertJSON(b), '\n'))
	return err
}

// outputDone is the result of a command whose last act was writing err's output: a
// reader that went away is success, any other failure to write is exit 1.
func outputDone(err error) error {
	if err == nil || consumer.IsClosedOutput(err) {
		return nil
	}
	return exitWith(ExitFailed, fmt.Errorf("write output: %v", err))
}
