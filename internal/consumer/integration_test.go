package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/render"
)

// broker starts a devbroker with topic "t" and returns it with a client for it.
func broker(t *testing.T) (*devbroker.Broker, *client.Client) {
	return consumertest.Broker(t, 30*time.Second)
}

func produce(t *testing.T, b *devbroker.Broker, from, n int) []string {
	t.Helper()
	var want []string
	for i := from; i < from+n; i++ {
		p := fmt.Sprintf("m%03d", i)
		if _, _, err := b.Produce("t", "", []byte(p)); err != nil {
			t.Fatal(err)
		}
		want = append(want, p)
	}
	return want
}

func rawRenderer(t *testing.T) *render.Renderer {
	t.Helper()
	r, err := render.New(render.Options{Format: render.Raw})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stats(t *testing.T, b *devbroker.Broker) devbroker.TopicStats {
	t.Helper()
	st, err := b.Stats("t")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestIntegrationPrintDrainAck(t *testing.T) {
	b, c := broker(t)
	want := produce(t, b, 0, 250)
	var out bytes.Buffer
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&out, rawRenderer(t)),
		consumer.Options{Topic: "t", Drain: true, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out.String())
	if !slices.Equal(sorted(got), want) {
		t.Errorf("printed %d messages, want the 250 produced", len(got))
	}
	st := stats(t, b)
	if st.Acked() != 250 || st.InFlight() != 0 || st.Available() != 0 {
		t.Errorf("broker: acked %d in flight %d available %d", st.Acked(), st.InFlight(), st.Available())
	}
	if res.Reason != consumer.StopDrained || res.Stats.Acked != 250 || res.Outcome() != consumer.OutcomeOK {
		t.Errorf("result %+v", res)
	}
}

func TestIntegrationCountLeavesTheRest(t *testing.T) {
	b, c := broker(t)
	produce(t, b, 0, 20)
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Topic: "t", Count: 7, Max: 3, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := stats(t, b)
	if st.Acked() != 7 || st.InFlight() != 0 || st.Available() != 13 || b.Requests("nack") != 0 {
		t.Errorf("broker: acked %d in flight %d available %d nacks %d; want 7 taken, nothing reserved beyond",
			st.Acked(), st.InFlight(), st.Available(), b.Requests("nack"))
	}
	if res.Reason != consumer.StopCount || res.Stats.Received != 7 {
		t.Errorf("result %+v", res)
	}
}

// TestIntegrationClosedPipeGivesBackAtOnce: the reader is `head -n 1` reading a byte at
// a time, as sh's `read` does: it takes one line and goes away while all five lines
// wait in the pipe. The line it took is acked and the four it never took go back at
// once.
func TestIntegrationClosedPipeGivesBackAtOnce(t *testing.T) {
	b, c := broker(t)
	produce(t, b, 0, 5)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	headDone := make(chan string)
	go func() {
		line := readLine(t, r)
		// Leave once all five are out, so that no consume is on its way (what a
		// consume cancelled in flight may strand is not the printer's to fix).
		for deadline := time.Now().Add(10 * time.Second); stats(t, b).InFlight() < 5 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		r.Close()
		headDone <- line
	}()
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(w, rawRenderer(t)),
		consumer.Options{Topic: "t", Count: 5, Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if line := <-headDone; !strings.HasPrefix(line, "m00") {
		t.Fatalf("head read %q", line)
	}
	st := stats(t, b)
	if st.Acked() != 1 || st.Available() != 4 || st.InFlight() != 0 {
		t.Errorf("broker: acked %d available %d in flight %d; want the line head read acked and 4 back",
			st.Acked(), st.Available(), st.InFlight())
	}
	if res.Outcome() != consumer.OutcomeOK || res.Stats.Acked != 1 || res.Stats.Nacked != 4 {
		t.Errorf("result %+v", res)
	}
}

// TestIntegrationReaderGoneWhileIdle: the reader takes the only message and goes away
// while narad long-polls for more; that ends the run at once, without waiting for a
// message to reveal the closed pipe.
func TestIntegrationReaderGoneWhileIdle(t *testing.T) {
	b, c := broker(t)
	produce(t, b, 0, 1)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		readLine(t, r)
		r.Close()
	}()
	done := make(chan consumer.Result, 1)
	go func() {
		res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(w, rawRenderer(t)),
			consumer.Options{Topic: "t", Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var res consumer.Result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second): // a bound on a hang, far below the minute's long poll
		t.Fatal("the run still waits for messages although its reader went away")
	}
	if st := stats(t, b); st.Acked() != 1 || st.InFlight() != 0 {
		t.Errorf("broker: acked %d in flight %d", st.Acked(), st.InFlight())
	}
	if res.Reason != consumer.StopOutputClosed || res.Outcome() != consumer.OutcomeOK || res.Stats.Acked != 1 {
		t.Errorf("result %+v", res)
	}
}

// readLine reads one line a byte at a time, taking nothing after it out of r.
func readLine(t *testing.T, r io.Reader) string {
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Errorf("read: %v", err)
			return string(line)
		}
		line = append(line, b[0])
		if b[0] == '\n' {
			return string(line)
		}
	}
}

func TestIntegrationAckRetriedOn503(t *testing.T) {
	b, c := broker(t)
	produce(t, b, 0, 3)
	b.FailNext("ack", 2, 503)
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Topic: "t", Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := stats(t, b); st.Acked() != 3 {
		t.Errorf("broker acked %d", st.Acked())
	}
	if res.Stats.Acked != 3 || res.Stats.Retries < 1 || res.Stats.Failed != 0 {
		t.Errorf("stats %+v, want 3 acked after retries", res.Stats)
	}
}

func TestIntegrationUnknownTopicFailsFast(t *testing.T) {
	_, c := broker(t)
	res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(&bytes.Buffer{}, rawRenderer(t)),
		consumer.Options{Topic: "nope", Wait: 10 * time.Second})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 404 {
		t.Fatalf("err %v, want the client's 404", err)
	}
	if res.Reason != consumer.StopFailed {
		t.Errorf("reason %v", res.Reason)
	}
}
