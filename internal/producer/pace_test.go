package producer

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
)

// timedClient accepts everything after `took` (of the bubble's clock) and records,
// for each request, when it was sent, its messages and the most requests that were
// out at once.
type timedClient struct {
	took  time.Duration
	start time.Time

	mu       sync.Mutex
	sends    []timedSend
	inFlight int
	maxOut   int
	noBatch  bool // answer batches as a node without batch produce
}

type timedSend struct {
	at         time.Duration
	payloads   []string
	partitions []*int
	batch      bool
}

func (c *timedClient) record(msgs []client.ProduceMessage, batch bool) func() {
	s := timedSend{at: time.Since(c.start), batch: batch}
	for _, m := range msgs {
		s.payloads = append(s.payloads, string(m.Payload))
		s.partitions = append(s.partitions, m.Partition)
	}
	c.mu.Lock()
	c.sends = append(c.sends, s)
	c.inFlight++
	c.maxOut = max(c.maxOut, c.inFlight)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}
}

func (c *timedClient) ProduceBatch(ctx context.Context, topic string, msgs []client.ProduceMessage) error {
	if c.noBatch {
		return client.ErrNoBatchProduce
	}
	defer c.record(msgs, true)()
	time.Sleep(c.took)
	return nil
}

func (c *timedClient) Produce(ctx context.Context, topic string, body []byte, o client.ProduceOptions) error {
	defer c.record([]client.ProduceMessage{{Payload: body, Partition: o.Partition}}, false)()
	time.Sleep(c.took)
	return nil
}

func (c *timedClient) snapshot() (sends []timedSend, maxOut int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sends), c.maxOut
}

// --rate N: in every stretch of the run, at most N a second went, plus one burst; the
// batches are a burst each rather than a message at a time.
func TestRate(t *testing.T) {
	for _, j := range []int{1, 4} {
		t.Run(fmt.Sprint("j", j), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &timedClient{took: time.Millisecond, start: time.Now()}
				res := Run(context.Background(), c, Lines(strings.NewReader(numbered(300))), Options{Topic: "t", Rate: 25, Concurrency: j})
				if res.Produced != 300 {
					t.Fatalf("result %+v", res)
				}
				sends, _ := c.snapshot()
				burst := RateBurst(25)
				withinRate(t, sends, 25, false)
				if last := sends[len(sends)-1].at; last < 11*time.Second-time.Millisecond {
					t.Errorf("300 messages at 25 a second were all sent by %v", last)
				}
				// Not a message at a time: about one request per burst.
				if len(sends) > 300/burst+2*j+2 {
					t.Errorf("%d requests for 300 messages in bursts of %d", len(sends), burst)
				}
			})
		})
	}
}

// --rate on a node without batch produce: the batch its router refused goes message
// by message on the rate it already took, so the run takes as long as on a newer
// node (a burst, then 25 a second), not a burst more per worker.
func TestRateOnAnOlderNode(t *testing.T) {
	for _, j := range []int{1, 4} {
		t.Run(fmt.Sprint("j", j), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &timedClient{took: time.Millisecond, start: time.Now(), noBatch: true}
				res := Run(context.Background(), c, Lines(strings.NewReader(numbered(300))), Options{Topic: "t", Rate: 25, Concurrency: j})
				if res.Produced != 300 {
					t.Fatalf("result %+v", res)
				}
				sends, _ := c.snapshot()
				_, last := withinRate(t, sends, 25, true)
				// 275 after the first burst, at 25 a second: 11s on the bubble's clock.
				if want := 11 * time.Second; last < want-time.Millisecond || last > want+100*time.Millisecond {
					t.Errorf("the last of 300 messages at 25 a second went at %v, want %v", last, want)
				}
			})
		})
	}
}

// withinRate fails t when the messages sent by the time of any request are more than
// a limiter of rate a second allows (one burst, then rate a second; rounded, as the
// limiter's clock arithmetic is to the nanosecond), or when one request carries more
// than a burst. With refused, batches are skipped: the node refused them unread. It
// returns the messages sent and when the last went.
func withinRate(t *testing.T, sends []timedSend, rate int, refused bool) (sent int, last time.Duration) {
	t.Helper()
	burst := RateBurst(float64(rate))
	for _, s := range sends {
		if refused && s.batch {
			continue
		}
		sent += len(s.payloads)
		last = max(last, s.at)
		if allowed := burst + int(math.Round(float64(rate)*s.at.Seconds())); sent > allowed {
			t.Fatalf("%d messages sent by %v, the rate allows %d", sent, s.at, allowed)
		}
		if len(s.payloads) > burst {
			t.Errorf("a request of %d messages, over the burst of %d", len(s.payloads), burst)
		}
	}
	return sent, last
}

func tape(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// --pace F: each line goes at its timestamp's offset from the first, F times faster;
// a line the tape has passed goes at once and is noted; the position is the tape's time.
func TestPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &timedClient{start: time.Now()}
		in := tape(
			`{"payload":"a","timestamp":1000}`,
			`{"payload":"b","timestamp":1010}`,
			`{"payload":"c","timestamp":1010}`,
			`{"payload":"d","timestamp":1060}`,
			`{"payload":"late","timestamp":1001}`,
			`{"payload":"untimed"}`,
			`{"payload":"e","timestamp":1120}`,
		)
		src := Paced(JSONLinesWith(strings.NewReader(in), JSONFields{Timestamp: true}), 10, nil)
		res := Run(context.Background(), c, src, Options{Topic: "t"})
		if res.Produced != 7 {
			t.Fatalf("result %+v", res)
		}
		sends, _ := c.snapshot()
		at := map[string]time.Duration{}
		for _, s := range sends {
			for _, p := range s.payloads {
				at[p] = s.at
			}
		}
		want := map[string]time.Duration{"a": 0, "b": time.Second, "c": time.Second, "d": 6 * time.Second,
			"late": 6 * time.Second, "untimed": 6 * time.Second, "e": 12 * time.Second}
		for p, w := range want {
			if at[p] != w {
				t.Errorf("%s sent at %v, want %v", p, at[p], w)
			}
		}
		if b := src.FirstBehind(); b == nil || b.Pos != 5 || b.By != 59*time.Second {
			t.Errorf("behind %+v, want line 5 by 59s", b)
		}
		pos, first, ok := src.Position()
		if !ok || pos.Unix() != 1120 || first.Unix() != 1000 {
			t.Errorf("position %v from %v", pos.Unix(), first.Unix())
		}
	})
}

// A stop ends a wait for the next line's time.
func TestPaceStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		c := &timedClient{start: time.Now()}
		in := tape(`{"payload":"a","timestamp":1000}`, `{"payload":"b","timestamp":999000}`)
		src := Paced(JSONLinesWith(strings.NewReader(in), JSONFields{Timestamp: true}), 1, stop)
		go func() {
			time.Sleep(time.Minute)
			close(stop)
		}()
		res := Run(context.Background(), c, src, Options{Topic: "t", Stop: stop})
		if res.Produced != 1 || !res.Stopped || res.Resume != 2 {
			t.Errorf("result %+v", res)
		}
	})
}

// A lone message goes by single produce: one request on every node.
func TestLoneMessageSingle(t *testing.T) {
	for _, src := range []Source{Args([]string{"one"}), Whole(strings.NewReader("one"))} {
		fc := &fakeClient{}
		res := Run(context.Background(), fc, src, Options{Topic: "t"})
		batches, singles, _ := fc.snapshot()
		if res.Produced != 1 || len(batches) != 0 || len(singles) != 1 {
			t.Errorf("%T: %d batch and %d single requests for one message", src, len(batches), len(singles))
		}
	}
}

// A batch that falls back to single produces keeps -j requests in flight.
func TestFallbackKeepsConcurrency(t *testing.T) {
	for _, j := range []int{1, 8} {
		synctest.Test(t, func(t *testing.T) {
			c := &timedClient{took: 10 * time.Millisecond, start: time.Now(), noBatch: true}
			// One record's 16 copies make one batch: the node answers it 404.
			res := Run(context.Background(), c, Args([]string{"m"}), Options{Topic: "t", Count: 16, Concurrency: j})
			sends, maxOut := c.snapshot()
			if res.Produced != 16 || len(sends) != 16 {
				t.Fatalf("produced %d in %d requests", res.Produced, len(sends))
			}
			if maxOut != j {
				t.Errorf("-j %d: %d requests in flight at most", j, maxOut)
			}
		})
	}
}

// --keep-partition: each message goes to its line's partition; a line without one goes
// by its key. A partition the topic lacks fails its line only: the rest of its batch
// is sent again and stored.
func TestKeepPartition(t *testing.T) {
	fc := &fakeClient{}
	var partitions sync.Map
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		for i, m := range batch {
			if m.Partition != nil && *m.Partition >= 3 {
				return &client.BatchRefusal{Index: i, Err: &client.Error{Status: 400, Message: "partition must be an integer from 0 to 2"}}
			}
		}
		for _, m := range batch {
			partitions.Store(string(m.Payload), m.Partition)
		}
		return nil
	}
	in := tape(
		`{"partition":0,"payload":"p0"}`,
		`{"partition":2,"payload":"p2"}`,
		`{"partition":7,"payload":"p7"}`,
		`{"payload":"none"}`,
		`{"partition":1,"payload":"p1"}`,
		`{"partition":-1,"payload":"neg"}`,
	)
	var fs failures
	// Count 2 keeps every request a batch, whatever the timing.
	res := Run(context.Background(), fc, JSONLinesWith(strings.NewReader(in), JSONFields{Partition: true}),
		Options{Topic: "t", KeepPartition: true, Count: 2, OnFailure: fs.add})
	if res.Produced != 8 || res.Failed != 3 {
		t.Errorf("result %+v", res.Stats)
	}
	want := map[string]string{"p0": "0", "p2": "2", "none": "none", "p1": "1"}
	for p, w := range want {
		v, ok := partitions.Load(p)
		got := "missing"
		if ok {
			got = "none"
			if pp := v.(*int); pp != nil {
				got = fmt.Sprint(*pp)
			}
		}
		if got != w {
			t.Errorf("%s went to partition %s, want %s", p, got, w)
		}
	}
	got := fs.list()
	slices.Sort(got)
	if len(got) != 2 || !strings.HasPrefix(got[0], "3 400 ") || !strings.HasPrefix(got[1], "6 0 partition -1 is not a partition") {
		t.Errorf("reports %q", got)
	}
}

// Restoring into a topic with fewer partitions: once the node refused a line for its
// partition, the topic's count is asked, once, and the lines of the partitions it
// lacks fail with that refusal without a request each.
func TestKeepPartitionMissingAsksOnce(t *testing.T) {
	var b strings.Builder
	for p := range 6 {
		for i := range 50 {
			fmt.Fprintf(&b, `{"partition":%d,"payload":"p%d-%d"}`+"\n", p, p, i)
		}
	}
	fc := &fakeClient{}
	var refusals atomic.Int32 // requests that carried a message for a missing partition
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		for i, m := range batch {
			if *m.Partition >= 3 {
				refusals.Add(1)
				return &client.BatchRefusal{Index: i, Err: &client.Error{Status: 400, Message: "partition must be an integer from 0 to 2"}}
			}
		}
		return nil
	}
	var asked atomic.Int32
	var fs failures
	res := Run(context.Background(), fc, JSONLinesWith(strings.NewReader(b.String()), JSONFields{Partition: true}),
		Options{Topic: "t", KeepPartition: true, OnFailure: fs.add,
			Partitions: func(context.Context) (int, error) { asked.Add(1); return 3, nil }})
	_, singles, stored := fc.snapshot()
	if res.Produced != 150 || res.Failed != 150 || len(stored) != 150 || len(singles) != 0 {
		t.Fatalf("result %+v, %d stored, %d singles", res.Stats, len(stored), len(singles))
	}
	if asked.Load() != 1 {
		t.Errorf("the partition count was asked %d times, want once", asked.Load())
	}
	// With -j 1 the first refusal is the only one: every later line for a missing
	// partition fails without being sent.
	if n := refusals.Load(); n != 1 {
		t.Errorf("%d requests carried a line for a missing partition, want 1", n)
	}
	for _, f := range fs.list() {
		if !strings.HasSuffix(f, " 400 400 partition must be an integer from 0 to 2") {
			t.Errorf("report %q", f)
		}
	}
}

// A stop ends a wait for --rate's next token: nothing is out then, so the stop has
// nothing to wait for. The wait went on until the token came (a slow rate's hour),
// or the hard stop.
func TestRateStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		c := &timedClient{start: time.Now()}
		go func() {
			time.Sleep(time.Minute)
			close(stop)
		}()
		res := Run(context.Background(), c, Lines(strings.NewReader("a\nb\n")), Options{Topic: "t", Rate: 1.0 / 3600, Stop: stop})
		if res.Produced != 1 || !res.Stopped || res.Resume != 2 {
			t.Errorf("result %+v", res)
		}
	})
}
