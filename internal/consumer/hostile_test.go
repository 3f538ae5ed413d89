package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// atOnce answers every consume at once, as a node does that ignores wait (or one
// whose wait cap is a millisecond): never waiting, whatever was asked.
type atOnce struct {
	*consumertest.Source
	ignoreWait bool
	n          atomic.Int64
}

var errSpun = errors.New("consumed 10,000 times: the loop spins")

func (s *atOnce) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	if s.n.Add(1) > 10_000 {
		return nil, errSpun // a loop that spins would never let the clock reach Timeout
	}
	if s.ignoreWait {
		o.Wait = 0
	}
	return s.Source.Consume(ctx, topic, o)
}

// After an empty answer the next consume waits for a floor (IdlePause since the last
// was sent), however short the wait asked for and whatever the node does with it,
// so no node can make a consumer spin. Time is synctest's: 3 s pass in no time.
func TestEmptyAnswersNeverSpin(t *testing.T) {
	for _, c := range []struct {
		name       string
		wait       time.Duration
		ignoreWait bool
	}{
		{"a wait of 1ms", time.Millisecond, false},
		{"a node answering 204 at once", 10 * time.Second, true},
		{"no wait", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &atOnce{Source: consumertest.New(), ignoreWait: c.ignoreWait}
				res, err := consumer.Run(context.Background(), src, &funcHandler{},
					consumer.Options{Topic: "t", Wait: c.wait, Timeout: 3 * time.Second, Max: 10})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				// 3 s at one consume per 100ms, and the one at the start.
				if got := len(src.Consumes()); got > 31 {
					t.Errorf("%d consumes in 3s; want at most 31 (one per 100ms)", got)
				}
				if res.Reason != consumer.StopTimeout {
					t.Errorf("stopped for %v; want the timeout", res.Reason)
				}
			})
		})
	}
}

// A node that answers more than max: the run holds only what it asked for, gives the
// rest back at once and says so; nothing is lost. --count 1 prints one message, not
// the 150 the node sent.
func TestSurplusIsGivenBackAtOnce(t *testing.T) {
	for _, c := range []struct {
		name              string
		count, max, queue int
		wantAcked         int
	}{
		{"--count 1 against 150 for max=1", 1, 1, 150, 1},
		{"a drain, max=1, three for each", 0, 1, 6, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := consumertest.New()
			src.Over = c.queue
			if c.count == 0 {
				src.Over = 2
			}
			msgs := src.Add("t", c.queue)
			biggest := 0
			h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
				biggest = max(biggest, len(ds))
				return consumer.AckAll(ds)
			}}
			var notes [][2]int
			res := run(t, context.Background(), src, h, consumer.Options{Count: c.count, Max: c.max, Drain: c.count == 0,
				OnSurplus: func(asked, got int) { notes = append(notes, [2]int{asked, got}) }})
			if biggest > c.max {
				t.Errorf("handed %d messages at once; asked for %d", biggest, c.max)
			}
			if res.Stats.Acked != int64(c.wantAcked) || res.Stats.Nacked != int64(c.queue-c.wantAcked) {
				t.Errorf("stats %+v; want %d acked, the rest given back", res.Stats, c.wantAcked)
			}
			if got := len(src.Handles(client.Ack)) + len(src.Handles(client.Nack)); got != len(msgs) {
				t.Errorf("%d of %d settled", got, len(msgs))
			}
			if len(notes) == 0 || notes[0][0] != c.max || notes[0][1] <= c.max {
				t.Errorf("surplus noted %v", notes)
			}
		})
	}
}

// One message that cannot be decoded does not stop the run or give its batch back:
// it is reported with its place and why and given back (or dead-lettered), the rest
// are handled, and the run counts it failed. Seen again, it is left to its lease
// rather than taken and given back in a loop.
func TestUndecodableMessageIsSetAside(t *testing.T) {
	for _, c := range []struct {
		name       string
		deadLetter bool
		wantDL     int
	}{
		{"given back", false, 0},
		{"dead-lettered where it has a payload", true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := consumertest.New()
			good := src.Add("t", 2)
			src.Push(
				client.Message{Topic: "t", Partition: 1, Offset: 8, Payload: json.RawMessage(`"!!!"`), PayloadEncoding: "base64", ReceiptHandle: "bad-b64"},
				client.Message{Topic: "t", Partition: 2, Offset: 9, ReceiptHandle: "no-payload"},
			)
			more := src.Add("t", 2)
			var handled []string
			h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
				for _, d := range ds {
					if _, err := d.Message().PayloadBytes(); err != nil {
						t.Errorf("handed an undecodable message: %v", err)
					}
					handled = append(handled, d.Message().ReceiptHandle)
				}
				return consumer.AckAll(ds)
			}}
			type note struct {
				place string
				why   string
				fate  string
			}
			var notes []note
			var mu sync.Mutex
			o := consumer.Options{Topic: "t", Drain: true, Max: 10,
				OnUndecodable: func(m *client.Message, why error, fate string) {
					mu.Lock()
					defer mu.Unlock()
					notes = append(notes, note{fmt.Sprintf("p%d @%d", m.Partition, m.Offset), why.Error(), fate})
				}}
			var dl []string
			if c.deadLetter {
				o.DeadLetterUndecodable = func(_ context.Context, m *client.Message) error {
					dl = append(dl, m.ReceiptHandle)
					return nil
				}
			}
			res, err := consumer.Run(context.Background(), src, h, o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := append(handles(good), handles(more)...); !slices.Equal(sorted(handled), sorted(want)) {
				t.Errorf("handled %v; want %v", handled, want)
			}
			if len(notes) != 2 || notes[0].place != "p1 @8" || !strings.Contains(notes[0].why, "base64") ||
				notes[1].place != "p2 @9" || !strings.Contains(notes[1].why, "no payload") {
				t.Errorf("reported %+v", notes)
			}
			if len(dl) != c.wantDL {
				t.Errorf("dead-lettered %v; want %d", dl, c.wantDL)
			}
			if res.Stats.Failed != 2 || res.Outcome() != consumer.OutcomeFailed {
				t.Errorf("stats %+v, outcome %v; want 2 failed", res.Stats, res.Outcome())
			}
			nacked := src.Handles(client.Nack)
			if want := 2 - c.wantDL; len(nacked) != want {
				t.Errorf("given back %v; want %d", nacked, want)
			}
		})
	}
}

// A message given back comes back; seen again it is reported, left to its lease, and
// the drain still ends: no taking and giving back in a loop.
func TestUndecodableMessageSeenAgainIsLeftToItsLease(t *testing.T) {
	src := consumertest.New()
	bad := client.Message{Topic: "t", Partition: 1, Offset: 8, Payload: json.RawMessage(`"!!!"`), PayloadEncoding: "base64", ReceiptHandle: "bad"}
	src.Push(bad)
	src.Add("t", 1)
	var backs atomic.Int64
	src.Status = func(a client.Action, h string) int {
		if a == client.Nack && h == "bad" && backs.Add(1) < 100 {
			src.Push(bad) // the node hands it out again at once
		}
		return 204
	}
	var fates []string
	res, err := consumer.Run(context.Background(), src, &funcHandler{}, consumer.Options{Topic: "t", Drain: true, Max: 10,
		OnUndecodable: func(_ *client.Message, _ error, fate string) { fates = append(fates, fate) }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if backs.Load() != 1 || len(fates) != 2 || !strings.Contains(fates[1], "left to its lease") {
		t.Errorf("given back %d times, reported %q; want once, then left to its lease", backs.Load(), fates)
	}
	if res.Reason != consumer.StopDrained || res.Stats.Acked != 1 {
		t.Errorf("result %+v", res)
	}
}
