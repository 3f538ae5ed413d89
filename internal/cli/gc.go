package cli

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/narad/narad/internal/client"
)

// streamGC runs the collector at half its default headroom (GOGC=50) unless the user
// set GOGC. A consume stream keeps little alive and makes garbage at every batch, so
// the heap it peaks at is the runtime's minimum goal (4 MB at the default), whatever
// the stream's length; halving it keeps the peak RSS of a 100,000-message drain
// within a fifth of a 1,000-message one, for more collections of a tiny heap.
//
// The hook it returns, for the run's client, gives the collector twice its default
// headroom (GOGC=200) when the node turns out to answer one message per consume
// (older than v3.1): every message then costs two requests, some 13 KB of HTTP
// machinery, and collections at half headroom, or even at the default, took a share of
// the CPU worth more than the few MB of peak they save (docs/performance.md).
func streamGC(getenv func(string) string) *streamTuning {
	t := &streamTuning{}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(50)
		t.ownsGC = true
	}
	return t
}

// singleMessageGC is the collector's headroom, in percent, for a node that answers
// one message per consume (see streamGC).
const singleMessageGC = 200

// streamTuning retunes the stream when the node turns out to answer one
// message per consume (see streamGC and streamProcs); it is the run client's hook.
type streamTuning struct {
	ownsGC bool         // the user did not set GOGC: the stream sets it
	procs  atomic.Int32 // the Ps before streamProcs lowered them to 1; 0 when it did not
}

func (t *streamTuning) OnFallback(e client.FallbackEvent) {
	if e.Fallback != client.FallbackConsumeSingle {
		return
	}
	if t.ownsGC {
		debug.SetGCPercent(singleMessageGC)
	}
	if n := t.procs.Swap(0); n > 0 {
		runtime.GOMAXPROCS(int(n))
	}
}

// streamProcs runs a printing stream on one P unless the user set GOMAXPROCS. Its
// own work is a few microseconds of CPU a message between network waits, spread over
// a few goroutines that hand each message on (the consume, the write, the ack); with
// more Ps every handoff woke another thread, and on a busy machine the runtime spent
// more CPU waking and parking threads than on the messages (docs/performance.md). One
// core still serves far more messages a second than a node hands out. Exec mode keeps
// every P: its commands' fork, exec and wait are system calls that hold one. A node
// that answers one message per consume gets every P back (through t): the HTTP
// machinery of its twelve parallel consumes is more than one core keeps up with.
func (t *streamTuning) streamProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		t.procs.Store(int32(runtime.GOMAXPROCS(1)))
	}
}
