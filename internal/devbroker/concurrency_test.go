package devbroker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flowClient is a minimal client for the concurrent tests and the benchmarks, which run
// in goroutines and so cannot use the harness (it calls t.Fatal).
type flowClient struct {
	c   *http.Client
	url string
}

func newFlowClient(b *Broker) *flowClient {
	return &flowClient{c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}, url: b.URL()}
}

func (f *flowClient) do(method, path string, body []byte, batch bool) (int, []byte, error) {
	req, err := http.NewRequest(method, f.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if batch {
		req.Header.Set("X-Narad-Client", "test")
	}
	res, err := f.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, data, err
}

// consumeBatch takes up to max messages; none on 204.
func (f *flowClient) consumeBatch(topic string, max int, wait string) ([]msg, error) {
	body, err := f.consume(fmt.Sprintf("/v1/topics/%s/consume?max=%d&wait=%s", topic, max, wait), true)
	if body == nil || err != nil {
		return nil, err
	}
	var out struct{ Messages []msg }
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	return out.Messages, nil
}

func (f *flowClient) consumeOne(topic, wait string) ([]msg, error) {
	body, err := f.consume("/v1/topics/"+topic+"/consume?wait="+wait, false)
	if body == nil || err != nil {
		return nil, err
	}
	var m msg
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	return []msg{m}, nil
}

// consume sends a consume and returns the answer's body: nil when it was 204, an
// error for any other status but 200.
func (f *flowClient) consume(path string, batch bool) ([]byte, error) {
	st, body, err := f.do("GET", path, nil, batch)
	switch {
	case err != nil:
		return nil, err
	case st == 204:
		return nil, nil
	case st != 200:
		return nil, fmt.Errorf("consume: %d %s", st, body)
	}
	return body, nil
}

// settle sends the handles in one batch ack and returns each handle's status.
func (f *flowClient) settle(topic, extend string, hs []string) ([]int, error) {
	body, _ := json.Marshal(map[string][]string{"receipt_handles": hs})
	path := "/v1/topics/" + topic + "/ack"
	if extend != "" {
		path += "?extend=" + extend
	}
	st, data, err := f.do("POST", path, body, false)
	if err != nil {
		return nil, err
	}
	if st != 200 {
		return nil, fmt.Errorf("batch ack: %d %s", st, data)
	}
	var out struct{ Results []ackResult }
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	codes := make([]int, len(out.Results))
	for i, r := range out.Results {
		codes[i] = r.Status
	}
	return codes, nil
}

func (f *flowClient) settleOne(topic, extend, h string) (int, error) {
	path := "/v1/topics/" + topic + "/ack?receipt_handle=" + h
	if extend != "" {
		path += "&extend=" + extend
	}
	st, _, err := f.do("POST", path, nil, false)
	return st, err
}

// Point 11: 32 concurrent clients (producers, consumers that ack, extend and nack, single
// and batch, and observers) under the race detector: every message is acked exactly once
// and nothing is left in flight.
func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	const (
		producers = 8
		consumers = 22
		observers = 2
		perProd   = 150
		total     = producers * perProd
	)
	b, err := Start(Config{Topics: []TopicSpec{{Name: "orders", Partitions: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fc := newFlowClient(b)

	var acked atomic.Int64
	var mu sync.Mutex
	ackedIDs := map[int]int{}
	recordAck := func(m msg) {
		var p struct{ ID int }
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Errorf("payload %s: %v", m.Payload, err)
			return
		}
		mu.Lock()
		ackedIDs[p.ID]++
		mu.Unlock()
		acked.Add(1)
	}
	deadline := time.Now().Add(40 * time.Second)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Go(func() {
			for i := 0; i < perProd; i++ {
				id := p*perProd + i
				q := ""
				switch id % 3 {
				case 1:
					q = fmt.Sprintf("?key=k%d", id%17)
				case 2:
					q = fmt.Sprintf("?partition=%d", id%5)
				}
				st, body, err := fc.do("POST", "/v1/topics/orders/produce"+q, fmt.Appendf(nil, `{"id":%d}`, id), false)
				if err != nil || st != 202 {
					t.Errorf("produce %d: %d %s %v", id, st, body, err)
					return
				}
			}
		})
	}
	for c := 0; c < consumers; c++ {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for acked.Load() < total && time.Now().Before(deadline) {
				var ms []msg
				var err error
				if c%2 == 0 {
					ms, err = fc.consumeBatch("orders", 1+rng.IntN(20), "100ms")
				} else {
					ms, err = fc.consumeOne("orders", "100ms")
				}
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				var toAck []msg
				for _, m := range ms {
					switch rng.IntN(10) {
					case 0: // give it back
						if st, err := fc.settleOne("orders", "0", m.ReceiptHandle); err != nil || st != 204 {
							t.Errorf("nack: %d %v", st, err)
						}
						continue
					case 1: // extend, then ack
						if st, err := fc.settleOne("orders", "true", m.ReceiptHandle); err != nil || st != 204 {
							t.Errorf("extend: %d %v", st, err)
						}
					}
					toAck = append(toAck, m)
				}
				if len(toAck) == 0 {
					continue
				}
				if rng.IntN(2) == 0 {
					codes, err := fc.settle("orders", "", handles(toAck))
					if err != nil {
						t.Errorf("batch ack: %v", err)
						return
					}
					for i, code := range codes {
						if code != 204 {
							t.Errorf("batch ack result %d", code)
						} else {
							recordAck(toAck[i])
						}
					}
				} else {
					for _, m := range toAck {
						if st, err := fc.settleOne("orders", "", m.ReceiptHandle); err != nil || st != 204 {
							t.Errorf("ack: %d %v", st, err)
						} else {
							recordAck(m)
						}
					}
				}
			}
		})
	}
	for o := 0; o < observers; o++ {
		wg.Go(func() {
			for acked.Load() < total && time.Now().Before(deadline) {
				if o == 0 {
					if st, body, err := fc.do("GET", "/v1/topics/orders", nil, false); err != nil || st != 200 {
						t.Errorf("info: %d %s %v", st, body, err)
						return
					}
				} else {
					if st, _, err := fc.do("GET", "/v1/topics/orders/consume?partition=1&offset=0", nil, false); err != nil || (st != 200 && st != 204) {
						t.Errorf("replay: %d %v", st, err)
						return
					}
					if _, err := b.Stats("orders"); err != nil {
						t.Error(err)
						return
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := acked.Load(); n != total {
		t.Fatalf("acked %d of %d before the deadline", n, total)
	}
	for id := 0; id < total; id++ {
		if ackedIDs[id] != 1 {
			t.Fatalf("message %d acked %d times", id, ackedIDs[id])
		}
	}
	st, _ := b.Stats("orders")
	if st.Acked() != total || st.InFlight() != 0 || st.Available() != 0 {
		t.Fatalf("left on the broker: acked %d, in flight %d, available %d", st.Acked(), st.InFlight(), st.Available())
	}
}
