// Command narad is the command-line client of the Narad message broker.
package main

import (
	"os"

	"github.com/narad/narad/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
