package supervisor

import (
	"testing"
	"time"
)

func TestHoldFor(t *testing.T) {
	for _, tc := range []struct {
		delay, base, most time.Duration
		holds             []time.Duration // after failure 1, 2, ...
	}{
		// The defaults: the first failure gives the message back at once, then 2s,
		// 4s, ... up to a minute.
		{0, time.Second, time.Minute, []time.Duration{0, 2 * time.Second, 4 * time.Second, 8 * time.Second,
			16 * time.Second, 32 * time.Second, time.Minute, time.Minute}},
		// --retry-delay holds every failure at least that long.
		{3 * time.Second, time.Second, time.Minute, []time.Duration{3 * time.Second, 3 * time.Second, 4 * time.Second}},
		{0, time.Second, 5 * time.Second, []time.Duration{0, 2 * time.Second, 4 * time.Second, 5 * time.Second}},
	} {
		s := &Supervisor{o: Options{RetryDelay: tc.delay, RetryBackoff: tc.base, RetryDelayMax: tc.most}}
		for i, want := range tc.holds {
			if got := s.holdFor(i + 1); got != want {
				t.Errorf("%+v: failure %d holds %v, want %v", tc, i+1, got, want)
			}
		}
		if got := s.holdFor(1000); got != max(tc.delay, tc.most) {
			t.Errorf("failure 1000 holds %v", got)
		}
	}
}

func TestAttemptsForgetTheOldestPastTheBound(t *testing.T) {
	a := newAttempts()
	t0 := time.Unix(1790000000, 0)
	for i := range maxTracked {
		a.add(msgKey{0, int64(i)}, t0.Add(time.Duration(i)*time.Second))
	}
	a.add(msgKey{0, 0}, t0.Add(time.Hour)) // offset 0 is now the newest
	if n := a.add(msgKey{1, 0}, t0.Add(2*time.Hour)); n != 1 || len(a.m) != maxTracked {
		t.Fatalf("n %d, %d tracked", n, len(a.m))
	}
	if _, ok := a.m[msgKey{0, 1}]; ok {
		t.Error("the oldest was kept")
	}
	if n := a.add(msgKey{0, 0}, t0.Add(3*time.Hour)); n != 3 {
		t.Errorf("offset 0 at attempt %d, want 3", n)
	}
}

// A message's run count outlives maxTracked others run after it, and memory stays
// within two generations.
func TestRunsBoundedByTwoGenerations(t *testing.T) {
	r := newRuns()
	k := msgKey{0, -1}
	if n := r.next(k); n != 1 {
		t.Fatalf("first run %d", n)
	}
	for i := range maxTracked {
		r.next(msgKey{1, int64(i)})
	}
	if n := r.next(k); n != 2 {
		t.Fatalf("after %d other messages, run %d, want 2", maxTracked, n)
	}
	for i := range 2 * maxTracked {
		r.next(msgKey{2, int64(i)})
	}
	if len(r.cur)+len(r.old) > 2*maxTracked {
		t.Errorf("%d tracked", len(r.cur)+len(r.old))
	}
	if n := r.next(k); n != 1 {
		t.Errorf("after %d other messages, run %d, want 1 (forgotten)", 2*maxTracked, n)
	}
	r.undo(k)
	if n := r.next(k); n != 1 {
		t.Errorf("after a start that failed, run %d, want 1", n)
	}
}
