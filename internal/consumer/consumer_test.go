package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// lines renders a message as "<handle>\n", so tests can read back what was printed.
type lines struct{}

func (lines) Append(dst []byte, m *client.Message) ([]byte, error) {
	return append(append(dst, m.ReceiptHandle...), '\n'), nil
}

// funcHandler is a Handler made of functions; nil ones do the obvious.
type funcHandler struct {
	slots  func(ctx context.Context) (int, error)
	handle func(ctx context.Context, ds []consumer.Delivery) error
	finish func(ctx context.Context, stopping <-chan struct{}) error
}

func (h *funcHandler) Slots(ctx context.Context) (int, error) {
	if h.slots != nil {
		return h.slots(ctx)
	}
	return consumer.MaxBatch, ctx.Err()
}

func (h *funcHandler) Handle(ctx context.Context, ds []consumer.Delivery) error {
	if h.handle != nil {
		return h.handle(ctx, ds)
	}
	return consumer.AckAll(ds)
}

func (h *funcHandler) Finish(ctx context.Context, stopping <-chan struct{}) error {
	if h.finish != nil {
		return h.finish(ctx, stopping)
	}
	return nil
}

func (h *funcHandler) Pipelining() consumer.Pipelining { return consumer.Pipelining{} }

func handles(msgs []client.Message) []string {
	hs := make([]string, len(msgs))
	for i, m := range msgs {
		hs[i] = m.ReceiptHandle
	}
	return hs
}

func run(t *testing.T, ctx context.Context, src consumer.Source, h consumer.Handler, o consumer.Options) consumer.Result {
	t.Helper()
	if o.Topic == "" {
		o.Topic = "t"
	}
	res, err := consumer.Run(ctx, src, h, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestExactlyOnceSettlement(t *testing.T) {
	src := consumertest.New()
	msgs := src.Add("t", 3)
	var secondErrs []error
	h := &funcHandler{handle: func(_ context.Context, ds []consumer.Delivery) error {
		for _, d := range ds {
			if err := d.Ack(); err != nil {
				t.Errorf("first ack: %v", err)
			}
			cp := d // a copy shares the settlement state
			secondErrs = append(secondErrs, cp.Nack(consumer.Declined), cp.Ack(), cp.LeaseLost())
		}
		if err := consumer.AckAll(ds); !errors.Is(err, consumer.ErrAlreadySettled) {
			t.Errorf("AckAll of settled deliveries = %v, want ErrAlreadySettled", err)
		}
		return nil
	}}
	res := run(t, context.Background(), src, h, consumer.Options{Count: 3, Max: 3})
	for _, err := range secondErrs {
		if !errors.Is(err, consumer.ErrAlreadySettled) {
			t.Errorf("second settlement = %v, want ErrAlreadySettled", err)
		}
	}
	if got, want := src.Handles(client.Ack), handles(msgs); !slices.Equal(got, want) {
		t.Errorf("acked %v, want %v", got, want)
	}
	if got := src.Handles(client.Nack); len(got) != 0 {
		t.Errorf("nacked %v, want none", got)
	}
	st := res.Stats
	if st.Acked != 3 || st.Nacked != 0 || st.Bugs != 12 || st.LeaseLost != 0 || res.Declined != 0 {
		t.Errorf("stats %+v declined %d, want acked 3, bugs 12", st, res.Declined)
	}
	if res.Outcome() != consumer.OutcomeFailed {
		t.Errorf("outcome %v, want failed: a double settlement is a bug", res.Outcome())
	}
}

func TestCountNeverOverReserves(t *testing.T) {
	for _, tc := range []struct {
		name        string
		count, max  int
		free        int
		wantAsks    []int
		wantHandled int
	}{
		{"count under max", 7, 3, 100, []int{3, 3, 1}, 7},
		{"free slots", 5, 100, 2, []int{2, 2, 1}, 5},
		{"count one", 1, 100, 100, []int{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := consumertest.New()
			src.Add("t", 20)
			h := &funcHandler{slots: func(context.Context) (int, error) { return tc.free, nil }}
			res := run(t, context.Background(), src, h, consumer.Options{Count: tc.count, Max: tc.max, Wait: time.Second})
			var asks []int
			for _, c := range src.Consumes() {
				asks = append(asks, c.Opts.Max)
			}
			if !slices.Equal(asks, tc.wantAsks) {
				t.Errorf("max asked per request %v, want %v", asks, tc.wantAsks)
			}
			if res.Reason != consumer.StopCount || res.Stats.Received != int64(tc.wantHandled) || res.Stats.Acked != int64(tc.wantHandled) {
				t.Errorf("result %+v, want count reached with %d acked", res, tc.wantHandled)
			}
			if src.Len() != 20-tc.wantHandled {
				t.Errorf("%d left on the queue, want %d", src.Len(), 20-tc.wantHandled)
			}
			if res.Outcome() != consumer.OutcomeOK {
				t.Errorf("outcome %v, want OK", res.Outcome())
			}
		})
	}
}

func TestDrainStopsAtFirstEmptyAnswerWithoutWaiting(t *testing.T) {
	src := consumertest.New()
	msgs := src.Add("t", 5)
	var out bytes.Buffer
	start := time.Now()
	res := run(t, context.Background(), src, consumer.NewPrinter(&out, lines{}),
		consumer.Options{Drain: true, Max: 2, Wait: 10 * time.Second})
	if time.Since(start) > 5*time.Second {
		t.Errorf("drain took %v: it must not long-poll", time.Since(start))
	}
	if res.Reason != consumer.StopDrained || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("reason %v outcome %v, want drained, OK", res.Reason, res.Outcome())
	}
	for _, c := range src.Consumes() {
		if c.Opts.Wait != 0 {
			t.Errorf("drain asked with wait %v, want 0", c.Opts.Wait)
		}
	}
	// Two consumes are on their way while a batch is printed (batchAhead), and either
	// may answer first: each line once, in any order.
	if got := sorted(strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); !slices.Equal(got, sorted(handles(msgs))) {
		t.Errorf("printed %q, want each of %v once", out.String(), handles(msgs))
	}
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs))) {
		t.Errorf("acked %v, want all", got)
	}
}

func TestTimeoutBeforeCount(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	var out bytes.Buffer
	start := time.Now()
	// The long poll is far longer than the timeout: the timeout must cut it short.
	res := run(t, context.Background(), src, consumer.NewPrinter(&out, lines{}),
		consumer.Options{Count: 10, Timeout: 300 * time.Millisecond, Wait: 30 * time.Second})
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("run took %v, want about the 300ms timeout", el)
	}
	if res.Reason != consumer.StopTimeout || !res.CountUnmet || res.Outcome() != consumer.OutcomeCountUnmet {
		t.Errorf("result %+v outcome %v, want timeout, count unmet", res, res.Outcome())
	}
	if res.Stats.Received != 3 || res.Stats.Acked != 3 {
		t.Errorf("stats %+v, want 3 received and acked", res.Stats)
	}
}

func TestTimeoutWithoutCountIsOK(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 2)
	res := run(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}),
		consumer.Options{Timeout: 100 * time.Millisecond, Wait: 10 * time.Second})
	if res.Reason != consumer.StopTimeout || res.CountUnmet || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("result %+v outcome %v, want timeout and OK", res, res.Outcome())
	}
}

func TestNoAckSettlesNothing(t *testing.T) {
	src := consumertest.New()
	msgs := src.Add("t", 4)
	var out bytes.Buffer
	res := run(t, context.Background(), src, consumer.NewPrinter(&out, lines{}),
		consumer.Options{Drain: true, NoAck: true})
	if got := src.Settles(); len(got) != 0 {
		t.Errorf("settlements %+v, want none with NoAck", got)
	}
	if out.String() != strings.Join(handles(msgs), "\n")+"\n" {
		t.Errorf("printed %q", out.String())
	}
	if res.Stats.Received != 4 || res.Stats.Acked != 0 || res.Stats.Nacked != 0 {
		t.Errorf("stats %+v, want 4 received, nothing settled", res.Stats)
	}

	// Not even what could not be written is given back.
	src = consumertest.New()
	src.Add("t", 4)
	res = run(t, context.Background(), src, consumer.NewPrinter(&brokenPipe{room: 3}, lines{}),
		consumer.Options{Drain: true, NoAck: true})
	if got := src.Settles(); len(got) != 0 || res.Reason != consumer.StopOutputClosed {
		t.Errorf("settlements %+v reason %v, want none and output closed", got, res.Reason)
	}
}

// brokenPipe takes room bytes, then fails with EPIPE like a pipe whose reader left.
type brokenPipe struct {
	mu    sync.Mutex
	room  int
	got   bytes.Buffer
	err   error // instead of EPIPE
	calls int
}

func (w *brokenPipe) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	n := min(len(p), w.room)
	w.got.Write(p[:n])
	w.room -= n
	if n < len(p) {
		if w.err != nil {
			return n, w.err
		}
		return n, fmt.Errorf("write |1: %w", syscall.EPIPE)
	}
	return n, nil
}

func TestPrinterPartialWrite(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 5) // records "h0\n" .. "h4\n", 3 bytes each
	// 8 bytes: h0 and h1 whole, h2 cut after two bytes.
	w := &brokenPipe{room: 8}
	res := run(t, context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Wait: time.Second})
	if w.calls != 1 {
		t.Errorf("%d writes, want one per batch", w.calls)
	}
	if got := w.got.String(); got != "h0\nh1\nh2" {
		t.Errorf("written %q", got)
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1"}) {
		t.Errorf("acked %v, want exactly the records written whole: h0 h1", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h2", "h3", "h4"}) {
		t.Errorf("nacked %v, want h2 h3 h4 given back", got)
	}
	if res.Reason != consumer.StopOutputClosed || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("reason %v outcome %v, want output closed and OK", res.Reason, res.Outcome())
	}
	if st := res.Stats; st.Acked != 2 || st.Nacked != 3 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestPrinterOtherWriteErrorFails(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	w := &brokenPipe{room: 3, err: errors.New("disk full")}
	res, err := consumer.Run(context.Background(), src, consumer.NewPrinter(w, lines{}), consumer.Options{Topic: "t"})
	if err == nil || !strings.Contains(err.Error(), "disk full") || res.Reason != consumer.StopFailed {
		t.Fatalf("err %v reason %v, want the write error as fatal", err, res.Reason)
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0"}) {
		t.Errorf("acked %v, want h0", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h1", "h2"}) {
		t.Errorf("nacked %v, want h1 h2", got)
	}
}

// orderedOut records writes and settlements in one sequence, to check that no ack
// ever precedes the write of its record.
type orderedOut struct {
	*consumertest.Source
	mu      sync.Mutex
	written map[string]bool
	early   []string
}

func (o *orderedOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range strings.Fields(string(p)) {
		o.written[h] = true
	}
	return len(p), nil
}

func (o *orderedOut) Settle(ctx context.Context, topic string, a client.Action, hs []string) ([]client.SettleResult, error) {
	o.mu.Lock()
	for _, h := range hs {
		if a == client.Ack && !o.written[h] {
			o.early = append(o.early, h)
		}
	}
	o.mu.Unlock()
	return o.Source.Settle(ctx, topic, a, hs)
}

func TestPrinterAcksOnlyAfterWriteAndSettlesAllBeforeReturning(t *testing.T) {
	o := &orderedOut{Source: consumertest.New(), written: map[string]bool{}}
	msgs := o.Add("t", 1000)
	res := run(t, context.Background(), o, consumer.NewPrinter(o, lines{}), consumer.Options{Drain: true, Max: 7})
	if len(o.early) > 0 {
		t.Errorf("acked before written: %v", o.early)
	}
	if got := sorted(o.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs))) {
		t.Errorf("acked %d handles, want all 1000 before Run returned", len(got))
	}
	if res.Stats.Acked != 1000 {
		t.Errorf("stats %+v", res.Stats)
	}
}

// holder keeps every delivery without settling it, as a handler with work in progress
// would, and reports when it has some.
type holder struct {
	funcHandler
	mu   sync.Mutex
	held []consumer.Delivery
	got  chan struct{}
}

func newHolder() *holder {
	h := &holder{got: make(chan struct{}, 100)}
	h.handle = func(_ context.Context, ds []consumer.Delivery) error {
		h.mu.Lock()
		h.held = append(h.held, ds...)
		h.mu.Unlock()
		h.got <- struct{}{}
		return nil
	}
	return h
}

func TestSoftStopGivesBackWhatIsHeld(t *testing.T) { synctest.Test(t, softStopGivesBackWhatIsHeld) }

func softStopGivesBackWhatIsHeld(t *testing.T) {
	src := consumertest.New()
	msgs := src.Add("t", 3)
	h := newHolder()
	stop := make(chan struct{})
	done := make(chan consumer.Result)
	go func() {
		res, err := consumer.Run(context.Background(), src, h, consumer.Options{Topic: "t", Stop: stop, Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- res
	}()
	<-h.got
	// The loop is now in a 30 s long poll (of the bubble's clock, which would jump to
	// its end were the stop to wait for it): the stop must not wait for it.
	synctest.Wait()
	start := time.Now()
	close(stop)
	var res consumer.Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the soft stop")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("stop took %v", el)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, sorted(handles(msgs))) {
		t.Errorf("nacked %v, want every held message given back", got)
	}
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v", got)
	}
	if res.Reason != consumer.StopInterrupted || res.Outcome() != consumer.OutcomeInterrupted || res.Stats.Nacked != 3 {
		t.Errorf("result %+v, want interrupted with 3 nacked", res)
	}
}

func TestHardStopSettlesOnAContextThatSurvives(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 2)
	h := newHolder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan consumer.Result)
	go func() {
		res, _ := consumer.Run(ctx, src, h, consumer.Options{Topic: "t", Wait: 30 * time.Second})
		done <- res
	}()
	<-h.got
	cancel()
	res := <-done
	st := src.Settles()
	if len(st) == 0 {
		t.Fatal("nothing given back")
	}
	for _, s := range st {
		if s.CtxErr != nil {
			t.Errorf("settlement asked on a dead context: %v", s.CtxErr)
		}
	}
	if res.Reason != consumer.StopInterrupted || res.Stats.Nacked != 2 {
		t.Errorf("result %+v", res)
	}
}

func TestStopBeforeAnythingIsTaken(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	stop := make(chan struct{})
	close(stop)
	res := run(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Stop: stop})
	if len(src.Consumes()) != 0 || res.Reason != consumer.StopInterrupted {
		t.Errorf("consumes %v reason %v, want nothing taken after a stop", src.Consumes(), res.Reason)
	}
}

func TestFatalConsumeErrorIsReturnedAsIs(t *testing.T) {
	src := consumertest.New()
	want := &client.Error{Op: client.OpConsume, Status: 403, Message: "forbidden"}
	src.FailNextConsume(want)
	res, err := consumer.Run(context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Topic: "t"})
	if err != error(want) {
		t.Errorf("err %v, want the client's *Error itself", err)
	}
	if res.Reason != consumer.StopFailed || res.Outcome() != consumer.OutcomeFailed {
		t.Errorf("result %+v", res)
	}
}

func TestAckGoneAndRetries(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 3)
	src.Status = func(a client.Action, h string) int {
		if h == "h1" {
			return 410
		}
		return 204
	}
	res := run(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Drain: true})
	if st := res.Stats; st.Acked != 2 || st.AckGone != 1 || st.Failed != 0 {
		t.Errorf("stats %+v, want 2 acked, 1 ack_gone", st)
	}
	if res.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("outcome %v, want lease gone", res.Outcome())
	}
}

// retrying answers every handle after two retries, as the client reports a 503 cured.
type retrying struct{ *consumertest.Source }

func (r retrying) Settle(ctx context.Context, topic string, a client.Action, hs []string) ([]client.SettleResult, error) {
	res, err := r.Source.Settle(ctx, topic, a, hs)
	for i := range res {
		res[i].Retries = 2
	}
	return res, err
}

func TestRetriesAreSummed(t *testing.T) {
	src := retrying{consumertest.New()}
	src.Add("t", 3)
	res := run(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Drain: true})
	if res.Stats.Retries != 6 || res.Stats.Acked != 3 {
		t.Errorf("stats %+v, want retries 6", res.Stats)
	}
}

func TestUnansweredSettlementCountsFailed(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 2)
	src.Status = func(client.Action, string) int { return 503 }
	res := run(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Drain: true})
	if res.Stats.Failed != 2 || res.Stats.Acked != 0 || res.Outcome() != consumer.OutcomeFailed {
		t.Errorf("stats %+v outcome %v, want 2 failed", res.Stats, res.Outcome())
	}
}

func TestLeftoversAreGivenBack(t *testing.T) {
	// A handler that returns without settling: the loop gives back what it left.
	src := consumertest.New()
	msgs := src.Add("t", 4)
	h := &funcHandler{handle: func(context.Context, []consumer.Delivery) error { return nil }}
	res := run(t, context.Background(), src, h, consumer.Options{Count: 4})
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, sorted(handles(msgs))) {
		t.Errorf("nacked %v", got)
	}
	if res.Stats.Nacked != 4 || res.Declined != 0 {
		t.Errorf("result %+v", res)
	}
}

type failingRenderer struct{ bad string }

func (f failingRenderer) Append(dst []byte, m *client.Message) ([]byte, error) {
	if m.ReceiptHandle == f.bad {
		return append(dst, "garbage"...), errors.New("cannot render")
	}
	return lines{}.Append(dst, m)
}

func TestRenderErrorPrintsWhatCameBeforeAndGivesBackTheRest(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 4)
	var out bytes.Buffer
	_, err := consumer.Run(context.Background(), src, consumer.NewPrinter(&out, failingRenderer{bad: "h2"}), consumer.Options{Topic: "t"})
	if err == nil || !strings.Contains(err.Error(), "cannot render") {
		t.Fatalf("err %v", err)
	}
	if out.String() != "h0\nh1\n" {
		t.Errorf("printed %q", out.String())
	}
	if got := src.Handles(client.Ack); !slices.Equal(got, []string{"h0", "h1"}) {
		t.Errorf("acked %v", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h2", "h3"}) {
		t.Errorf("nacked %v", got)
	}
}

func TestInvalidOptions(t *testing.T) {
	src := consumertest.New()
	for _, o := range []consumer.Options{{}, {Topic: "t", Max: 101}, {Topic: "t", Count: -1}} {
		if _, err := consumer.Run(context.Background(), src, &funcHandler{}, o); err == nil {
			t.Errorf("Run(%+v) accepted", o)
		}
	}
	if len(src.Consumes()) != 0 {
		t.Error("consumed with invalid options")
	}
}

// stuckWriter never returns from Write, like a pipe whose reader stopped reading.
type stuckWriter struct{ entered chan struct{} }

func (w *stuckWriter) Write(p []byte) (int, error) {
	close(w.entered)
	select {}
}

func TestPrinterStopAbandonsABlockedWriteAndGivesTheBatchBack(t *testing.T) {
	src := consumertest.New()
	src.Add("t", 4)
	w := &stuckWriter{entered: make(chan struct{})}
	stop := make(chan struct{})
	p := consumer.NewPrinter(w, lines{}) // Run tells it of the stop through its Pipelining
	go func() {
		<-w.entered
		close(stop)
	}()
	res, err := consumer.Run(context.Background(), src, p, consumer.Options{Topic: "t", Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if got := src.Handles(client.Ack); len(got) != 0 {
		t.Errorf("acked %v, want nothing: no write finished", got)
	}
	if got := sorted(src.Handles(client.Nack)); !slices.Equal(got, []string{"h0", "h1", "h2", "h3"}) {
		t.Errorf("nacked %v, want the whole batch given back", got)
	}
	if res.Outcome() != consumer.OutcomeInterrupted {
		t.Errorf("outcome %v, want interrupted", res.Outcome())
	}
}

// A delivery the handler parks (a failure held until a drain ends, so that the node
// does not offer it again) is not what a drain waits for: the drain ends once nothing
// else is ready, and the stop it makes is what the parked delivery waits for, to be
// given back. A drain waited for it as for anything held, and it waited for the
// drain's end: neither ever came.
func TestDrainDoesNotWaitForParkedDeliveries(t *testing.T) {
	src := consumertest.New()
	msgs := src.Add("t", 3)
	var parked consumer.Delivery
	h := &funcHandler{
		slots: func(ctx context.Context) (int, error) { return 1, ctx.Err() },
		handle: func(ctx context.Context, ds []consumer.Delivery) error {
			for _, d := range ds {
				if d.Message().ReceiptHandle == msgs[0].ReceiptHandle {
					d.Park()
					parked = d
					continue
				}
				_ = d.Ack()
			}
			return nil
		},
		finish: func(ctx context.Context, stopping <-chan struct{}) error {
			// Only a bound on a hang: the drain's end should have stopped the run.
			t := time.NewTimer(20 * time.Second)
			defer t.Stop()
			select {
			case <-stopping:
				return parked.Nack(consumer.Declined)
			case <-t.C:
				return errors.New("the drain ended without a stop for what was parked")
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res consumer.Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = consumer.Run(ctx, src, h, consumer.Options{Topic: "t", Drain: true})
	}()
	hang := time.NewTimer(30 * time.Second) // only a bound on a hang
	defer hang.Stop()
	select {
	case <-done:
	case <-hang.C:
		cancel()
		<-done
		t.Fatal("the drain waited for the parked delivery and never ended")
	}
	if err != nil || res.Reason != consumer.StopDrained {
		t.Fatalf("err %v reason %v, want drained", err, res.Reason)
	}
	if got := src.Handles(client.Nack); !slices.Equal(got, []string{msgs[0].ReceiptHandle}) {
		t.Errorf("nacked %v, want the parked one", got)
	}
	if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, sorted(handles(msgs[1:]))) {
		t.Errorf("acked %v, want the others", got)
	}
}
