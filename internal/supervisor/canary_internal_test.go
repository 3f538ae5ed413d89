package supervisor

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 20; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	cases := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{d[:1], 50, time.Millisecond},
		{d[:1], 95, time.Millisecond},
		{d, 50, 10 * time.Millisecond},
		{d, 95, 19 * time.Millisecond},
		{d, 100, 20 * time.Millisecond},
		{d[:3], 50, 2 * time.Millisecond},
	}
	for _, c := range cases {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("p%d of %d: %v, want %v", c.p, len(c.in), got, c.want)
		}
	}
}

func TestCanaryNote(t *testing.T) {
	c, err := NewCanary(Options{Command: []string{"true"}, AckExitCodes: []int{3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []result{
		{end: exited, code: 0, took: 3 * time.Millisecond},
		{end: exited, code: 3, took: time.Millisecond},
		{end: exited, code: 1, took: 2 * time.Millisecond},
		{end: exited, code: -1, took: 4 * time.Millisecond},
		{end: timedOut, code: -1, took: 9 * time.Millisecond},
		{end: notRun},
		{end: stopped, code: -1, took: 5 * time.Millisecond},
	} {
		c.note(r)
	}
	st := c.Stats()
	if st.Ran != 7 || st.Succeeded != 2 || st.Failed != 4 || st.Stopped != 1 ||
		st.TimedOut != 1 || st.NotStarted != 1 || st.Signaled != 1 {
		t.Errorf("counts %+v", st)
	}
	if len(st.ExitCodes) != 3 || st.ExitCodes[0] != 1 || st.ExitCodes[3] != 1 || st.ExitCodes[1] != 1 {
		t.Errorf("exit codes %v", st.ExitCodes)
	}
	// Six durations (not the one never started): 1 2 3 4 5 9 ms.
	if st.P50 != 3*time.Millisecond || st.P95 != 9*time.Millisecond || st.Max != 9*time.Millisecond {
		t.Errorf("durations p50 %v p95 %v max %v", st.P50, st.P95, st.Max)
	}
	if _, err := NewCanary(Options{Command: []string{"true"}, RetryDelay: time.Second}); err == nil {
		t.Error("a canary with a retry delay was accepted")
	}
}
