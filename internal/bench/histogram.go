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
	rank := rankOf(p, h.n)
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

// bucketHigh is the largest value in bucket i: the next bucket starts right after it.
func bucketHigh(i int) uint64 { return bucketLow(i+1) - 1 }

// bucketLow is the smallest value in bucket i.
func bucketLow(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	j := i - subCount
	e := j/halfSub + 1
	m := uint64(j%halfSub + halfSub)
	return m << e
}

// Bucket is one bar of a latency distribution: Count requests took from FromMs to
// under ToMs milliseconds. -o json prints these: the names are stable.
type Bucket struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	Count  int64   `json:"count"`
}

// Distribution is a histogram in buckets a reader takes in at a glance.
type Distribution struct {
	Buckets []Bucket
	// P50, P95 and P99 are the indexes of the buckets those percentiles fall in
	// (-1 when nothing was recorded).
	P50, P95, P99 int
}

// Distribution is the recorded durations in log-scaled buckets, 1, 2 and 5 times
// each power of ten microseconds (…, 0.5–1ms, 1–2ms, 2–5ms, 5–10ms, …), from the
// bucket of the fastest request to that of the slowest, empty ones between kept. A
// fine bucket is counted where its lowest value falls: a bucket boundary is exact
// to within 1/128 of it.
func (h *Histogram) Distribution() Distribution {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := Distribution{P50: -1, P95: -1, P99: -1}
	if h.n == 0 {
		return d
	}
	// Bounds: 0, 1, 2, 5, 10, 20, 50, ... microseconds, up to past the largest value.
	bounds := []uint64{0}
	for step := uint64(1); bounds[len(bounds)-1] <= h.max; step *= 10 {
		bounds = append(bounds, step, 2*step, 5*step)
	}
	// bar is the bucket [bounds[k], bounds[k+1]) that holds v.
	bar := func(v uint64) int {
		k := 0
		for k+1 < len(bounds) && bounds[k+1] <= v {
			k++
		}
		return k
	}
	first, last := bar(h.min), bar(h.max)
	counts := make([]int64, last-first+1)
	ranks := []uint64{rankOf(50, h.n), rankOf(95, h.n), rankOf(99, h.n)}
	marks := []*int{&d.P50, &d.P95, &d.P99}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		k := min(max(bar(bucketLow(i)), first), last) - first
		counts[k] += int64(c)
		for j, r := range ranks {
			if *marks[j] < 0 && seen+c >= r {
				*marks[j] = k
			}
		}
		seen += c
	}
	for k, c := range counts {
		d.Buckets = append(d.Buckets, Bucket{
			FromMs: float64(bounds[first+k]) / 1000, ToMs: float64(bounds[first+k+1]) / 1000, Count: c,
		})
	}
	return d
}

// rankOf is the nearest rank of percentile p among n values, as Percentile takes it.
func rankOf(p float64, n uint64) uint64 {
	return min(max(uint64(math.Ceil(p/100*float64(n))), 1), n)
}
