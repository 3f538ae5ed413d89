package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// How the commands that answer once (topic, user, cluster, context, status) print:
// -o text or json, a table or a few lines on stdout, and what a person reads about
// a change on stderr. A closed stdout (| head) is never an error.

// addTextJSONFlag adds -o text|json (and --jq beside it); checkTextJSON validates it.
func addTextJSONFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "text", "output format: text or json")
	blankOwnChecked(cmd.Flags(), "output")
	addJQFlag(cmd)
}

func checkTextJSON(o string) error {
	if o != "text" && o != "json" {
		return usageErrorf("invalid --output %q (text or json)", o)
	}
	return nil
}

// printTable writes rows under headers on stdout, aligned (coloured headers on a
// terminal).
func (e runEnv) printTable(headers []string, rows [][]string) error {
	return outputDone(render.Table(e.IO.Out, e.IO.ColorEnabled(), e.IO.IsStdoutTTY(), headers, rows))
}

// printList is what an ls-style command prints of items: doc with -o json, else a
// row an item under headers, or the line none on stderr when there are no items
// ("": the headers alone).
func printList[T any](e runEnv, output string, doc any, items []T, none string, headers []string, row func(T) []string) error {
	if output == "json" {
		return e.printJSON(doc)
	}
	if len(items) == 0 && none != "" {
		fmt.Fprintln(e.IO.ErrOut, none)
		return nil
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	return e.printTable(headers, rows)
}

// nonNil is s, or an empty list for a nil one: -o json says [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// report ends a command that changed something: v on stdout with -o json, else the
// line for a person on stderr.
func (e runEnv) report(output string, v any, format string, args ...any) error {
	if output == "json" {
		return e.printJSON(v)
	}
	fmt.Fprintf(e.IO.ErrOut, format+"\n", args...)
	return nil
}

// writeOut writes text on stdout.
func (e runEnv) writeOut(s string) error {
	_, err := io.WriteString(e.IO.Out, s)
	return outputDone(err)
}

// writeIndentedJSON writes a node's JSON document raw to b indented for a person, or
// as it came when it is not valid JSON (empty, say). InertJSON first: its strings may
// hold C1 controls, which JSON leaves raw and a terminal would act on. (json.Indent
// writes nothing when it fails.)
func writeIndentedJSON(b *bytes.Buffer, raw []byte) {
	inert := textenc.InertJSON(raw)
	if json.Indent(b, inert, "", "  ") != nil {
		b.Write(inert)
	}
}
