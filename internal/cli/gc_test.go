package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/narad/narad/internal/client"
)

var singleFallback = client.FallbackEvent{Op: client.OpConsume, Fallback: client.FallbackConsumeSingle}

// sub collects at GOGC=50 unless the user chose a GOGC. Not parallel: the setting
// is the process's.
func TestStreamGCLeavesTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	streamGC(func(string) string { return "200" }).OnFallback(singleFallback)
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, the collector runs at %d%%, want it left alone", p)
	}
	tuning := streamGC(func(string) string { return "" })
	if p := debug.SetGCPercent(50); p != 50 {
		t.Errorf("without GOGC, the collector runs at %d%%, want 50", p)
	}
	// A node that answers one message per consume gets more headroom than the default.
	var _ client.HookFallback = tuning
	tuning.OnFallback(singleFallback)
	if p := debug.SetGCPercent(100); p != singleMessageGC {
		t.Errorf("after the single-message fallback, the collector runs at %d%%, want %d", p, singleMessageGC)
	}
}

// A printing stream runs on one P unless the user chose GOMAXPROCS, and gets its Ps
// back when the node answers one message per consume.
func TestStreamProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GOMAXPROCS(4)
	users := streamGC(func(string) string { return "3" })
	users.streamProcs(func(string) string { return "3" })
	users.OnFallback(singleFallback)
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("with GOMAXPROCS set, %d Ps, want them left alone", n)
	}
	tuning := streamGC(func(string) string { return "" })
	tuning.streamProcs(func(string) string { return "" })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("without GOMAXPROCS, %d Ps, want 1", n)
	}
	tuning.OnFallback(client.FallbackEvent{Op: client.OpAck, Fallback: client.FallbackSettleSingles})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("after another fallback, %d Ps, want 1", n)
	}
	tuning.OnFallback(singleFallback)
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("after the single-message consume fallback, %d Ps, want the 4 back", n)
	}
}
