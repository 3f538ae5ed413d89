package supervisor

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeAcker is an acker of ints whose window ends when the test says so.
type fakeAcker struct {
	*acker[int]
	mu      sync.Mutex
	batches [][]int
	windows []func() // the pending window ends, in order
}

func newFakeAcker(window time.Duration) *fakeAcker {
	f := &fakeAcker{}
	f.acker = newAcker(window, func(items []int) {
		f.mu.Lock()
		f.batches = append(f.batches, slices.Clone(items))
		f.mu.Unlock()
	})
	f.after = func(_ time.Duration, end func()) {
		f.mu.Lock()
		f.windows = append(f.windows, end)
		f.mu.Unlock()
	}
	return f
}

// ackAll acks items each from its own goroutine and returns a channel closed once
// every ack returned.
func (f *fakeAcker) ackAll(items ...int) <-chan struct{} {
	var wg sync.WaitGroup
	for _, i := range items {
		wg.Go(func() { f.ack(i) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// waitQueued waits until n acks are in the batch still open.
func (f *fakeAcker) waitQueued(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		f.acker.mu.Lock()
		got := 0
		if f.cur != nil {
			got = len(f.cur.items)
		}
		f.acker.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acks queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *fakeAcker) endWindow(i int) {
	f.mu.Lock()
	end := f.windows[i]
	f.mu.Unlock()
	end()
}

func (f *fakeAcker) sent() [][]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// Acks that come within one window go out in one request, and none returns before
// that request was sent.
func TestAcksWithinAWindowShareOneBatch(t *testing.T) {
	f := newFakeAcker(time.Hour)
	done := f.ackAll(1, 2, 3)
	f.waitQueued(t, 3)
	select {
	case <-done:
		t.Fatal("an ack returned before its batch was sent")
	default:
	}
	if len(f.sent()) != 0 {
		t.Fatalf("sent %v before the window ended", f.sent())
	}
	f.endWindow(0)
	<-done
	got := f.sent()
	if len(got) != 1 || !slices.Equal(sorted(got[0]), []int{1, 2, 3}) {
		t.Fatalf("batches %v, want one of 1, 2, 3", got)
	}
	// The next ack opens a new window.
	done = f.ackAll(4)
	f.waitQueued(t, 1)
	f.endWindow(1)
	<-done
	if got := f.sent(); len(got) != 2 || !slices.Equal(got[1], []int{4}) {
		t.Fatalf("batches %v, want a second of 4", got)
	}
}

// A full batch goes at once, without waiting for its window; the window's end
// then sends nothing more.
func TestAFullAckBatchGoesAtOnce(t *testing.T) {
	f := newFakeAcker(time.Hour)
	items := make([]int, ackBatchMax)
	for i := range items {
		items[i] = i
	}
	<-f.ackAll(items...)
	got := f.sent()
	if len(got) != 1 || len(got[0]) != ackBatchMax {
		t.Fatalf("%d batches, want one of %d", len(got), ackBatchMax)
	}
	f.endWindow(0)
	if len(f.sent()) != 1 {
		t.Fatalf("the window's end sent again: %v", f.sent())
	}
}

// A negative window acks each on its own, at once.
func TestNoAckWindowSendsEachAlone(t *testing.T) {
	f := newFakeAcker(-1)
	f.ack(1)
	f.ack(2)
	if got := f.sent(); len(got) != 2 || len(f.windows) != 0 {
		t.Fatalf("batches %v, windows %d", got, len(f.windows))
	}
}

func sorted(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
