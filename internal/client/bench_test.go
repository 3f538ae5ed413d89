package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// benchBatchBody is a 100-message batch answer as a v3.1 node writes it: JSON payloads,
// text, a key on every other message.
func benchBatchBody() []byte {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		payload := fmt.Sprintf(`{"order_id":"ord_%d","amount":%d,"items":["a","b"]}`, i, 1000+i)
		if i%3 == 0 {
			payload = fmt.Sprintf(`"line %d of the log"`, i)
		}
		key := ""
		if i%2 == 0 {
			key = fmt.Sprintf(`"key":"customer-%d",`, i%7)
		}
		fmt.Fprintf(&b, `{"topic":"orders","partition":%d,"offset":%d,%s"payload":%s,"timestamp":1790623277,"receipt_handle":"%d:%d:3327358780392153864"}`,
			i%4, 1000+i, key, payload, i%4, 1000+i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkConsumeBatch is a whole 100-message consume against a local server: the
// request, the body read and the decode.
func BenchmarkConsumeBatch(b *testing.B) {
	body := benchBatchBody()
	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				}
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Consume(context.Background(), "orders", ConsumeOptions{Max: 100})
				if err != nil || len(res.Messages) != 100 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAckEncode is what a batch ack of 100 handles costs before it is sent:
// cutting the handles into batches within the API's limits, and each batch's body.
func BenchmarkAckEncode(b *testing.B) {
	s := &settleCall{res: make([]SettleResult, 100)}
	pending := make([]int, 100)
	for i := range pending {
		pending[i] = i
		s.res[i].Handle = fmt.Sprintf("%d:%d:3327358780392153864", i%4, 1000+i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, job := range s.chunks(pending) {
			if body := s.ackBody(job); len(body) == 0 {
				b.Fatal("empty body")
			}
		}
	}
}

// singleMessageNode is a local server that answers every consume with one message in
// the shape of a node older than v3.1, and every ack with 204.
func singleMessageNode(b *testing.B) *httptest.Server {
	msg := []byte(`{"topic":"orders","partition":1,"offset":7,"payload":"7","timestamp":1790623277,"receipt_handle":"1:7:3327358780392153864"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(msg)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkSingleConsumeAck is one message from a node older than v3.1: a consume in
// the single-message shape and its ack, each a request of its own, against a local
// server. What the client spends per request shows here.
func BenchmarkSingleConsumeAck(b *testing.B) {
	srv := singleMessageNode(b)
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	c.legacySettle.Store(true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Consume(ctx, "orders", ConsumeOptions{Max: 1})
		if err != nil || len(res.Messages) != 1 {
			b.Fatal(err)
		}
		if _, err := c.Settle(ctx, "orders", Ack, []string{res.Messages[0].ReceiptHandle}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSingleConsumeAckRawHTTP is BenchmarkSingleConsumeAck done as bench/run's
// older-node baseline does it, with nothing of the client's: what the client layer
// costs a message on an older node is the difference.
func BenchmarkSingleConsumeAckRawHTTP(b *testing.B) {
	srv := singleMessageNode(b)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	do := func(method, u string) []byte {
		req, err := http.NewRequest(method, u, bytes.NewReader(nil))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		return body
	}
	base := srv.URL + "/v1/topics/orders"
	b.ReportAllocs()
	for b.Loop() {
		var m struct {
			ReceiptHandle string `json:"receipt_handle"`
		}
		if err := json.Unmarshal(do(http.MethodGet, base+"/consume"), &m); err != nil {
			b.Fatal(err)
		}
		do(http.MethodPost, base+"/ack?receipt_handle="+url.QueryEscape(m.ReceiptHandle))
	}
}
