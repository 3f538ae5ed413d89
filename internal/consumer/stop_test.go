package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// deadNode answers consumes from the queue but never confirms a settlement of the
// actions in dead: each such Settle waits until its context ends and then reports the
// last answer a retrying client would have, a 503 (Status 0 when asked on a context
// with little time left, as a request cut by its deadline). started gets a value per
// such settlement.
type deadNode struct {
	*consumertest.Source
	dead    map[client.Action]bool
	started chan client.Action

	mu       sync.Mutex
	deadline []time.Duration // per stuck settlement: its context's time left when asked (0: none)
}

func newDeadNode(dead ...client.Action) *deadNode {
	d := &deadNode{Source: consumertest.New(), dead: map[client.Action]bool{}, started: make(chan client.Action, 100)}
	for _, a := range dead {
		d.dead[a] = true
	}
	return d
}

func (d *deadNode) Settle(ctx context.Context, topic string, a client.Action, hs []string) ([]client.SettleResult, error) {
	if !d.dead[a] {
		return d.Source.Settle(ctx, topic, a, hs)
	}
	var left time.Duration
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.deadline = append(d.deadline, left)
	d.mu.Unlock()
	d.started <- a
	<-ctx.Done()
	res := make([]client.SettleResult, len(hs))
	for i, h := range hs {
		res[i] = client.SettleResult{Handle: h, Status: 503, Err: "injected fault: 503 Service Unavailable", Retries: 3}
	}
	return res, nil
}

func (d *deadNode) timesLeft() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deadline)
}

// runAsync runs Run in the background; the channel gets its result.
func runAsync(t *testing.T, ctx context.Context, src consumer.Source, h consumer.Handler, o consumer.Options) <-chan consumer.Result {
	t.Helper()
	if o.Topic == "" {
		o.Topic = "t"
	}
	done := make(chan consumer.Result, 1)
	go func() {
		res, err := consumer.Run(ctx, src, h, o)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- res
	}()
	return done
}

// await is the result of a Run that must end now; the bound only turns a hang into a
// failure, it measures nothing.
func await(t *testing.T, done <-chan consumer.Result, what string) consumer.Result {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after %s", what)
		return consumer.Result{}
	}
}

func unconfirmedHandles(us []consumer.Unconfirmed, a client.Action) []string {
	var hs []string
	for _, u := range us {
		if u.Action == a {
			hs = append(hs, u.Handle)
		}
	}
	return sorted(hs)
}

// Acks retried against a node that never confirms them survive the first signal and
// are abandoned at the second (here with the default two-minute budget, so only the
// abandon can end them), each named in Result.Unconfirmed and counted failed.
func TestHardStopAbandonsSettlementRetries(t *testing.T) {
	src := newDeadNode(client.Ack)
	msgs := src.Add("t", 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	var out bytes.Buffer
	done := runAsync(t, ctx, src, consumer.NewPrinter(&out, lines{}), consumer.Options{Stop: stop, Max: 3, Wait: time.Millisecond})
	<-src.started
	close(stop)
	// The soft stop alone leaves the ack to its retries: nothing ends it.
	select {
	case res := <-done:
		t.Fatalf("Run returned at the soft stop with the ack unsettled: %+v", res)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	res := await(t, done, "the hard stop")
	if got, want := unconfirmedHandles(res.Unconfirmed, client.Ack), sorted(handles(msgs)); !slices.Equal(got, want) {
		t.Errorf("unconfirmed acks %v, want %v", got, want)
	}
	for _, u := range res.Unconfirmed {
		i := slices.IndexFunc(msgs, func(m client.Message) bool { return m.ReceiptHandle == u.Handle })
		if i < 0 || u.Partition != msgs[i].Partition || u.Offset != msgs[i].Offset {
			t.Errorf("unconfirmed %+v does not carry its message's position", u)
		}
	}
	if st := res.Stats; st.Acked != 0 || st.Failed != 3 || st.Retries != 9 {
		t.Errorf("stats %+v, want 3 failed, 9 retries", st)
	}
	if res.Reason != consumer.StopInterrupted {
		t.Errorf("reason %v", res.Reason)
	}
}

// Closing Options.Abandon (exec mode: the end of --shutdown-grace) gives up the
// retries as the hard stop does.
func TestAbandonGivesUpSettlementRetries(t *testing.T) {
	src := newDeadNode(client.Ack)
	msgs := src.Add("t", 2)
	stop, abandon := make(chan struct{}), make(chan struct{})
	done := runAsync(t, context.Background(), src, consumer.NewPrinter(&bytes.Buffer{}, lines{}),
		consumer.Options{Stop: stop, Abandon: abandon, Max: 2, Wait: time.Millisecond})
	<-src.started
	close(stop)
	close(abandon)
	res := await(t, done, "the abandon")
	if got, want := unconfirmedHandles(res.Unconfirmed, client.Ack), sorted(handles(msgs)); !slices.Equal(got, want) {
		t.Errorf("unconfirmed acks %v, want %v", got, want)
	}
}

// A give-back asked for after the hard stop (a command stopped then) still gets one
// prompt try, on a context that is alive but short: it lands when the node answers,
// and is named when it does not.
func TestGiveBackAfterHardStopGetsOnePromptTry(t *testing.T) {
	for _, dead := range []bool{false, true} {
		t.Run(fmt.Sprintf("dead=%v", dead), func(t *testing.T) {
			src := newDeadNode()
			if dead {
				src = newDeadNode(client.Nack)
			}
			msgs := src.Add("t", 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := newHolder()
			h.finish = func(ctx context.Context, _ <-chan struct{}) error {
				<-ctx.Done()
				_ = consumer.NackAll(h.held, consumer.Declined)
				return nil
			}
			done := runAsync(t, ctx, src, h, consumer.Options{Max: 3, Wait: time.Millisecond, LastTry: 40 * time.Millisecond})
			<-h.got
			cancel()
			res := await(t, done, "the hard stop")
			for _, s := range src.Settles() {
				if s.CtxErr != nil {
					t.Errorf("give-back asked on a dead context: %v", s.CtxErr)
				}
			}
			if !dead {
				if res.Stats.Nacked != 3 || len(res.Unconfirmed) != 0 {
					t.Errorf("stats %+v unconfirmed %v, want 3 nacked", res.Stats, res.Unconfirmed)
				}
				return
			}
			for _, left := range src.timesLeft() {
				if left <= 0 || left > 40*time.Millisecond {
					t.Errorf("a give-back after the hard stop had %v, want at most LastTry", left)
				}
			}
			if got, want := unconfirmedHandles(res.Unconfirmed, client.Nack), sorted(handles(msgs)); !slices.Equal(got, want) {
				t.Errorf("unconfirmed nacks %v, want %v", got, want)
			}
		})
	}
}

// inFlight is a node whose consume answer is on its way while the test acts: the
// batch is leased the moment a consume arrives, and the answer is delivered when the
// test releases it. A request cancelled before that strands the batch, as a real one
// would until the lease ran out.
type inFlight struct {
	*consumertest.Source
	arrived  chan struct{}
	release  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	stranded []string
}

func (f *inFlight) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	res, err := f.Source.Consume(ctx, topic, client.ConsumeOptions{Max: o.Max})
	if err != nil || len(res.Messages) == 0 {
		return res, err
	}
	f.once.Do(func() { close(f.arrived) })
	select {
	case <-f.release:
		return res, nil
	case <-ctx.Done():
		f.mu.Lock()
		f.stranded = append(f.stranded, handles(res.Messages)...)
		f.mu.Unlock()
		return nil, fmt.Errorf("consume: %w (%w)", ctx.Err(), client.ErrAnswerLost)
	}
}

// A stop while a consume's answer is on its way lets it arrive and gives the batch
// back at once: the node leased it, and cutting the request would strand it.
func TestStopLetsTheConsumeInFlightArriveAndGivesItBack(t *testing.T) {
	for _, how := range []string{"signal", "timeout"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &inFlight{Source: consumertest.New(), arrived: make(chan struct{}), release: make(chan struct{})}
				msgs := f.Add("t", 4)
				stop := make(chan struct{})
				o := consumer.Options{Stop: stop, Max: 10, Wait: time.Millisecond}
				if how == "timeout" {
					o.Timeout = time.Millisecond
				}
				done := runAsync(t, context.Background(), f, consumer.NewPrinter(&bytes.Buffer{}, lines{}), o)
				<-f.arrived
				if how == "signal" {
					close(stop)
				}
				// The stop takes effect before the answer arrives: the timeout's moment
				// passes on the bubble's clock, then the run waits on nothing but the
				// answer.
				time.Sleep(o.Timeout)
				synctest.Wait()
				close(f.release)
				res := await(t, done, "the stop")
				if len(f.stranded) != 0 {
					t.Errorf("stranded %v: the consume in flight was cut", f.stranded)
				}
				if got, want := sorted(f.Handles(client.Nack)), sorted(handles(msgs)); !slices.Equal(got, want) {
					t.Errorf("given back %v, want the whole batch %v", got, want)
				}
				if res.AnswerLost || res.Stats.Received != 4 || res.Stats.Nacked != 4 {
					t.Errorf("result %+v, want 4 received and given back", res)
				}
			})
		})
	}
}

// The hard stop may cut the consume in flight, and then says so.
func TestHardStopCutsTheConsumeInFlightAndSaysSo(t *testing.T) {
	f := &inFlight{Source: consumertest.New(), arrived: make(chan struct{}), release: make(chan struct{})}
	f.Add("t", 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(t, ctx, f, consumer.NewPrinter(&bytes.Buffer{}, lines{}), consumer.Options{Max: 10, Wait: time.Millisecond})
	<-f.arrived
	cancel()
	res := await(t, done, "the hard stop")
	if !res.AnswerLost || len(f.stranded) != 2 {
		t.Errorf("answer lost %v, stranded %v: want the cut reported", res.AnswerLost, f.stranded)
	}
}

// A node that does not answer a consume in flight at a stop is not waited on for
// ever: AnswerGrace past the wait, the request is cut, and that is reported.
func TestStopCutsAConsumeTheNodeNeverAnswers(t *testing.T) {
	f := &inFlight{Source: consumertest.New(), arrived: make(chan struct{}), release: make(chan struct{})}
	f.Add("t", 1)
	stop := make(chan struct{})
	done := runAsync(t, context.Background(), f, consumer.NewPrinter(&bytes.Buffer{}, lines{}),
		consumer.Options{Stop: stop, Max: 10, Wait: time.Millisecond, AnswerGrace: 10 * time.Millisecond})
	<-f.arrived
	close(stop)
	res := await(t, done, "the stop")
	if !res.AnswerLost || res.Reason != consumer.StopInterrupted {
		t.Errorf("result %+v, want interrupted with the answer lost", res)
	}
}

// capped is a node with one partition whose in-flight cap is 1: a consume finds
// nothing while the message it handed out is unsettled. The ack of a message is
// delayed until the node has answered the consume after the one that handed it out,
// so that that consume always finds the partition still capped.
type capped struct {
	*consumertest.Source
	mu       sync.Mutex
	cond     *sync.Cond
	consumes int
	out      map[string]int // unsettled handle -> number of the consume that handed it out
}

func newCapped() *capped {
	c := &capped{Source: consumertest.New(), out: map[string]int{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *capped) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.cond.Broadcast()
	c.consumes++
	if len(c.out) > 0 {
		return &client.ConsumeResult{}, nil
	}
	res, err := c.Source.Consume(ctx, topic, client.ConsumeOptions{Max: 1})
	if err == nil {
		for _, m := range res.Messages {
			c.out[m.ReceiptHandle] = c.consumes
		}
	}
	return res, err
}

func (c *capped) Settle(ctx context.Context, topic string, a client.Action, hs []string) ([]client.SettleResult, error) {
	c.mu.Lock()
	for _, h := range hs {
		for c.consumes <= c.out[h] {
			c.cond.Wait()
		}
		delete(c.out, h)
	}
	c.mu.Unlock()
	return c.Source.Settle(ctx, topic, a, hs)
}

// --drain ends only at an empty answer given while nothing of the run was held or
// being settled: an empty answer behind its own unsettled acks is asked again.
func TestDrainWaitsForItsOwnSettlementsBeforeEnding(t *testing.T) {
	c := newCapped()
	msgs := c.Add("t", 20)
	var out bytes.Buffer
	res := run(t, context.Background(), c, consumer.NewPrinter(&out, lines{}), consumer.Options{Drain: true})
	if res.Reason != consumer.StopDrained || res.Stats.Received != 20 || res.Stats.Acked != 20 {
		t.Errorf("result %+v, want all 20 drained and acked", res)
	}
	if got, want := sorted(c.Handles(client.Ack)), sorted(handles(msgs)); !slices.Equal(got, want) {
		t.Errorf("acked %d of 20", len(got))
	}
}
