package replay

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
)

// stamped is a topic whose messages carry timestamps: ts[p][i] is the stamp of
// offset i of partition p. Offsets below oldest[p] answer 410; gone, when set, runs
// before each read and may move oldest (retention at work during a search).
type stamped struct {
	mu     sync.Mutex
	ts     [][]int64
	oldest []int64
	reads  int
	gone   func(s *stamped)
}

func (s *stamped) Topic(ctx context.Context, name string) (*client.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &client.Topic{Name: name, Partitions: len(s.ts)}
	for i, p := range s.ts {
		t.PartitionStats = append(t.PartitionStats, client.PartitionStats{Index: i, OldestOffset: s.oldest[i], HighWatermark: int64(len(p))})
	}
	return t, nil
}

func (s *stamped) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.gone != nil {
		s.gone(s)
	}
	if off < s.oldest[p] {
		return nil, &client.Error{Op: client.OpReplay, Status: 410, Message: "gone"}
	}
	if off >= int64(len(s.ts[p])) {
		return nil, nil
	}
	return &client.Message{Topic: topic, Partition: p, Offset: off, Timestamp: s.ts[p][off], Payload: []byte(`1`)}, nil
}

func (s *stamped) append(p int, ts int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ts[p] = append(s.ts[p], ts)
}

func newStamped(parts ...[]int64) *stamped {
	return &stamped{ts: parts, oldest: make([]int64, len(parts))}
}

type hit struct {
	p   int
	off int64
}

// runWindow reads the whole topic with since/until (unix seconds; 0: not set) and
// returns what was emitted, what the searches found, and the reads made before the
// first message was emitted.
func runWindow(t *testing.T, src *stamped, since, until int64) (got []hit, found []Found, readsBefore int) {
	t.Helper()
	o := Options{Topic: "t", To: -1, OnFound: func(f Found) { found = append(found, f) }}
	if since != 0 {
		o.Since = time.Unix(since, 0)
	}
	if until != 0 {
		o.Until = time.Unix(until, 0)
	}
	readsBefore = -1
	_, err := Run(context.Background(), src, o, func(m *client.Message) error {
		if readsBefore < 0 {
			readsBefore = src.reads
		}
		got = append(got, hit{m.Partition, m.Offset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, found, readsBefore
}

// want is what a reader of every message would print: offsets from start (per
// partition) whose stamp is in [since, until].
func want(src *stamped, start []int64, since, until int64) []hit {
	var w []hit
	for p, ts := range src.ts {
		for off := start[p]; off < int64(len(ts)); off++ {
			if ts[off] >= since && (until == 0 || ts[off] <= until) {
				w = append(w, hit{p, off})
			}
		}
	}
	return w
}

func ceilLog2(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}

// readBound is the promise: at most 2·⌈log2 n⌉ + 4 replay reads before the first
// message printed from a partition of n.
func readBound(n int64) int { return 2*ceilLog2(n) + 4 }

func TestSinceUntilOnSortedPartitionsIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n := rng.IntN(300)
		ts := make([]int64, n)
		at := int64(1_000)
		for i := range ts {
			at += int64(rng.IntN(3)) // repeats: many messages share a second
			ts[i] = at
		}
		since := 1_000 + int64(rng.IntN(int(at-1_000)+3))
		until := int64(0)
		if rng.IntN(2) == 0 {
			until = since + int64(rng.IntN(100))
		}
		src := newStamped(ts)
		got, found, before := runWindow(t, src, since, until)
		if w := want(src, []int64{0}, since, until); !slices.Equal(got, w) {
			t.Fatalf("trial %d since %d until %d over %v:\ngot  %v\nwant %v", trial, since, until, ts, got, w)
		}
		if len(found) != 1 || found[0].Broken {
			t.Fatalf("trial %d: found %+v, want one unbroken search", trial, found)
		}
		if len(got) > 0 && before > readBound(int64(n)) {
			t.Fatalf("trial %d: %d reads before the first message of %d, bound %d", trial, before, n, readBound(int64(n)))
		}
	}
}

func TestSinceSearchesEachPartition(t *testing.T) {
	src := newStamped([]int64{1, 2, 3, 4}, nil, []int64{5, 6}, []int64{1, 1, 1})
	got, found, _ := runWindow(t, src, 3, 0)
	if w := []hit{{0, 2}, {0, 3}, {2, 0}, {2, 1}}; !slices.Equal(got, w) {
		t.Errorf("got %v, want %v", got, w)
	}
	starts := []int64{}
	for _, f := range found {
		starts = append(starts, f.Start)
	}
	if w := []int64{2, 0, 0, 3}; !slices.Equal(starts, w) {
		t.Errorf("starts %v, want %v (an empty partition at 0, an all-older one at its tail)", starts, w)
	}
}

func TestUntilAloneStopsAfterTheLastInRange(t *testing.T) {
	src := newStamped([]int64{10, 20, 30, 40, 50})
	got, found, _ := runWindow(t, src, 0, 30)
	if w := []hit{{0, 0}, {0, 1}, {0, 2}}; !slices.Equal(got, w) || found != nil {
		t.Errorf("got %v found %v, want offsets 0..2 and no search", got, found)
	}
	if src.reads != 4 {
		t.Errorf("%d reads, want 4: the message past until ends the partition", src.reads)
	}
}

// A clock stepped back: offsets 1..4 are stamped later than what follows. A probe
// at 4 is later than the probe at 8 on its right: the search falls back to the
// last good point (0 here) and reads on, so the in-range messages at 1 and 4 are
// printed. Trusting the bisection instead would have started at 4 and lost 1.
func TestSinceOnABrokenOrderFallsBackAndLosesNothing(t *testing.T) {
	ts := []int64{10, 70, 20, 30, 95, 40, 45, 50, 60, 61, 62, 63, 64, 65, 66, 67}
	src := newStamped(ts)
	got, found, _ := runWindow(t, src, 55, 0)
	if len(found) != 1 || !found[0].Broken || found[0].Start != 0 {
		t.Fatalf("found %+v, want a broken order seen and a start at 0", found)
	}
	if w := want(src, []int64{0}, 55, 0); !slices.Equal(got, w) {
		t.Errorf("got %v, want %v", got, w)
	}
	if !slices.Contains(got, hit{0, 1}) {
		t.Errorf("offset 1 (stamped 70, after since) was skipped")
	}
}

// Whatever the order, every message from the start found on that is in range is
// printed: the search may start later than a message out of order before it, never
// skip one after it.
func TestSinceOnAnyOrderPrintsEverythingInRangeFromItsStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 1 + rng.IntN(200)
		ts := make([]int64, n)
		at := int64(1_000)
		for i := range ts {
			at += int64(rng.IntN(5)) - 1 // now and then a step back
			if rng.IntN(40) == 0 {
				at -= int64(rng.IntN(50)) // a clock stepped back
			}
			ts[i] = at
		}
		since := 950 + int64(rng.IntN(200))
		src := newStamped(ts)
		got, found, _ := runWindow(t, src, since, 0)
		if w := want(src, []int64{found[0].Start}, since, 0); !slices.Equal(got, w) {
			t.Fatalf("trial %d since %d from %d over %v:\ngot  %v\nwant %v", trial, since, found[0].Start, ts, got, w)
		}
	}
}

// --until ends a partition at its first message past it, unless the partition was
// seen out of order: then it reads on to the tail, printing only what is in range.
func TestUntilOnABrokenOrderReadsOn(t *testing.T) {
	src := newStamped([]int64{10, 30, 20, 100, 40, 50})
	got, _, _ := runWindow(t, src, 0, 60)
	if w := []hit{{0, 0}, {0, 1}, {0, 2}, {0, 4}, {0, 5}}; !slices.Equal(got, w) {
		t.Errorf("seen broken (30 then 20): got %v, want %v", got, w)
	}
	src = newStamped([]int64{10, 20, 30, 100, 40, 50})
	got, _, _ = runWindow(t, src, 0, 60)
	if w := []hit{{0, 0}, {0, 1}, {0, 2}}; !slices.Equal(got, w) {
		t.Errorf("in order up to 100: got %v, want %v", got, w)
	}
}

// Retention drops the front of the partition while the search runs: the window
// starts at the new oldest, and the result is still the first kept message in range.
func TestSinceWhileRetentionMovesTheOldest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		since      int64
		after      int   // reads before retention moves
		newOldest  int64 // where it moves to
		wantStart  int64
		wantBroken bool
	}{
		{"gone before the start", 700, 1, 300, 700, false},
		{"the start itself gone", 200, 2, 600, 600, false},
		{"everything but the tail", 500, 0, 999, 999, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := make([]int64, 1000)
			for i := range ts {
				ts[i] = int64(i)
			}
			src := newStamped(ts)
			src.gone = func(s *stamped) {
				if s.reads > tc.after {
					s.oldest[0] = tc.newOldest
				}
			}
			got, found, before := runWindow(t, src, tc.since, 0)
			if found[0].Start != tc.wantStart || found[0].Broken != tc.wantBroken {
				t.Fatalf("found %+v, want start %d", found[0], tc.wantStart)
			}
			if w := want(src, []int64{tc.wantStart}, tc.since, 0); !slices.Equal(got, w) {
				t.Errorf("got %d messages from %v, want %d", len(got), got[:1], len(w))
			}
			if before > readBound(1000) {
				t.Errorf("%d reads before the first message, bound %d", before, readBound(1000))
			}
		})
	}
}

// With --follow, an --until in the future ends the read once the clock passes it:
// what was stamped up to until is all printed, later messages are not, and Run
// returns by itself. synctest's clock makes the moment exact.
func TestFollowEndsWhenTheClockPassesUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newStamped(nil, nil, nil)
		start := time.Now().Unix()
		until := start + 5
		produced := make(chan struct{})
		defer func() { <-produced }()
		go func() {
			defer close(produced)
			// One message a second into each partition in turn, for ten seconds.
			for i := range 10 {
				src.append(i%3, time.Now().Unix())
				time.Sleep(time.Second)
			}
		}()
		var got []int64
		// Bounded, so a follow that never ends fails here instead of hanging.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := Run(ctx, src, Options{Topic: "t", Start: FromOldest, To: -1, Follow: true,
			PollInterval: 300 * time.Millisecond, Until: time.Unix(until, 0)},
			func(m *client.Message) error {
				got = append(got, m.Timestamp-start)
				return nil
			})
		ended := time.Now().Unix() - start
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if w := []int64{0, 1, 2, 3, 4, 5}; !slices.Equal(got, w) || n != len(w) {
			t.Errorf("printed stamps %v (n %d), want %v", got, n, w)
		}
		if ended != 6 {
			t.Errorf("ended %ds after the start, want 6 (until's second over)", ended)
		}
	})
}

// A follow whose until is already over reads what is there and ends.
func TestFollowWithAPastUntilEnds(t *testing.T) {
	src := newStamped([]int64{10, 20}, []int64{15})
	var got []hit
	_, err := Run(context.Background(), src, Options{Topic: "t", Start: FromOldest, To: -1, Follow: true,
		PollInterval: time.Hour, Until: time.Unix(17, 0)},
		func(m *client.Message) error { got = append(got, hit{m.Partition, m.Offset}); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if w := []hit{{0, 0}, {1, 0}}; !slices.Equal(got, w) {
		t.Errorf("got %v, want %v", got, w)
	}
}

// TestReadCountsWhatTheRangeSkips: Options.Read counts every message read, the one
// past until that the range skips too, so that a watch tells a read skipping what it
// reads from one with nothing to read.
func TestReadCountsWhatTheRangeSkips(t *testing.T) {
	src := newStamped([]int64{10, 20, 30, 40, 50})
	var read atomic.Int64
	var kept int
	_, err := Run(context.Background(), src, Options{Topic: "t", To: -1, Since: time.Unix(25, 0), Until: time.Unix(35, 0), Read: &read},
		func(*client.Message) error { kept++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if kept != 1 || read.Load() != 2 {
		t.Errorf("kept %d, read %d; want 1 kept (30) of 2 read (30, then 40 past until)", kept, read.Load())
	}
}
