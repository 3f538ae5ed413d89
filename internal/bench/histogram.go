package bench

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// The histogram's buckets: exact below subCount microseconds, and above it each power
// of two split into halfSub buckets, so a bucket is never wider than 1/128 of its
// values. Memory stays the same (about 58 KiB) however many requests a run makes.
const (
	subBits  = 8
	subCount = 1 << subBits // 256
	halfSub  = subCount / 2 // 128
	nBuckets = subCount + (64-subBits)*halfSub
)

// Histogram counts durations at microsecond resolution for percentiles. It is safe
// for concurrent use: the client's hooks record into it from many goroutines.
type Histogram struct {
	mu       sync.Mutex
	counts   [nBuckets]uint64
	n        uint64
	min, max uint64 // microseconds
}

// Record counts one duration; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64((d + time.Microsecond/2) / time.Microsecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[bucketOf(us)]++
	if h.n == 0 || us < h.min {
		h.min = us
	}
	if us > h.max {
		h.max = us
	}
	h.n++
}

// Count is the number of durations recorded.
func (h *Histogram) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int64(h.n)
}

// Max is the longest duration recorded, 0 when none was.
func (h *Histogram) Max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Duration(h.max) * time.Microsecond
}

// Percentile is the nearest-rank percentile p (0 < p <= 100): the smallest recorded
// value that at least p% of the values are at or below. Below 256µs it is exact;
// above, it is the top of the value's bucket (at most 1/128 over), never more than
// the largest value recorded. It is 0 when nothing was recorded.
func (h *Histogram) Percentile(p float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := min(max(bucketHigh(i), h.min), h.max)
			return time.Duration(v) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// bucketOf is the bucket of a value in microseconds.
func bucketOf(us uint64) int {
	if us < subCount {
		return int(us)
	}
	e := bits.Len64(us) - subBits // 1 or more: us>>e is in [halfSub, subCount)
	m := us >> e
	return subCount + (e-1)*halfSub + int(m-halfSub)
}

// bucketHigh is the largest value in bucket i.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	j := i - subCount
	e := j/halfSub + 1
	m := uint64(j%halfSub + halfSub)
	return (m+1)<<e - 1
}
