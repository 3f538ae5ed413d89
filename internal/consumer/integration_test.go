package consumer_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
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

func TestIntegrationClosedPipeGivesBackAtOnce(t *testing.T) {
	b, c := broker(t)
	produce(t, b, 0, 5)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The reader is `head -n 1`: it reads a line and goes away.
	headDone := make(chan string)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		headDone <- line
	}()
	done := make(chan consumer.Result)
	go func() {
		res, err := consumer.Run(context.Background(), c, consumer.NewPrinter(w, rawRenderer(t)),
			consumer.Options{Topic: "t", Wait: 5 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-headDone
	// The first batch fit in the pipe and was acked; the next cannot be written.
	waitAcked := time.Now().Add(10 * time.Second)
	for stats(t, b).Acked() != 5 && time.Now().Before(waitAcked) {
		time.Sleep(10 * time.Millisecond)
	}
	produce(t, b, 5, 5)
	res := <-done
	st := stats(t, b)
	if st.Acked() != 5 || st.Available() != 5 || st.InFlight() != 0 {
		t.Errorf("broker: acked %d available %d in flight %d; want the unwritten 5 back in the queue",
			st.Acked(), st.Available(), st.InFlight())
	}
	// The long poll may wake at the first new message: what it took and could not
	// write went back, and nothing else was taken.
	if res.Reason != consumer.StopOutputClosed || res.Outcome() != consumer.OutcomeOK ||
		res.Stats.Nacked != res.Stats.Received-5 || res.Stats.Nacked < 1 {
		t.Errorf("result %+v", res)
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
