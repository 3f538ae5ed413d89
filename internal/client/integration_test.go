package client_test

// Against the real in-memory broker (internal/devbroker), which serves API.md as a
// v3.1 node does, and as an older node does in legacy mode.

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
)

func startBroker(t *testing.T, cfg devbroker.Config) *devbroker.Broker {
	t.Helper()
	b, err := devbroker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func brokerClient(t *testing.T, b *devbroker.Broker, mod ...func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{BaseURL: b.URL(), Retry: client.RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Before the broker's Close (cleanups run last first), which would wait for
	// connections dialled in a burst and never used.
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ackAll acks handles in one Settle, each of which must be acked (204), and returns
// the results.
func ackAll(t *testing.T, ctx context.Context, c *client.Client, topic string, handles []string) []client.SettleResult {
	t.Helper()
	res, err := c.Settle(ctx, topic, client.Ack, handles)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Status != 204 {
			t.Errorf("ack: %+v", r)
		}
	}
	return res
}

// consumeN takes messages in batches until it holds n of them.
func consumeN(t *testing.T, c *client.Client, topic string, n int) []client.Message {
	t.Helper()
	var got []client.Message
	for tries := 0; len(got) < n && tries < 20; tries++ {
		res, err := c.Consume(testCtx(t), topic, client.ConsumeOptions{Wait: 200 * time.Millisecond, Max: n - len(got)})
		if err != nil {
			t.Fatalf("consume: %v", err)
		}
		got = append(got, res.Messages...)
	}
	if len(got) != n {
		t.Fatalf("consumed %d messages, want %d", len(got), n)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}

type produced struct {
	key     *string
	payload []byte
}

func TestBrokerRoundTrip(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	c := brokerClient(t, b)
	ctx := testCtx(t)
	k := func(s string) *string { return &s }
	msgs := []produced{
		{k("customer-42"), []byte(`{"order_id": "ord_123",  "amount": 4999}`)},
		{nil, []byte("hello world")},
		{k("\xff\x01bin"), []byte{0x89, 'P', 'N', 'G', 0, 0xfe}},
		{k("customer-9"), []byte(`"hi"`)},
	}
	// Pinned to one partition so the offsets give the order back.
	for _, m := range msgs {
		if err := c.Produce(ctx, "orders", m.payload, client.ProduceOptions{Key: m.key, Partition: ptr(1)}); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	got := consumeN(t, c, "orders", len(msgs))
	wantPayload := [][]byte{msgs[0].payload, msgs[1].payload, msgs[2].payload, []byte("hi")}
	var hs []string
	for i, m := range got {
		p, err := m.PayloadBytes()
		if err != nil || !bytes.Equal(p, wantPayload[i]) {
			t.Errorf("message %d: payload %q, %v; want %q", i, p, err, wantPayload[i])
		}
		key, ok, err := m.KeyBytes()
		if err != nil || ok != (msgs[i].key != nil) || (ok && string(key) != *msgs[i].key) || ok != m.HasKey() {
			t.Errorf("message %d: key %q, %v, %v", i, key, ok, err)
		}
		hs = append(hs, m.ReceiptHandle)
	}
	if got[2].KeyEncoding != "base64" {
		t.Errorf("a binary key came back with encoding %q", got[2].KeyEncoding)
	}

	ackAll(t, ctx, c, "orders", hs)
	if err := c.Ack(ctx, "orders", hs[0]); !client.IsGone(err) ||
		err.Error() != "ack: 410 receipt handle no longer matches an active reservation" {
		t.Errorf("second ack: %v", err)
	}

	m, err := c.Replay(ctx, "orders", 1, 2)
	if err != nil || m == nil || m.ReceiptHandle != "" || !bytes.Equal(must(m.PayloadBytes()), msgs[2].payload) {
		t.Errorf("replay: %+v, %v", m, err)
	}
	if m, err := c.Replay(ctx, "orders", 1, 4); m != nil || err != nil {
		t.Errorf("replay at the tail: %+v, %v", m, err)
	}
	tp, err := c.Topic(ctx, "orders")
	if err != nil || len(tp.PartitionStats) != 3 || tp.PartitionStats[1].HighWatermark != 4 || tp.VisibilityTimeoutMs != 30000 {
		t.Errorf("topic: %+v, %v", tp, err)
	}
	if res, err := c.Consume(ctx, "orders", client.ConsumeOptions{Max: 10}); err != nil || len(res.Messages) != 0 {
		t.Errorf("empty topic: %+v, %v", res, err)
	}
}

func TestBrokerLeases(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "jobs"}}})
	c := brokerClient(t, b)
	ctx := testCtx(t)
	if err := c.Produce(ctx, "jobs", []byte("work"), client.ProduceOptions{}); err != nil {
		t.Fatal(err)
	}
	m := consumeN(t, c, "jobs", 1)[0]
	if err := c.Extend(ctx, "jobs", m.ReceiptHandle); err != nil {
		t.Errorf("extend: %v", err)
	}
	if err := c.Nack(ctx, "jobs", m.ReceiptHandle); err != nil {
		t.Errorf("nack: %v", err)
	}
	again := consumeN(t, c, "jobs", 1)[0]
	if again.Offset != m.Offset || again.ReceiptHandle == m.ReceiptHandle {
		t.Errorf("after a nack: %+v", again)
	}
	if err := c.Extend(ctx, "jobs", m.ReceiptHandle); !client.IsGone(err) {
		t.Errorf("extend of the old handle: %v", err)
	}
	if err := c.Ack(ctx, "jobs", "not-a-handle"); client.StatusOf(err) != 400 {
		t.Errorf("malformed handle: %v", err)
	}
}

// Faulted acks (plain-text 503s, per handle in a batch) are retried until they land.
func TestBrokerAckFaultsRetried(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders"}}})
	c := brokerClient(t, b)
	ctx := testCtx(t)
	for i := 0; i < 5; i++ {
		if err := c.Produce(ctx, "orders", []byte("m"), client.ProduceOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var hs []string
	for _, m := range consumeN(t, c, "orders", 5) {
		hs = append(hs, m.ReceiptHandle)
	}
	b.FailNextPlain(devbroker.OpAck, 3, http.StatusServiceUnavailable)
	b.FailNext(devbroker.OpAck, 1, http.StatusBadGateway)
	retries := 0
	for _, r := range ackAll(t, ctx, c, "orders", hs) {
		retries += r.Retries
	}
	if retries < 4 {
		t.Errorf("%d retries for 4 faulted handles", retries)
	}

	b.FailNextPlain(devbroker.OpProduce, 2, http.StatusServiceUnavailable)
	if err := c.Produce(ctx, "orders", []byte("m"), client.ProduceOptions{}); err != nil {
		t.Errorf("produce after two 503s: %v", err)
	}
	b.FailNextPlain(devbroker.OpConsume, 2, http.StatusServiceUnavailable)
	if got := consumeN(t, c, "orders", 1); len(got) != 1 {
		t.Errorf("consume after two 503s: %v", got)
	}
}

// An older node: batch consume answers the single shape, binary keys come Go-quoted,
// batch acks are refused with 400 "receipt_handle required".
func TestBrokerLegacyNode(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders"}}, Legacy: true})
	var log client.EventLog
	c := brokerClient(t, b, func(c *client.Config) { c.Hooks = []client.Hook{&log} })
	ctx := testCtx(t)
	key := "\x01\xff"
	for i := 0; i < 3; i++ {
		if err := c.Produce(ctx, "orders", []byte("m"), client.ProduceOptions{Key: &key, Partition: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	var hs []string
	for i := 0; i < 3; i++ {
		res, err := c.Consume(ctx, "orders", client.ConsumeOptions{Max: 100})
		if err != nil {
			t.Fatalf("consume: %v", err)
		}
		if len(res.Messages) != 1 {
			t.Fatalf("an older node answered %d messages", len(res.Messages))
		}
		m := res.Messages[0]
		k, ok, err := m.KeyBytes()
		if err != nil || !ok || string(k) != key || m.KeyEncoding != "base64" {
			t.Errorf("Go-quoted key decoded as %q (%s), %v, %v", k, m.KeyEncoding, ok, err)
		}
		hs = append(hs, m.ReceiptHandle)
	}
	ackAll(t, ctx, c, "orders", hs)
	want := []client.FallbackEvent{{Op: client.OpConsume, Fallback: client.FallbackConsumeSingle},
		{Op: client.OpAck, Fallback: client.FallbackSettleSingles}}
	if got := log.Snapshot().Fallbacks; !slices.Equal(got, want) {
		t.Errorf("fallbacks %+v, want one per fallback", got)
	}
}

func TestBrokerAuth(t *testing.T) {
	b := startBroker(t, devbroker.Config{
		Topics: []devbroker.TopicSpec{{Name: "orders"}},
		Users: []devbroker.User{{Name: "app", Password: "s3cret", Grants: []devbroker.Grant{
			{Action: "consume", Patterns: []string{"orders"}}, {Action: "produce", Patterns: []string{"orders"}}}}},
	})
	ctx := testCtx(t)
	var log client.EventLog
	bad := brokerClient(t, b, func(c *client.Config) { c.User, c.Password, c.Hooks = "app", "wrong", []client.Hook{&log} })
	if _, err := bad.Consume(ctx, "orders", client.ConsumeOptions{Max: 10}); client.StatusOf(err) != 401 {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := bad.Settle(ctx, "orders", client.Ack, []string{"a", "b", "c"}); client.StatusOf(err) != 401 {
		t.Errorf("wrong password, settle: %v", err)
	}
	if n := len(log.Snapshot().Answers); n != 2 {
		t.Errorf("%d requests with a wrong password, want 2:\n%s", n, log.String())
	}
	if strings.Contains(log.String(), "wrong") {
		t.Errorf("an event shows the password")
	}

	good := brokerClient(t, b, func(c *client.Config) { c.User, c.Password = "app", "s3cret" })
	if err := good.Produce(ctx, "orders", []byte("x"), client.ProduceOptions{}); err != nil {
		t.Errorf("produce: %v", err)
	}
	if _, err := good.CreateTopic(ctx, client.TopicSpec{Name: "other"}); client.StatusOf(err) != 403 {
		t.Errorf("create without grant: %v", err)
	}
}

func TestBrokerTopics(t *testing.T) {
	b := startBroker(t, devbroker.Config{})
	c := brokerClient(t, b)
	ctx := testCtx(t)
	if err := c.Ready(ctx); err != nil {
		t.Errorf("ready: %v", err)
	}
	for _, name := range []string{"b", "a", "c"} {
		if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: 4, VisibilityTimeoutMs: 5000}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	tp, err := c.CreateTopic(ctx, client.TopicSpec{Name: "a"})
	if client.StatusOf(err) != 409 {
		t.Errorf("create twice: %+v, %v", tp, err)
	}
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "..", Partitions: 3}); client.StatusOf(err) != 400 {
		t.Errorf("bad name: %v", err)
	}
	ts, err := c.ListTopics(ctx)
	if err != nil || len(ts) != 3 {
		t.Fatalf("list: %+v, %v", ts, err)
	}
	for _, tp := range ts {
		if tp.Partitions != 4 || tp.VisibilityTimeoutMs != 5000 {
			t.Errorf("topic %+v", tp)
		}
	}
	if err := c.DeleteTopic(ctx, "b"); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := c.Topic(ctx, "b"); client.StatusOf(err) != 404 {
		t.Errorf("deleted topic: %v", err)
	}
	if _, err := c.Consume(ctx, "b", client.ConsumeOptions{}); client.StatusOf(err) != 404 {
		t.Errorf("consume of a deleted topic: %v", err)
	}
	b.SetReady(false)
	if err := c.Ready(ctx); client.StatusOf(err) != 503 {
		t.Errorf("not ready: %v", err)
	}
}

// Many goroutines share one Client, as `sub -j` and `produce -j` do.
func TestBrokerConcurrentUse(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 8}}})
	c := brokerClient(t, b)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if err := c.Produce(ctx, "orders", []byte(`{"n":1}`), client.ProduceOptions{}); err != nil {
					t.Errorf("produce: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var hs []string
	for _, m := range consumeN(t, c, "orders", 400) {
		hs = append(hs, m.ReceiptHandle)
	}
	ackAll(t, ctx, c, "orders", hs)
}

func ptr(i int) *int { return &i }

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
