package cli

import (
	"os"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// BenchmarkStart is what one short command costs after the process started: the
// command tree, flag parsing and the command itself (see bench/run for the
// process as a whole).
func BenchmarkStart(b *testing.B) {
	for _, args := range [][]string{{"version"}, {"sub", "--help"}} {
		b.Run(args[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ios, _, _, _ := iostreams.Test()
				f := &Factory{IO: ios, Getenv: os.Getenv, Now: time.Now, Signals: NewSignals()}
				if code := Run(f, args); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
