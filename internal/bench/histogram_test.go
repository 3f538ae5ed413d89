package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

const us = time.Microsecond

func histogramOf(ds ...time.Duration) *Histogram {
	h := &Histogram{}
	for _, d := range ds {
		h.Record(d)
	}
	return h
}

// Nearest rank: the smallest value that p% of the values are at or below. Below
// 256µs the buckets are single microseconds, so these are exact.
func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // order of recording does not matter
		ds = append(ds, time.Duration(i)*us)
	}
	h := histogramOf(ds...)
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * us}, {95, 95 * us}, {99, 99 * us}, {100, 100 * us}, {1, 1 * us}, {0.5, 1 * us}, {99.5, 100 * us},
	} {
		if got := h.Percentile(c.p); got != c.want {
			t.Errorf("p%v of 1..100µs = %v, want %v", c.p, got, c.want)
		}
	}
	if h.Count() != 100 || h.Max() != 100*us {
		t.Errorf("count %d max %v, want 100 and 100µs", h.Count(), h.Max())
	}
}

func TestPercentileSmallSamples(t *testing.T) {
	if got := (&Histogram{}).Percentile(50); got != 0 {
		t.Errorf("empty: p50 = %v, want 0", got)
	}
	one := histogramOf(7 * time.Millisecond)
	for _, p := range []float64{50, 95, 99} {
		if got := one.Percentile(p); got != 7*time.Millisecond {
			t.Errorf("one value: p%v = %v, want exactly 7ms (never above the largest value)", p, got)
		}
	}
	// Two values: p50 is the lower one (rank 1 of 2), p95 the higher.
	two := histogramOf(10*us, 200*us)
	if got := two.Percentile(50); got != 10*us {
		t.Errorf("p50 of {10µs, 200µs} = %v, want 10µs", got)
	}
	if got := two.Percentile(95); got != 200*us {
		t.Errorf("p95 of {10µs, 200µs} = %v, want 200µs", got)
	}
	// A tail: 98 fast answers and 2 slow ones move p99, not p95.
	var ds []time.Duration
	for range 98 {
		ds = append(ds, 100*us)
	}
	ds = append(ds, 900*time.Millisecond, time.Second)
	tail := histogramOf(ds...)
	if got := tail.Percentile(95); got != 100*us {
		t.Errorf("p95 = %v, want 100µs", got)
	}
	if got := tail.Percentile(99); got < 900*time.Millisecond || got > 900*time.Millisecond*129/128 {
		t.Errorf("p99 = %v, want 900ms within 1/128", got)
	}
	if got := tail.Max(); got != time.Second {
		t.Errorf("max = %v, want 1s", got)
	}
	// Sub-microsecond and negative durations count, as 0 or 1µs.
	if got := histogramOf(-time.Second, 400*time.Nanosecond, 600*time.Nanosecond).Percentile(100); got != us {
		t.Errorf("p100 of {-1s, 400ns, 600ns} = %v, want 1µs (rounded)", got)
	}
}

// Above 256µs a percentile is the top of its bucket: never below the true value,
// never more than 1/128 above it, and never above the largest value recorded.
func TestPercentileBoundedError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(500)
		vals := make([]uint64, n)
		h := &Histogram{}
		for i := range vals {
			vals[i] = 1 + uint64(rng.Int64N(int64(rng.IntN(40)+1)*int64(time.Millisecond/us)))
			h.Record(time.Duration(vals[i]) * us)
		}
		sorted := slices.Sorted(slices.Values(vals))
		for _, p := range []float64{50, 95, 99} {
			rank := min(max(int(math.Ceil(p/100*float64(n))), 1), n)
			want := sorted[rank-1]
			got := uint64(h.Percentile(p) / us)
			if got < want || got > want+want/128 || got > sorted[n-1] {
				t.Fatalf("n=%d p%v = %dµs, want %dµs (at most 1/128 over, at most the max %d)", n, p, got, want, sorted[n-1])
			}
		}
	}
}

// The buckets tile the values: each value lies in its bucket, buckets follow one
// another without a gap, and none is wider than 1/128 of its values.
func TestBucketsTile(t *testing.T) {
	prevHigh := uint64(0)
	for i := 1; i < nBuckets-1; i++ {
		lo, hi := prevHigh+1, bucketHigh(i)
		if hi < lo {
			t.Fatalf("bucket %d: high %d below its low %d", i, hi, lo)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d, %d]: bucketOf gives %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= subCount && (hi-lo+1)*128 > lo {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/128 of its values", i, lo, hi)
		}
		prevHigh = hi
	}
}

// Hooks record from many goroutines at once (run with -race).
func TestHistogramConcurrent(t *testing.T) {
	h := &Histogram{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000+i) * us)
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 {
		t.Errorf("count %d, want 8000", h.Count())
	}
}

func TestDistributionBuckets(t *testing.T) {
	if d := (&Histogram{}).Distribution(); d.Buckets != nil || d.P50 != -1 || d.P99 != -1 {
		t.Errorf("empty: %+v", d)
	}
	// 60 requests at 1.5ms, 30 at 3ms, 9 at 7ms, 1 at 120ms: buckets 1–2, 2–5, 5–10,
	// the empty ones up to 100–200ms kept.
	var ds []time.Duration
	for range 60 {
		ds = append(ds, 1500*us)
	}
	for range 30 {
		ds = append(ds, 3*time.Millisecond)
	}
	for range 9 {
		ds = append(ds, 7*time.Millisecond)
	}
	ds = append(ds, 120*time.Millisecond)
	d := histogramOf(ds...).Distribution()
	want := []Bucket{
		{1, 2, 60}, {2, 5, 30}, {5, 10, 9}, {10, 20, 0}, {20, 50, 0}, {50, 100, 0}, {100, 200, 1},
	}
	if !slices.Equal(d.Buckets, want) {
		t.Errorf("buckets\n%v, want\n%v", d.Buckets, want)
	}
	// p50 is the 50th value (1.5ms), p95 the 95th (7ms), p99 the 99th (7ms).
	if d.P50 != 0 || d.P95 != 2 || d.P99 != 2 {
		t.Errorf("marks p50 %d p95 %d p99 %d, want 0 2 2", d.P50, d.P95, d.P99)
	}
	// One more slow request moves p99 to the last bucket.
	ds = append(ds, 150*time.Millisecond)
	if d := histogramOf(ds...).Distribution(); d.P99 != 6 || d.Buckets[6].Count != 2 {
		t.Errorf("p99 %d, last bucket %v", d.P99, d.Buckets[6])
	}
}

// Every value is counted once, in the bucket that holds it, over the whole range of
// the fine histogram (sub-microsecond to seconds).
func TestDistributionCountsEveryValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := &Histogram{}
	var vals []time.Duration
	for range 5000 {
		d := time.Duration(math.Exp(r.Float64()*math.Log(float64(5*time.Second)))) * time.Nanosecond
		vals = append(vals, d)
		h.Record(d)
	}
	d := h.Distribution()
	var total int64
	for i, b := range d.Buckets {
		total += b.Count
		if i > 0 && b.FromMs != d.Buckets[i-1].ToMs {
			t.Errorf("bucket %d starts at %v, the one before ends at %v", i, b.FromMs, d.Buckets[i-1].ToMs)
		}
	}
	if total != 5000 {
		t.Errorf("%d counted, want 5000", total)
	}
	// Counts agree with the values (to the microsecond the histogram keeps) within
	// the fine buckets' width (1/128).
	for _, b := range d.Buckets {
		var n int64
		lo, hi := time.Duration(b.FromMs*1e6*(1-1.0/128)), time.Duration(b.ToMs*1e6*(1+1.0/128))
		for _, v := range vals {
			if v := v.Round(us); v >= lo && v < hi {
				n++
			}
		}
		if b.Count > n {
			t.Errorf("bucket %v–%vms counts %d, only %d values are near it", b.FromMs, b.ToMs, b.Count, n)
		}
	}
}
