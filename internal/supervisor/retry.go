package supervisor

import (
	"fmt"
	"sync"
	"time"

	"github.com/narad/narad/internal/client"
)

// msgKey names a message across its deliveries: a redelivery has a new receipt
// handle but the same partition and offset.
type msgKey struct {
	partition int
	offset    int64
}

func keyOf(m *client.Message) msgKey { return msgKey{m.Partition, m.Offset} }

// maxTracked bounds the messages whose failures are remembered: past it, the one
// that failed longest ago is forgotten (it starts again at attempt 1).
const maxTracked = 10000

// attempts counts the failures of each message in this run.
type attempts struct {
	mu sync.Mutex
	m  map[msgKey]attempt
}

type attempt struct {
	n    int
	last time.Time
}

func newAttempts() *attempts { return &attempts{m: make(map[msgKey]attempt)} }

// add counts a failure of k at now and returns how many there were.
func (a *attempts) add(k msgKey, now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[k]
	if !ok && len(a.m) >= maxTracked {
		a.evictOldest()
	}
	e.n++
	e.last = now
	a.m[k] = e
	return e.n
}

func (a *attempts) evictOldest() {
	var oldest msgKey
	var at time.Time
	first := true
	for k, e := range a.m {
		if first || e.last.Before(at) {
			oldest, at, first = k, e.last, false
		}
	}
	delete(a.m, oldest)
}

// forget drops k: it succeeded, or went to the dead-letter topic.
func (a *attempts) forget(k msgKey) {
	a.mu.Lock()
	delete(a.m, k)
	a.mu.Unlock()
}

// runs numbers the runs of each message in this process, for NARAD_ATTEMPT. Every
// start counts, however the run ended: a success whose ack the node refused (410), a
// lease lost, a stop. So unlike attempts, which counts failures for --max-attempts, a
// message is not forgotten when it succeeds: it may come back. Memory is bounded by
// two generations of maxTracked messages: once the newer is full it becomes the older
// and the older is dropped, so only a message none of whose runs were among the last
// maxTracked to 2·maxTracked messages run starts again at 1.
type runs struct {
	mu       sync.Mutex
	cur, old map[msgKey]int
}

func newRuns() *runs { return &runs{cur: make(map[msgKey]int)} }

// next counts a run of k and returns its number: 1 for the first.
func (r *runs) next(k msgKey) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.cur[k]
	if !ok {
		if len(r.cur) >= maxTracked {
			r.old, r.cur = r.cur, make(map[msgKey]int)
		}
		n = r.old[k]
	}
	n++
	r.cur[k] = n
	return n
}

// undo takes back the count of a run of k that never started.
func (r *runs) undo(k msgKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.cur[k]; n > 0 {
		r.cur[k] = n - 1
	}
}

// holdFor is how long a message is held after its n-th failure: RetryDelay for the
// first (0 gives it back at once: another worker may succeed), and for a message
// that fails again RetryBackoff·2^(n-1), capped at RetryDelayMax, or RetryDelay if
// that is longer.
func (s *Supervisor) holdFor(n int) time.Duration {
	d := s.o.RetryDelay
	if n < 2 {
		return d
	}
	b := s.o.RetryBackoff
	for i := 1; i < n && b < s.o.RetryDelayMax; i++ {
		b *= 2
	}
	return max(d, min(b, s.o.RetryDelayMax))
}

// describe is how a run ended, for its line: "exit 1 after 0.02s".
func (r result) describe() string {
	switch r.end {
	case notRun:
		return r.how
	case timedOut:
		return fmt.Sprintf("timed out after %.2fs", r.took.Seconds())
	case stopped, leaseLost:
		return fmt.Sprintf("stopped after %.2fs", r.took.Seconds())
	}
	return fmt.Sprintf("%s after %.2fs", r.how, r.took.Seconds())
}

// tailText is the command's last stderr lines (with Verbose), set off from the rest
// of the failure line.
func (r result) tailText() string {
	if r.tail == "" {
		return ""
	}
	return "; its stderr ended: " + r.tail
}
