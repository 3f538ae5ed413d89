package cli

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/narad/narad/internal/consumer"
)

// processTuning is where the process's runtime settings (the collector's headroom and
// the Ps) are decided, for the whole process: Main makes the one of the process and
// the Factory carries it. A Factory without one (tests, which run many commands in one
// process) leaves the runtime alone; so does a setting the user made (GOGC,
// GOMAXPROCS in the environment).
//
// What it decides, for a stream of messages (every `sub` but hold mode):
//   - The collector runs at half its default headroom (GOGC=50). A consume stream
//     keeps little alive and makes garbage at every batch, so the heap it peaks at is
//     the runtime's minimum goal, whatever the stream's length; halving it keeps the
//     peak RSS of a long drain close to a short one's, for more collections of a tiny
//     heap.
//   - A stream whose handler says so (consumer.Pipelining's OneP: a Printer) runs on
//     one P. Its own work is a few microseconds of CPU a message
//     between network waits, spread over a few goroutines that hand each message on
//     (the consume, the write, the ack); with more Ps every handoff woke another
//     thread, and on a busy machine the runtime spent more CPU waking and parking
//     threads than on the messages. One core still serves far more messages a second
//     than a node hands out. A pipe's writer waits in poll for the reader, but once a
//     page past the first lines, not once a line. Exec mode's commands' fork, exec and
//     wait are system calls that hold one: it keeps every P.
//   - Once the node turns out to answer one message per consume (older than v3.1),
//     the collector gets twice its default headroom (GOGC=200) and the stream every P
//     back: every message then costs two requests and their HTTP machinery, and
//     collections at half headroom, or even at the default, took a share of the CPU
//     worth more than the little peak memory they save, while the HTTP machinery of
//     the consumes side by side is more than one core keeps up with.
//
// docs/performance.md has the figures.
type processTuning struct {
	ownsGC    bool         // the user did not set GOGC: the stream sets it
	ownsProcs bool         // the user did not set GOMAXPROCS
	procs     atomic.Int32 // the Ps before a stream lowered them to 1; 0 when none did
}

// singleMessageGC is the collector's headroom, in percent, for a node that answers
// one message per consume (see processTuning).
const singleMessageGC = 200

// newProcessTuning reads the user's settings from getenv; it changes nothing yet.
func newProcessTuning(getenv func(string) string) *processTuning {
	return &processTuning{ownsGC: getenv("GOGC") == "", ownsProcs: getenv("GOMAXPROCS") == ""}
}

// stream tunes the process for a stream whose handler's pipelining is pl (the zero
// value for a stream read without the consume loop: --peek, the canary), and returns
// what to call once the node turns out to answer one message per consume
// (consumer.Options.OnSingle). A nil tuning changes nothing and returns nil.
func (t *processTuning) stream(pl consumer.Pipelining) (onSingle func()) {
	if t == nil {
		return nil
	}
	if t.ownsGC {
		debug.SetGCPercent(50)
	}
	if pl.OneP && t.ownsProcs {
		if n := runtime.GOMAXPROCS(1); n > 1 {
			t.procs.CompareAndSwap(0, int32(n))
		}
	}
	return t.single
}

// single retunes a stream whose node answers one message per consume.
func (t *processTuning) single() {
	if t.ownsGC {
		debug.SetGCPercent(singleMessageGC)
	}
	if n := t.procs.Swap(0); n > 0 {
		runtime.GOMAXPROCS(int(n))
	}
}
