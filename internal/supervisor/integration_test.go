package supervisor_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/devbroker"
)

// integrationLease is the visibility timeout of the brokers these tests start, and
// the run's Lease. Not shorter: the node hands a message to another consumer once no
// extend came for that long, and a loaded machine (the race detector, other work on
// two CPUs) can hold narad's keeper up for a second.
const integrationLease = 3 * time.Second

// broker starts a devbroker whose topic "t" has integrationLease as its visibility
// timeout, and returns it with a client.
func broker(t *testing.T) (*devbroker.Broker, *client.Client) {
	return consumertest.Broker(t, integrationLease)
}

func topicStats(t *testing.T, b *devbroker.Broker) devbroker.TopicStats {
	t.Helper()
	st, err := b.Stats("t")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// poller is a competing consumer asking without waiting, as often as it can.
type poller struct {
	got  chan time.Time // when it first got a message
	stop chan struct{}
	done chan struct{}
}

func startPoller(t *testing.T, c *client.Client) *poller {
	p := &poller{got: make(chan time.Time, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			res, err := c.Consume(context.Background(), "t", client.ConsumeOptions{Max: 1})
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Messages) > 0 {
				p.got <- time.Now()
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(p.stop)
		<-p.done
	})
	return p
}

func TestIntegrationLeaseKeptForACommandLongerThanTheLease(t *testing.T) {
	t.Parallel()
	b, c := broker(t)
	// The command runs until five extends went out: well past the lease, however
	// slow the machine.
	release := filepath.Join(t.TempDir(), "release")
	if _, _, err := b.Produce("t", "", []byte("waitfile "+release)); err != nil {
		t.Fatal(err)
	}
	releaseWhen(t, release, func() bool { return b.Requests("extend") >= 5 })
	o := opts("script")
	p := startPoller(t, c)
	r := runSup(t, context.Background(), c, o, consumer.Options{Count: 1, Wait: time.Second, Lease: integrationLease})
	select {
	case at := <-p.got:
		t.Errorf("a competing consumer got the message at %v while the command ran", at)
	default:
	}
	if r.Stats.Acked != 1 || r.Stats.LeaseLost != 0 || r.Stats.AckGone != 0 || r.Outcome() != consumer.OutcomeOK {
		t.Errorf("result %+v", r.Result)
	}
	if st := topicStats(t, b); st.Acked() != 1 || st.InFlight() != 0 {
		t.Errorf("broker: acked %d in flight %d", st.Acked(), st.InFlight())
	}
	if b.Requests("extend") < 5 {
		t.Errorf("%d extends while the command ran, want 5", b.Requests("extend"))
	}
}

func TestIntegrationRetryDelay(t *testing.T) {
	t.Parallel()
	b, c := broker(t)
	log := filepath.Join(t.TempDir(), "log")
	if _, _, err := b.Produce("t", "", []byte("exit 1")); err != nil {
		t.Fatal(err)
	}
	o := opts("log", log, "script")
	o.RetryDelay = 2 * time.Second
	p := startPoller(t, c)
	r := runSup(t, context.Background(), c, o, consumer.Options{Count: 1, Wait: time.Second, Lease: integrationLease})
	var got time.Time
	select {
	case got = <-p.got:
	case <-time.After(10 * time.Second):
		t.Fatal("the message was not offered again after the retry delay")
	}
	ends := eventsOf(readLog(t, log), "end")
	if len(ends) != 1 {
		t.Fatalf("log %v", readLog(t, log))
	}
	if d := got.Sub(ends[0].at); d < 2*time.Second {
		t.Errorf("offered again %v after the failure, before the 2s retry delay", d)
	}
	if r.Stats.Nacked != 1 || r.Stats.Failed != 1 || r.Outcome() != consumer.OutcomeFailed {
		t.Errorf("result %+v", r.Result)
	}
}

func TestIntegrationExtendGoneStopsTheCommand(t *testing.T) {
	t.Parallel()
	b, c := broker(t)
	log := filepath.Join(t.TempDir(), "log")
	if _, _, err := b.Produce("t", "", []byte("sleep 10s")); err != nil {
		t.Fatal(err)
	}
	done := make(chan runResult)
	go func() {
		done <- runSup(t, context.Background(), c, opts("log", log, "script"), consumer.Options{Count: 1, Wait: time.Second, Lease: integrationLease})
	}()
	// Only once the command runs (and handles SIGTERM): a slow start is no test.
	waitFor(t, "the command to start", func() bool { return len(readLog(t, log)) > 0 })
	b.FailNext("extend", 1, 410)
	r := <-done
	evs := readLog(t, log)
	if len(eventsOf(evs, "start")) != 1 || len(eventsOf(evs, "term")) != 1 {
		t.Fatalf("log %v, want the command stopped", evs)
	}
	// The command sleeps 10s: its SIGTERM and no end in the log prove the stop.
	if len(eventsOf(evs, "end")) != 0 {
		t.Errorf("log %v: the command ran to its end", evs)
	}
	if b.Requests("ack") != 0 || b.Requests("nack") != 0 {
		t.Errorf("settled after a lost lease: %d acks, %d nacks", b.Requests("ack"), b.Requests("nack"))
	}
	if r.Stats.LeaseLost != 1 || r.Outcome() != consumer.OutcomeLeaseGone {
		t.Errorf("result %+v", r.Result)
	}
}

func TestIntegrationConcurrencyAgainstTheBroker(t *testing.T) {
	t.Parallel()
	b, c := broker(t)
	for range 8 {
		if _, _, err := b.Produce("t", "", []byte("sleep 1s")); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "log")
	o := opts("log", log, "script")
	o.Concurrency = 4
	r := runSup(t, context.Background(), c, o, consumer.Options{Count: 8, Wait: time.Second, Lease: integrationLease})
	if r.Stats.Acked != 8 || r.Outcome() != consumer.OutcomeOK {
		t.Errorf("result %+v", r.Result)
	}
	if most := mostAtOnce(readLog(t, log)); most > 4 {
		t.Errorf("%d commands at once, want at most 4", most)
	}
	if st := topicStats(t, b); st.Acked() != 8 || st.InFlight() != 0 {
		t.Errorf("broker: acked %d in flight %d", st.Acked(), st.InFlight())
	}
}

// mostAtOnce is the most commands running at once in a helper log.
func mostAtOnce(evs []event) int {
	slices.SortFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	running, most := 0, 0
	for _, e := range evs {
		if e.what == "start" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	return most
}
