package cli

import (
	"fmt"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// printTable writes rows under headers on stdout, aligned (coloured headers on a
// terminal); a closed stdout is not an error.
func (e runEnv) printTable(headers []string, rows [][]string) error {
	if err := render.Table(e.IO.Out, e.IO.ColorEnabled(), e.IO.IsStdoutTTY(), headers, rows); err != nil && !consumer.IsClosedOutput(err) {
		return exitWith(ExitFailed, fmt.Errorf("write output: %v", err))
	}
	return nil
}
