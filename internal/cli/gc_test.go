package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/narad/narad/internal/client"
)

// sub collects at GOGC=50 unless the user chose a GOGC. Not parallel: the setting
// is the process's.
func TestStreamGCLeavesTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if hooks := streamGC(func(string) string { return "200" }); len(hooks) != 0 {
		t.Errorf("with GOGC set, hooks %v, want none", hooks)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, the collector runs at %d%%, want it left alone", p)
	}
	hooks := streamGC(func(string) string { return "" })
	if p := debug.SetGCPercent(50); p != 50 {
		t.Errorf("without GOGC, the collector runs at %d%%, want 50", p)
	}
	// A node that answers one message per consume gets the default back.
	for _, h := range hooks {
		h.(client.HookFallback).OnFallback(client.FallbackEvent{Op: client.OpConsume, Fallback: client.FallbackConsumeSingle})
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after the single-message fallback, the collector runs at %d%%, want 100", p)
	}
}

// A printing stream runs on one P unless the user chose GOMAXPROCS.
func TestStreamProcsLeavesTheUsersGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	streamProcs(func(string) string { return "3" })
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("with GOMAXPROCS set, %d Ps, want them left alone", n)
	}
	streamProcs(func(string) string { return "" })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("without GOMAXPROCS, %d Ps, want 1", n)
	}
}
