package producer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/producer"
)

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "message %d\n", i)
	}
	return b.String()
}

func run(t *testing.T, legacy bool, n, j int) (*devbroker.Broker, producer.Result) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t"}}, Legacy: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := client.New(client.Config{BaseURL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b, producer.Run(ctx, c, producer.Lines(strings.NewReader(lines(n))), producer.Options{Topic: "t", Concurrency: j})
}

// On a v3.1 node 1,000 lines go in a handful of batch requests.
func TestBrokerBatches(t *testing.T) {
	b, res := run(t, false, 1000, 4)
	st, _ := b.Stats("t")
	if res.Produced != 1000 || st.Messages() != 1000 {
		t.Fatalf("produced %d, the node holds %d", res.Produced, st.Messages())
	}
	if n := b.Requests(devbroker.OpProduce); n < 10 || n > 50 {
		t.Errorf("%d requests for 1,000 messages, want batches of up to 100", n)
	}
}

// An older node gets one request per message, after the one batch that found out.
func TestBrokerLegacy(t *testing.T) {
	b, res := run(t, true, 300, 4)
	st, _ := b.Stats("t")
	if res.Produced != 300 || st.Messages() != 300 || b.Requests(devbroker.OpProduce) != 300 {
		t.Fatalf("produced %d, the node holds %d after %d requests", res.Produced, st.Messages(), b.Requests(devbroker.OpProduce))
	}
}
