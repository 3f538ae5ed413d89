package cli

import (
	"runtime/debug"
	"testing"
)

// sub collects at GOGC=50 unless the user chose a GOGC. Not parallel: the setting
// is the process's.
func TestStreamGCLeavesTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	streamGC(func(string) string { return "200" })
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, the collector runs at %d%%, want it left alone", p)
	}
	streamGC(func(string) string { return "" })
	if p := debug.SetGCPercent(100); p != 50 {
		t.Errorf("without GOGC, the collector runs at %d%%, want 50", p)
	}
}
