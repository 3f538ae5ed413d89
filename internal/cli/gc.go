package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/narad/narad/internal/client"
)

// streamGC runs the collector at half its default headroom (GOGC=50) unless the user
// set GOGC. A consume stream keeps little alive and makes garbage at every batch, so
// the heap it peaks at is the runtime's minimum goal (4 MB at the default), whatever
// the stream's length; halving it keeps the peak RSS of a 100,000-message drain
// within a fifth of a 1,000-message one, for more collections of a tiny heap.
//
// The hooks it returns, for the run's client, give the collector its
// default headroom back when the node turns out to answer one message per consume
// (older than v3.1): every message then costs two requests, some 13 KB of HTTP
// machinery, and collections at half headroom took a third of the CPU, for a peak a
// few MB lower.
func streamGC(getenv func(string) string) []client.Hook {
	if getenv("GOGC") != "" {
		return nil
	}
	debug.SetGCPercent(50)
	return []client.Hook{singleShapeGC{}}
}

type singleShapeGC struct{}

func (singleShapeGC) OnFallback(e client.FallbackEvent) {
	if e.Fallback == client.FallbackConsumeSingle {
		debug.SetGCPercent(100)
	}
}

// streamProcs runs a printing stream on one P unless the user set GOMAXPROCS. Its
// own work is a few microseconds of CPU a message between network waits, spread over
// a few goroutines that hand each message on (the consume, the write, the ack); with
// more Ps every handoff woke another thread, and on a busy machine the runtime spent
// more CPU waking and parking threads than on the messages (a drain: 35% less CPU on
// one P, the scheduler's locks and searches gone from the profile). One core still
// serves far more messages a second than a node hands out. Exec mode keeps every P:
// its commands' fork, exec and wait are system calls that hold one.
func streamProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
