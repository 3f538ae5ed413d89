//go:build linux && !narad_pipe_as_file

package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// A pipe on Linux: a line counts as printed once the reader took it out of the pipe.

// TestPipeAcksOnlyWhatTheReaderTook: ten lines go into the pipe; the reader (head -n 2
// reading line by line) takes two and goes away while narad long-polls. Those two are
// acked, the eight it never took are given back, and the run ends at once.
func TestPipeAcksOnlyWhatTheReaderTook(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 10)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour})
	if got := takeLines(t, r, 2); got != "h0\nh1\n" {
		t.Fatalf("read %q", got)
	}
	waitFor(t, "all ten taken", func() bool { return src.Len() == 0 })
	r.Close()
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1"}) {
		t.Errorf("acked %v, want h0 h1: what the reader took", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"}) {
		t.Errorf("nacked %v, want h2..h9 given back", got)
	}
	if res.Reason != consumer.StopOutputClosed || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("reason %v outcome %v, want output closed, OK", res.Reason, res.Outcome())
	}
	if st := res.Stats; st.Acked != 2 || st.Nacked != 8 || st.Bugs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPipeWaitsForTheReaderAtTheEnd: with --count the run ends only once the reader
// took every line (acked), not when the lines were written.
func TestPipeWaitsForTheReaderAtTheEnd(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 3})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v before anything was read", got)
	}
	takeLines(t, r, 3)
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("acked %v", got)
	}
	if res.Reason != consumer.StopCount || res.Stats.Acked != 3 || res.Stats.Nacked != 0 {
		t.Errorf("result %+v", res)
	}
}

// TestPipeStopGivesBackWhatWaits: a signal while lines wait for a reader that does
// not read: the lines not yet in the pipe go back at once, the one in the pipe after
// the grace, and the run ends.
func TestPipeStopGivesBackWhatWaits(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	stop := make(chan struct{})
	p := consumer.NewPrinter(w, lines{})
	p.ShutdownGrace(300 * time.Millisecond)
	done := runAsync(t, context.Background(), src, p, consumer.Options{Wait: time.Hour, Stop: stop})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	waitFor(t, "a line in the pipe", func() bool { return unread(t, r) > 0 })
	close(stop)
	waitFor(t, "the two not in the pipe given back", func() bool { return len(src.Handles(client.Nack)) >= 2 })
	res := await(t, done, "the run")
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v, want nothing: nothing was read", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("nacked %v", got)
	}
	if res.Outcome() != consumer.OutcomeInterrupted {
		t.Errorf("outcome %v", res.Outcome())
	}
}

// TestPipeStopWaitsForTheReader: at a soft stop the line already in the pipe keeps its
// lease and is acked when a late reader takes it, within the grace; what never went
// into the pipe is given back. Printed is acked: nothing the reader shows is delivered
// again.
func TestPipeStopWaitsForTheReader(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 5)
	r, w := pipe(t)
	stop := make(chan struct{})
	p := consumer.NewPrinter(w, lines{})
	done := runAsync(t, context.Background(), src, p, consumer.Options{Wait: time.Hour, Stop: stop})
	waitFor(t, "all five taken", func() bool { return src.Len() == 0 })
	waitFor(t, "a line in the pipe", func() bool { return unread(t, r) > 0 })
	close(stop)
	waitFor(t, "the four not in the pipe given back", func() bool { return len(src.Handles(client.Nack)) == 4 })
	got := readAll(t, r, done)
	res := await(t, done, "the run")
	if got != "h0\n" {
		t.Errorf("the reader got %q, want the one line in the pipe", got)
	}
	if acked := src.Handles(client.Ack); !slices.Equal(acked, []string{"h0"}) {
		t.Errorf("acked %v, want h0: what the reader took", acked)
	}
	if res.Stats.Acked != 1 || res.Stats.Nacked != 4 || res.Outcome() != consumer.OutcomeInterrupted {
		t.Errorf("result %+v, outcome %v", res, res.Outcome())
	}
}

// TestPipeStopGivesBackAtOnceWhileAConsumeIsOnItsWay: the lines waiting behind the one
// in the pipe go back at the stop itself, not once the consume still on its way (a
// long poll, which a stop lets finish) has come back: that wait could outlast a short
// --shutdown-grace, and the give-back then got only a last try (CI saw 499 of them
// unconfirmed under load). Here the long poll lasts until the hard stop.
func TestPipeStopGivesBackAtOnceWhileAConsumeIsOnItsWay(t *testing.T) {
	src := &countingSource{Source: consumertest.New()}
	src.Add("t", 5)
	r, w := pipe(t)
	stop := make(chan struct{})
	ctx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	p := consumer.NewPrinter(w, lines{})
	done := runAsync(t, ctx, src, p, consumer.Options{Wait: time.Hour, PollMax: time.Hour, Stop: stop})
	waitFor(t, "all five taken", func() bool { return src.Len() == 0 })
	waitFor(t, "a line in the pipe", func() bool { return unread(t, r) > 0 })
	waitFor(t, "the next consume on its way", func() bool { return src.asked.Load() > int64(len(src.Consumes())) })
	close(stop)
	waitFor(t, "the four not in the pipe given back while the consume is on its way",
		func() bool { return len(src.Handles(client.Nack)) == 4 })
	if got := takeLines(t, r, 1); got != "h0\n" {
		t.Errorf("the reader got %q, want the line in the pipe", got)
	}
	waitFor(t, "the line taken acked", func() bool { return len(src.Handles(client.Ack)) == 1 })
	hardStop()
	res := await(t, done, "the hard stop")
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h1", "h2", "h3", "h4"}) {
		t.Errorf("nacked %v, want h1..h4", got)
	}
	if res.Stats.Acked != 1 || len(res.Unconfirmed) != 0 {
		t.Errorf("result %+v", res)
	}
}

// countingSource counts the consumes asked for, answered or not.
type countingSource struct {
	*consumertest.Source
	asked atomic.Int64
}

func (s *countingSource) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	s.asked.Add(1)
	return s.Source.Consume(ctx, topic, o)
}

// unread is how many bytes wait in the pipe r reads.
func unread(t *testing.T, r *os.File) int {
	t.Helper()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return n
}

// readAll reads r with large reads until the run ends, as cat does.
func readAll(t *testing.T, r *os.File, done <-chan consumer.Result) string {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		_ = r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, _ := r.Read(buf)
		got = append(got, buf[:n]...)
		if n == 0 && len(done) > 0 {
			return string(got)
		}
	}
}

// TestPipeBlockReaderGetsExactlyWhatItUses: a reader that reads blocks (head -n 2,
// grep -m, jq) and stops after two lines gets two lines acked, however many were ready:
// no line goes into the pipe while another is still in it, so no read returns more
// than one. The rest go back.
func TestPipeBlockReaderGetsExactlyWhatItUses(t *testing.T) {
	for _, n := range []int{1, 2, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := consumertest.New()
			src.Add("t", 100)
			r, w := pipe(t)
			done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Hour})
			got := readBlocks(t, r, n)
			r.Close()
			res := await(t, done, "the run")
			if lines := bytes.Count(got, []byte("\n")); lines != n {
				t.Errorf("the reader's reads brought %d lines, want %d", lines, n)
			}
			if st := res.Stats; st.Acked != int64(n) || st.Nacked != 100-int64(n) || st.Bugs != 0 {
				t.Errorf("stats %+v, want %d acked, the rest given back", st, n)
			}
		})
	}
}

// TestPipeSlowReaderKeepsLeases: lines that wait in the pipe have their leases
// extended (all of them in one request) until the reader takes them.
func TestPipeSlowReaderKeepsLeases(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	p := consumer.NewPrinter(w, lines{})
	// Not told the lease, the run asks the node for it.
	src.Lease = 600 * time.Millisecond
	done := runAsync(t, context.Background(), src, p, consumer.Options{Count: 3})
	extendsOf := func() (n int) {
		for _, s := range src.Settles() {
			if s.Action == client.Extend && slices.Equal(s.Handles, []string{"h0", "h1", "h2"}) {
				n++
			}
		}
		return n
	}
	waitFor(t, "two extends of the waiting lines", func() bool { return extendsOf() >= 2 })
	takeLines(t, r, 3)
	res := await(t, done, "the run")
	if src.TopicAsks() == 0 {
		t.Error("the lease was never asked for")
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("acked %v", got)
	}
	if st := res.Stats; st.Acked != 3 || st.LeaseLost != 0 || st.Nacked != 0 || st.Bugs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPipeHoldsABoundedNumber: while pipeHoldMax (1000) lines wait unread nothing
// more is taken, so a reader that stalls holds a bounded number of leases.
func TestPipeHoldsABoundedNumber(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 1500)
	r, w := pipe(t)
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Count: 1500})
	waitFor(t, "ten batches", func() bool { return src.Len() <= 500 })
	// Absence cannot be awaited: give the loop ample turns to take more if it would.
	time.Sleep(100 * time.Millisecond)
	if left := src.Len(); left != 500 {
		t.Errorf("%d taken while 1000 wait unread, want 1000", 1500-left)
	}
	go io.Copy(io.Discard, r)
	res := await(t, done, "the run")
	if res.Stats.Acked != 1500 {
		t.Errorf("stats %+v", res.Stats)
	}
}

// TestPipeLineGoesBackWhenTheRunsGraceIsOver: after a soft stop the line in the pipe
// waits for the reader until the run's own grace (Options.Abandon, --shutdown-grace
// from the signal) is over, however long the Printer's grace, and its give-back then
// still lands: sent after the abandon, it is a last try, not a retry the abandon cuts.
func TestPipeLineGoesBackWhenTheRunsGraceIsOver(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	r, w := pipe(t)
	stop, abandon := make(chan struct{}), make(chan struct{})
	p := consumer.NewPrinter(w, lines{})
	p.ShutdownGrace(time.Hour)
	done := runAsync(t, context.Background(), src, p, consumer.Options{Wait: time.Hour, Stop: stop, Abandon: abandon})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	waitFor(t, "a line in the pipe", func() bool { return unread(t, r) > 0 })
	close(stop)
	waitFor(t, "the two behind it given back", func() bool { return len(src.Handles(client.Nack)) == 2 })
	close(abandon)
	res := await(t, done, "the run's grace was over")
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("nacked %v, want all three: nothing was read", got)
	}
	if len(res.Unconfirmed) != 0 {
		t.Errorf("unconfirmed %+v: the line's give-back was cut", res.Unconfirmed)
	}
}

// TestPipeGraceIsTheRunsWhileGiveBacksAreRetried: a node answering every give-back
// 503 holds the stop up to the run's grace, once: the line in the pipe goes back (and
// is listed unconfirmed) when that grace is over, not after a grace of its own that
// started only when the retries of the lines behind it gave up.
func TestPipeGraceIsTheRunsWhileGiveBacksAreRetried(t *testing.T) {
	src := newDeadNode(client.Nack)
	src.Add("t", 3)
	r, w := pipe(t)
	stop, abandon := make(chan struct{}), make(chan struct{})
	p := consumer.NewPrinter(w, lines{})
	p.ShutdownGrace(time.Hour)
	done := runAsync(t, context.Background(), src, p, consumer.Options{Wait: time.Hour, Stop: stop, Abandon: abandon, LastTry: 40 * time.Millisecond})
	waitFor(t, "all three taken", func() bool { return src.Len() == 0 })
	waitFor(t, "a line in the pipe", func() bool { return unread(t, r) > 0 })
	close(stop)
	if a := <-src.started; a != client.Nack {
		t.Fatalf("%v asked for, want the give-back", a)
	}
	close(abandon)
	res := await(t, done, "the run's grace was over")
	if got := sorted(unconfirmedHandles(res.Unconfirmed, client.Nack)); !slices.Equal(got, []string{"h0", "h1", "h2"}) {
		t.Errorf("unconfirmed give-backs %v, want all three", got)
	}
}
