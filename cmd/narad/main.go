// Command narad is the command-line client of the Narad message broker.
package main

import (
	"os"

	"github.com/narad/narad/internal/cli"
)

// profile starts a profiler and returns its stop; only a build with -tags pprof sets
// it, so the everyday binary carries no profiling code at start-up.
var profile func() (stop func())

func main() {
	stop := func() {}
	if profile != nil {
		stop = profile()
	}
	code := cli.Main(os.Args[1:])
	stop()
	os.Exit(code)
}
