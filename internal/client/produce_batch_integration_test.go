package client_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
)

// Through the dev broker, a batch stores exactly the bytes given: consumed back, each
// message decodes to its payload and key, whatever they were.
func TestBrokerProduceBatchRoundTrip(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}}})
	c := brokerClient(t, b)
	k := func(s string) *string { return &s }
	msgs := []client.ProduceMessage{
		{Key: k("customer-42"), Payload: []byte(`{"order_id": "ord_123",  "amount": 4999}`)},
		{Payload: []byte("hello world")},
		{Key: k("\xff\x01bin"), Payload: []byte{0x89, 'P', 'N', 'G', 0, 0xfe}},
		{Payload: []byte("  {\"wrapped\": true}\n")},
		{Payload: []byte(`[1, 2]`)},
	}
	for i := range msgs {
		msgs[i].Partition = ptr(2)
	}
	if err := c.ProduceBatch(testCtx(t), "orders", msgs); err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, c, "orders", len(msgs))
	for i, m := range got {
		p, err := m.PayloadBytes()
		if err != nil || !bytes.Equal(p, msgs[i].Payload) || m.Partition != 2 {
			t.Errorf("message %d: payload %q, %v in partition %d; want %q", i, p, err, m.Partition, msgs[i].Payload)
		}
		key, ok, _ := m.KeyBytes()
		if ok != (msgs[i].Key != nil) || (ok && string(key) != *msgs[i].Key) {
			t.Errorf("message %d: key %q %v", i, key, ok)
		}
	}
	resp, err := http.Get(b.URL() + "/v1/topics/orders/consume?partition=2&offset=3")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(raw, []byte(`"payload":  {"wrapped": true}`+"\n,")) {
		t.Errorf("replay %s: want the document stored with its whitespace", raw)
	}
}

// A refused message is named by its index, nothing is stored, and the rest goes on
// its own; a missing topic is the JSON 404, not the fallback.
func TestBrokerProduceBatchRefusal(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders"}}})
	c := brokerClient(t, b)
	msgs := []client.ProduceMessage{{Payload: []byte("a")}, {Payload: nil}, {Payload: []byte("c")}}
	err := c.ProduceBatch(testCtx(t), "orders", msgs)
	var br *client.BatchRefusal
	if !errors.As(err, &br) || br.Index != 1 || err.Error() != "produce: 400 message required" {
		t.Fatalf("err %v", err)
	}
	if st, _ := b.Stats("orders"); st.Messages() != 0 {
		t.Fatalf("%d stored by a refused batch", st.Messages())
	}
	if err := c.ProduceBatch(testCtx(t), "orders", append(msgs[:1:1], msgs[2])); err != nil {
		t.Fatal(err)
	}
	err = c.ProduceBatch(testCtx(t), "nope", msgs[:1])
	if client.StatusOf(err) != 404 || errors.Is(err, client.ErrNoBatchProduce) || !c.BatchProduce() {
		t.Fatalf("unknown topic: %v", err)
	}
}

// An older node (legacy mode) has no batch produce: the client learns it once.
func TestBrokerProduceBatchLegacy(t *testing.T) {
	b := startBroker(t, devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "orders"}}, Legacy: true})
	c := brokerClient(t, b)
	err := c.ProduceBatch(testCtx(t), "orders", []client.ProduceMessage{{Payload: []byte("a")}})
	if !errors.Is(err, client.ErrNoBatchProduce) || c.BatchProduce() {
		t.Fatalf("err %v", err)
	}
	if err := c.Produce(testCtx(t), "orders", []byte("a"), client.ProduceOptions{}); err != nil {
		t.Fatal(err)
	}
}
