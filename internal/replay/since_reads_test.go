package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
)

// What --since costs against narad dev, over loopback HTTP: the broker counts the
// replay reads it serves, from the search to the first message printed.

// stampedBroker is a dev broker whose topic t holds n messages in one partition,
// stamped ten to a second by the broker's own clock.
type stampedBroker struct {
	b         *devbroker.Broker
	c         *client.Client
	partition int
	first     time.Time // the first message's stamp
}

func startStamped(tb testing.TB, n int) *stampedBroker {
	tb.Helper()
	var mu sync.Mutex
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Now: now,
		Topics: []devbroker.TopicSpec{{Name: "t"}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	s := &stampedBroker{b: b, first: at}
	for i := range n {
		if i > 0 && i%10 == 0 {
			mu.Lock()
			at = at.Add(time.Second)
			mu.Unlock()
		}
		// One key: one partition holds them all.
		p, _, err := b.Produce("t", "k", []byte(`{"n":1}`))
		if err != nil {
			tb.Fatal(err)
		}
		s.partition = p
	}
	if s.c, err = client.New(client.Config{BaseURL: b.URL()}); err != nil {
		tb.Fatal(err)
	}
	return s
}

// readsToFirst runs a --since read and returns the replay reads the broker served
// up to the first message emitted (all of them when none is), and its offset (-1:
// none).
func (s *stampedBroker) readsToFirst(tb testing.TB, since time.Time) (reads int, first int64) {
	tb.Helper()
	before := s.b.Requests("replay")
	first = -1
	_, err := Run(context.Background(), s.c, Options{Topic: "t", Partition: &s.partition, To: -1, Since: since},
		func(m *client.Message) error {
			first = m.Offset
			return ErrStop
		})
	if err != nil && !errors.Is(err, ErrStop) {
		tb.Fatal(err)
	}
	return s.b.Requests("replay") - before, first
}

// sinceProbes are the --since times tried over a partition of n: its first stamp,
// a third in, the middle, its last stamp, and past its end.
func sinceProbes(first time.Time, n int) []time.Time {
	last := first.Add(time.Duration((n-1)/10) * time.Second)
	span := last.Sub(first)
	return []time.Time{first, first.Add(span / 3), first.Add(span / 2), last, last.Add(time.Hour)}
}

// TestSinceReadsStayLogarithmic checks the promise, at most 2·⌈log2 n⌉ + 4 replay
// reads before the first message printed, for partitions of 10³, 10⁴ and 10⁵
// messages, and logs the figures beside what a scan from the oldest would read.
func TestSinceReadsStayLogarithmic(t *testing.T) {
	sizes := []int{1_000, 10_000, 100_000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		s := startStamped(t, n)
		worst, scan := 0, int64(0)
		for _, since := range sinceProbes(s.first, n) {
			reads, first := s.readsToFirst(t, since)
			worst = max(worst, reads)
			if first >= 0 {
				scan = max(scan, first+1)
			} else {
				scan = int64(n) // a scan reads all of them to find none
			}
		}
		if bound := readBound(int64(n)); worst > bound {
			t.Errorf("n=%d: %d reads before the first message, bound 2·⌈log2 n⌉+4 = %d", n, worst, bound)
		}
		t.Logf("n=%-7d search: at most %2d reads   scan from the oldest: up to %d reads   bound: %d",
			n, worst, scan, readBound(int64(n)))
	}
}

// BenchmarkSinceSearch times one --since read to its first message over narad dev,
// from the middle of the partition, and reports the replay reads it took.
func BenchmarkSinceSearch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := startStamped(b, n)
			since := sinceProbes(s.first, n)[2]
			var reads, first int64
			b.ResetTimer()
			for b.Loop() {
				r, f := s.readsToFirst(b, since)
				reads, first = int64(r), f
			}
			b.ReportMetric(float64(reads), "reads")
			b.ReportMetric(float64(first+1), "scan-reads")
		})
	}
}
