package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/narad/narad/internal/consumer"
)

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// A stream collects at GOGC=50 unless the user chose a GOGC, and at GOGC=200 once the
// node answers one message per consume. Not parallel: the setting is the process's.
func TestStreamTuningLeavesTheUsersGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	newProcessTuning(envOf(map[string]string{"GOGC": "200"})).stream(consumer.Pipelining{})()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, the collector runs at %d%%, want it left alone", p)
	}
	single := newProcessTuning(envOf(nil)).stream(consumer.Pipelining{})
	if p := debug.SetGCPercent(50); p != 50 {
		t.Errorf("without GOGC, the collector runs at %d%%, want 50", p)
	}
	// A node that answers one message per consume gets more headroom than the default.
	single()
	if p := debug.SetGCPercent(100); p != singleMessageGC {
		t.Errorf("once the node answers one message per consume, the collector runs at %d%%, want %d", p, singleMessageGC)
	}
}

// A stream whose handler asks for one P runs on one unless the user chose GOMAXPROCS,
// and gets its Ps back when the node answers one message per consume; one that does
// not ask keeps them.
func TestStreamTuningProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GOMAXPROCS(4)
	newProcessTuning(envOf(map[string]string{"GOMAXPROCS": "3"})).stream(consumer.Pipelining{OneP: true})()
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("with GOMAXPROCS set, %d Ps, want them left alone", n)
	}
	newProcessTuning(envOf(nil)).stream(consumer.Pipelining{})
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("for a handler that keeps every P, %d Ps, want 4", n)
	}
	single := newProcessTuning(envOf(nil)).stream(consumer.Pipelining{OneP: true})
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("without GOMAXPROCS, %d Ps, want 1", n)
	}
	single()
	if n := runtime.GOMAXPROCS(0); n != 4 {
		t.Errorf("once the node answers one message per consume, %d Ps, want the 4 back", n)
	}
}

// A Factory without a tuning (every test's) leaves the runtime alone.
func TestNoTuningLeavesTheRuntimeAlone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GOMAXPROCS(4)
	var tune *processTuning
	if single := tune.stream(consumer.Pipelining{OneP: true}); single != nil {
		t.Error("a nil tuning returned something to call")
	}
	if n, p := runtime.GOMAXPROCS(0), debug.SetGCPercent(100); n != 4 || p != 100 {
		t.Errorf("%d Ps and GOGC=%d, want 4 and 100", n, p)
	}
}
