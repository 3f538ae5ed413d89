package cli

import "runtime/debug"

// streamGC runs the collector at half its default headroom (GOGC=50) unless the user
// set GOGC. A consume stream keeps little alive and makes garbage at every batch, so
// the heap it peaks at is the runtime's minimum goal (4 MB at the default), whatever
// the stream's length; halving it keeps the peak RSS of a 100,000-message drain
// within a fifth of a 1,000-message one, for more collections of a tiny heap.
func streamGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
