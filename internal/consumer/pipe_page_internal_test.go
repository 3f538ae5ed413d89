package consumer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/narad/narad/internal/client"
)

func queueOf(n, size int) []pipeLine {
	ls := make([]pipeLine, n)
	for i := range ls {
		ls[i] = pipeLine{d: Delivery{&delivery{msg: &client.Message{ReceiptHandle: fmt.Sprint("h", i)}}}, b: make([]byte, size)}
	}
	return ls
}

// The writer puts one line at a time into the pipe until the reader took pipeOneByOne,
// then a page: a share of what it took, what fits pipeBlock, and one line left behind.
func TestPageSize(t *testing.T) {
	for _, c := range []struct {
		name              string
		taken, queued, sz int
		want              int
	}{
		{"before one by one ends", pipeOneByOne - 1, 500, 10, 1},
		{"a share of what was taken", pipeOneByOne, 500, 10, pipeOneByOne / pipeBlockShare},
		{"one line left behind", 10 * pipeOneByOne, 30, 10, 29},
		{"too few queued", 10 * pipeOneByOne, 2, 10, 1},
		{"a page at the most", 10 * pipeOneByOne, 500, 100, pipeBlock / 100},
		{"a line longer than a page", 10 * pipeOneByOne, 500, pipeBlock + 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &pipeState{lines: c.taken, queue: queueOf(c.queued, c.sz)}
			if got := ps.pageLocked(); got != c.want {
				t.Errorf("page of %d lines, want %d", got, c.want)
			}
		})
	}
}

// A page the reader took is acked only once it takes the write after it; a single line
// is acked once taken. The reader going away after a page gives the page back.
func TestPageConfirmedByTheNextWrite(t *testing.T) {
	ps := &pipeState{lines: pipeOneByOne}
	page := &pipeWrite{lines: queueOf(3, 1)}
	if acks := ps.tookWriteLocked(page); len(acks) != 0 || len(ps.taken) != 0 {
		t.Fatalf("a page taken was acked at once: %v %v", acks, ps.taken)
	}
	next := &pipeWrite{lines: queueOf(1, 1)}
	ps.tookWriteLocked(next)
	if got := handlesOf(ps.taken); !slices.Equal(got, []string{"h0", "h1", "h2", "h0"}) {
		t.Errorf("after the next write was taken, acks wait for %v, want the page and the line", got)
	}

	ps = &pipeState{lines: pipeOneByOne, probe: emptyPipe{}}
	ps.tookWriteLocked(page)
	acks, back := ps.leftLocked(nil)
	if len(acks) != 0 || len(back) != 3 {
		t.Errorf("reader gone after a page: acked %v, gave back %v; want the page back", handlesOf(acks), handlesOf(back))
	}
}

func handlesOf(ds []Delivery) []string {
	hs := make([]string, len(ds))
	for i, d := range ds {
		hs[i] = d.Message().ReceiptHandle
	}
	return hs
}
