package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The raw loops are the baselines of the throughput goals: the least a Go program
// has to do to get the same work done through the HTTP API, with nothing of narad's.

// do sends one request and returns the status and body; a transport error is fatal.
func (k *broker) do(method, path string, body []byte, header ...string) (int, []byte) {
	req, err := http.NewRequest(method, k.url+path, bytes.NewReader(body))
	if err != nil {
		fatalf("%v", err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := k.http.Do(req)
	if err != nil {
		fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, b
}

func topicPath(topic, rest string) string { return "/v1/topics/" + url.PathEscape(topic) + rest }

// rawProduce sends "1".."n" as single POSTs, j at a time: the produce goal's
// baseline, and how the other goals fill their topics.
func (k *broker) rawProduce(topic string, n, j int) time.Duration {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range j {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				st, body := k.do(http.MethodPost, topicPath(topic, "/produce"), []byte(strconv.FormatInt(i, 10)))
				if st != http.StatusAccepted {
					fatalf("produce: %d %s", st, body)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// rawBatchDrain is the drain goal's baseline: a batch consume of up to 100, then a
// batch ack of what came, one request at a time, until a consume finds nothing.
func (k *broker) rawBatchDrain(topic string, want int) time.Duration {
	start := time.Now()
	got := 0
	for {
		st, body := k.do(http.MethodGet, topicPath(topic, "/consume?max=100"), nil, "X-Narad-Client", "bench")
		if st == http.StatusNoContent {
			break
		}
		if st != http.StatusOK {
			fatalf("consume: %d %s", st, body)
		}
		var batch struct {
			Messages []struct {
				ReceiptHandle string `json:"receipt_handle"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &batch); err != nil {
			fatalf("consume: %v", err)
		}
		handles := make([]string, len(batch.Messages))
		for i, m := range batch.Messages {
			handles[i] = m.ReceiptHandle
		}
		ack, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
		if st, body := k.do(http.MethodPost, topicPath(topic, "/ack"), ack, "Content-Type", "application/json"); st != http.StatusOK {
			fatalf("ack: %d %s", st, body)
		}
		got += len(handles)
	}
	d := time.Since(start)
	if got != want {
		fatalf("raw drain took %d messages, want %d", got, want)
	}
	return d
}

// rawSingleDrain is the older-node goal's baseline: j loops of a single consume and
// its ack, each until a consume finds nothing.
func (k *broker) rawSingleDrain(topic string, want, j int) time.Duration {
	start := time.Now()
	var got atomic.Int64
	var wg sync.WaitGroup
	for range j {
		wg.Go(func() {
			for {
				st, body := k.do(http.MethodGet, topicPath(topic, "/consume"), nil)
				if st == http.StatusNoContent {
					return
				}
				if st != http.StatusOK {
					fatalf("consume: %d %s", st, body)
				}
				var m struct {
					ReceiptHandle string `json:"receipt_handle"`
				}
				if err := json.Unmarshal(body, &m); err != nil {
					fatalf("consume: %v", err)
				}
				q := "?receipt_handle=" + url.QueryEscape(m.ReceiptHandle)
				if st, body := k.do(http.MethodPost, topicPath(topic, "/ack")+q, nil); st != http.StatusNoContent {
					fatalf("ack: %d %s", st, body)
				}
				got.Add(1)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if int(got.Load()) != want {
		fatalf("raw drain took %d messages, want %d", got.Load(), want)
	}
	return d
}
