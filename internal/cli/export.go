package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// The one exporter of every command that has -o json: --jq is added beside -o by
// addJQFlag, compiled once before the command runs (a bad expression is exit 2
// before any request), and applied where JSON is written: to each message by the
// message renderer (MessageOutput.renderer), to each document by printJSON and
// writeJSON. No command handles the flag itself.

// jqFlagName is the flag's name, looked up on whatever command runs.
const jqFlagName = "jq"

// addJQFlag adds --jq to a command that has -o json.
func addJQFlag(cmd *cobra.Command) {
	cmd.Flags().String(jqFlagName, "", "print what this jq expression makes of the JSON output (implies -o json): strings raw, other values as JSON, one a line")
	blankOwnChecked(cmd.Flags(), jqFlagName)
}

// resolveExport compiles the --jq of cmd, if given, into f.export and makes -o json
// the output. Run before every command, from the root's pre-run.
func (f *Factory) resolveExport(cmd *cobra.Command) error {
	f.export = nil
	fl := cmd.Flags().Lookup(jqFlagName)
	if fl == nil || !fl.Changed {
		return nil
	}
	q, err := render.CompileJQ(fl.Value.String())
	if err != nil {
		return usageErrorf("invalid --jq: %v (a jq expression, e.g. '.payload.order_id')", err)
	}
	if t := cmd.Flags().Lookup("template"); t != nil && t.Changed {
		return usageErrorf("--jq and --template cannot be used together")
	}
	out := cmd.Flags().Lookup("output")
	if out == nil {
		return nil // not reached: the flag is added beside -o
	}
	if out.Changed && out.Value.String() != "json" {
		return usageErrorf("--jq works on -o json (it implies it), not -o %s", out.Value.String())
	}
	// Set on the value, not through the flag set: -o stays "not given", so the
	// commands' own checks of what was typed are not fooled.
	if err := out.Value.Set("json"); err != nil {
		return err
	}
	f.export = q
	return nil
}

// writeJSON writes v as -o json does, through --jq when one was given: one line of
// JSON, or a line per result of the expression.
func (e runEnv) writeJSON(w io.Writer, v any) error {
	if e.export == nil {
		return writeJSONLine(w, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	doc, err := render.DocumentValue(b)
	if err != nil {
		return err
	}
	// The first signal ends an expression that goes on and on: nothing is held.
	ctx, cancel := e.Context()
	defer cancel()
	out, err := e.export.AppendResults(ctx, nil, doc, e.IO.IsStdoutTTY())
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted: the signal's exit code says so
		}
		return err
	}
	if len(out) == 0 {
		return nil
	}
	_, err = w.Write(out)
	return err
}

// printJSON writes v as one JSON document (or what --jq makes of it); a closed
// stdout is not an error.
func (e runEnv) printJSON(v any) error {
	return jsonDone(e.writeJSON(e.IO.Out, v))
}

// jsonDone is the result of writing JSON output: a reader that went away is
// success, an expression that failed on the value says so.
func jsonDone(err error) error {
	var je *render.JQError
	switch {
	case err == nil || consumer.IsClosedOutput(err):
		return nil
	case errors.As(err, &je):
		return exitWith(ExitFailed, fmt.Errorf("--jq: %v (fix --jq)", je))
	}
	return exitWith(ExitFailed, fmt.Errorf("write output: %v", err))
}
