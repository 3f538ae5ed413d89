package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
)

// fakeAcker is an Acker whose requests are recorded (and may be held up), and whose
// windows end when the test says so.
type fakeAcker struct {
	*Acker
	mu      sync.Mutex
	batches [][]string
	windows []func() // the pending window ends, in order
	gate    chan struct{}
	sending chan struct{} // a send began
}

func newFakeAcker(o AckerOptions) *fakeAcker {
	f := &fakeAcker{sending: make(chan struct{}, 1000)}
	f.Acker = newAcker(o, func(ds []Delivery) {
		f.sending <- struct{}{}
		f.mu.Lock()
		gate := f.gate
		f.mu.Unlock()
		if gate != nil {
			<-gate
		}
		f.mu.Lock()
		f.batches = append(f.batches, handlesOf(ds))
		f.mu.Unlock()
	})
	f.after = func(_ time.Duration, end func()) {
		f.mu.Lock()
		f.windows = append(f.windows, end)
		f.mu.Unlock()
	}
	return f
}

// deliveries are n deliveries of one settler, d0 to d<n-1>, counted from first.
func deliveries(first, n int) []Delivery {
	s := &settler{open: map[*delivery]struct{}{}, acking: map[*delivery]struct{}{}, changed: make(chan struct{})}
	msgs := make([]client.Message, n)
	for i := range msgs {
		msgs[i].ReceiptHandle = fmt.Sprintf("d%d", first+i)
	}
	return s.wrap(msgs)
}

// ackWaitAll acks each of ds from its own goroutine and returns a channel closed once
// every ack returned.
func (f *fakeAcker) ackWaitAll(ds []Delivery) <-chan struct{} {
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { f.AckWait(d) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// waitGathered waits until n acks are inside the window still open.
func (f *fakeAcker) waitGathered(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		f.Acker.mu.Lock()
		got := len(f.gather)
		f.Acker.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acks gathered, want %d", got, n)
		}
	}
}

func (f *fakeAcker) endWindow(i int) {
	f.mu.Lock()
	end := f.windows[i]
	f.mu.Unlock()
	end()
}

func (f *fakeAcker) sent() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Acks that come within one window go out in one request, and none returns before
// that request was answered.
func TestAcksWithinAWindowShareOneRequest(t *testing.T) {
	f := newFakeAcker(AckerOptions{Window: time.Hour})
	defer f.Close()
	done := f.ackWaitAll(deliveries(1, 3))
	f.waitGathered(t, 3)
	select {
	case <-done:
		t.Fatal("an ack returned before its request was sent")
	default:
	}
	if len(f.sent()) != 0 {
		t.Fatalf("sent %v before the window ended", f.sent())
	}
	f.endWindow(0)
	<-done
	got := f.sent()
	if len(got) != 1 || !slices.Equal(sorted(got[0]), []string{"d1", "d2", "d3"}) {
		t.Fatalf("requests %v, want one of d1, d2, d3", got)
	}
	// The next ack opens a new window.
	done = f.ackWaitAll(deliveries(4, 1))
	f.waitGathered(t, 1)
	f.endWindow(1)
	<-done
	if got := f.sent(); len(got) != 2 || !slices.Equal(got[1], []string{"d4"}) {
		t.Fatalf("requests %v, want a second of d4", got)
	}
}

// A full batch goes at once, without waiting for its window; the window's end then
// sends nothing more.
func TestAFullAckBatchGoesAtOnce(t *testing.T) {
	f := newFakeAcker(AckerOptions{Window: time.Hour})
	defer f.Close()
	<-f.ackWaitAll(deliveries(0, MaxBatch))
	got := f.sent()
	if len(got) != 1 || len(got[0]) != MaxBatch {
		t.Fatalf("%d requests, want one of %d", len(got), MaxBatch)
	}
	f.endWindow(0)
	if len(f.sent()) != 1 {
		t.Fatalf("the window's end sent again: %v", f.sent())
	}
}

// A negative window acks each on its own, at once.
func TestNoAckWindowSendsEachAlone(t *testing.T) {
	f := newFakeAcker(AckerOptions{Window: -1})
	defer f.Close()
	ds := deliveries(1, 2)
	f.AckWait(ds[0])
	f.AckWait(ds[1])
	if got := f.sent(); len(got) != 2 || len(f.windows) != 0 {
		t.Fatalf("requests %v, windows %d", got, len(f.windows))
	}
}

// Without a window, what is queued while the ackers are busy goes together in the
// next request, at most InFlight requests are on their way, and Close sends what
// waits before it returns.
func TestAcksQueuedWhileOthersAreOnTheirWayShareARequest(t *testing.T) {
	synctest.Test(t, acksQueuedWhileOthersAreOnTheirWay)
}

func acksQueuedWhileOthersAreOnTheirWay(t *testing.T) {
	f := newFakeAcker(AckerOptions{InFlight: 2})
	f.gate = make(chan struct{})
	ds := deliveries(0, 6)
	f.Ack(ds[0:1])
	<-f.sending
	f.Ack(ds[1:2])
	<-f.sending // two on their way, held up
	f.Ack(ds[2:4])
	f.Ack(ds[4:6])
	synctest.Wait()
	select {
	case <-f.sending:
		t.Fatal("a third request went while two were on their way")
	default:
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	close(f.gate)
	<-closed
	got := f.sent()
	together := slices.ContainsFunc(got, func(b []string) bool {
		return slices.Equal(sorted(b), []string{"d2", "d3", "d4", "d5"})
	})
	if len(got) != 3 || !together {
		t.Fatalf("requests %v, want d0, d1, and a third of d2..d5", got)
	}
}

// Once the node answers one message per consume, each request carries one ack, and
// up to legacyParallel of them are on their way side by side.
func TestOneByOneSendsSingleAcksSideBySide(t *testing.T) {
	synctest.Test(t, oneByOneSideBySide)
}

func oneByOneSideBySide(t *testing.T) {
	f := newFakeAcker(AckerOptions{InFlight: 2})
	f.OneByOne()
	f.gate = make(chan struct{})
	f.Ack(deliveries(0, legacyParallel+3))
	for range legacyParallel {
		<-f.sending
	}
	synctest.Wait()
	select {
	case <-f.sending:
		t.Fatalf("more than %d acks on their way", legacyParallel)
	default:
	}
	close(f.gate)
	f.Close()
	got := f.sent()
	if len(got) != legacyParallel+3 {
		t.Fatalf("%d requests, want %d", len(got), legacyParallel+3)
	}
	for _, b := range got {
		if len(b) != 1 {
			t.Fatalf("a request of %d acks: %v", len(b), b)
		}
	}
}

// Ack waits while Queued acks wait for an acker, so a slow node slows the handler
// down; and an ack waiting is of a delivery still held, whose lease the run's keeper
// extends.
func TestQueuedAcksBoundTheHandlerAndKeepTheirLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeAcker(AckerOptions{InFlight: 1, Queued: 2})
		f.gate = make(chan struct{})
		ds := deliveries(0, 4)
		f.Ack(ds[0:1])
		<-f.sending // on its way, held up
		f.Ack(ds[1:3])
		third := make(chan struct{})
		go func() { f.Ack(ds[3:4]); close(third) }()
		synctest.Wait()
		select {
		case <-third:
			t.Fatal("an ack was queued past the bound")
		default:
		}
		// Held: the keeper extends what is held (settler.open) or being acked.
		if held := (Live{s: ds[0].d.s}).Held(); held != 4 {
			t.Fatalf("%d deliveries held while their acks wait, want 4", held)
		}
		close(f.gate)
		<-third
		f.Close()
		if n := len(slices.Concat(f.sent()...)); n != 4 {
			t.Fatalf("%d acks sent, want 4", n)
		}
	})
}

// The Acker's requests go through the run's settler: what it acks is counted acked.
func TestAckerAcksThroughTheSettler(t *testing.T) {
	src := &recordingSource{}
	var c counters
	s, release := newSettler(context.Background(), src, Options{Topic: "t", SettleTimeout: time.Minute, LastTry: time.Second}, &c)
	defer release()
	a := NewAcker(AckerOptions{})
	a.Ack(s.wrap([]client.Message{{ReceiptHandle: "a"}, {ReceiptHandle: "b"}}))
	a.Close()
	if got := c.acked.Load(); got != 2 {
		t.Fatalf("acked %d, want 2", got)
	}
}

// recordingSource answers every settlement 204.
type recordingSource struct{}

func (*recordingSource) Consume(context.Context, string, client.ConsumeOptions) (*client.ConsumeResult, error) {
	return &client.ConsumeResult{}, nil
}

func (*recordingSource) Topic(context.Context, string) (*client.Topic, error) {
	return &client.Topic{}, nil
}

func (*recordingSource) Settle(_ context.Context, _ string, _ client.Action, handles []string) ([]client.SettleResult, error) {
	res := make([]client.SettleResult, len(handles))
	for i, h := range handles {
		res[i] = client.SettleResult{Handle: h, Status: 204}
	}
	return res, nil
}
