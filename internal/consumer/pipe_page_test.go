//go:build linux && !narad_pipe_as_file

package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// TestPipePagesAreAckedOnlyOnceTheReaderCameBack: a block reader that stops after
// 1,500 of 3,000 lines, past the lines written one at a time, gets nothing acked that
// it did not use, everything it did not use back, and nothing lost: the page it stopped
// in goes back whole, since nothing shows how much of it was used.
func TestPipePagesAreAckedOnlyOnceTheReaderCameBack(t *testing.T) {
	const ready, used = 3000, 1500
	src := consumertest.New()
	src.Add("t", ready)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour})
	got := readBlocks(t, r, used)
	r.Close()
	res := await(t, done, "the run")
	usedLines := strings.Split(string(got), "\n")[:used]
	acked := src.Handles(client.Ack)
	for _, h := range acked {
		if !slices.Contains(usedLines, h) {
			t.Fatalf("acked %s, which the reader did not use", h)
		}
	}
	st := res.Stats
	if st.Acked+st.Nacked != st.Received || st.Bugs != 0 {
		t.Errorf("stats %+v: what was taken should be acked or given back", st)
	}
	if left := src.Len(); left+int(st.Received) != ready {
		t.Errorf("%d never taken and %d taken, of %d", left, st.Received, ready)
	}
	// Lines go in one at a time at first: up to there it is exact whatever the reader.
	if st.Acked < 1000 {
		t.Errorf("acked %d, want at least the 1,000 written one at a time", st.Acked)
	}
}

// TestPipeDrainThroughPagesAcksEverything: a reader that reads everything gets every
// line acked, pages included: a page is written only with a line behind it to confirm
// it, so nothing is left unconfirmed at the end.
func TestPipeDrainThroughPagesAcksEverything(t *testing.T) {
	for _, n := range []int{1200, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := consumertest.New()
			src.Add("t", n)
			r, w := pipe(t)
			done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: n})
			readBlocks(t, r, n)
			res := await(t, done, "the run")
			if st := res.Stats; st.Acked != int64(n) || st.Nacked != 0 || st.Bugs != 0 {
				t.Errorf("stats %+v, want all %d acked", st, n)
			}
		})
	}
}
