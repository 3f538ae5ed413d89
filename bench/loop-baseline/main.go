// Command loop-baseline is the baseline of the throughput goals (see bench/run): the
// least a Go program has to do to get the same work done through the HTTP API, with
// nothing of narad's. It runs as its own process, as narad does, so that both sides of
// a ratio pay for a process start.
//
//	loop-baseline produce URL TOPIC N J       # "1".."N" as single POSTs, J at a time
//	loop-baseline batch-drain URL TOPIC N [J] # J loops (1 unless given) of consume max=100, then batch ack
//	loop-baseline single-drain URL TOPIC N J  # J loops of a single consume and its ack
//
// A drain checks it took exactly N messages. Any failure exits 1 with one line on
// stderr: a figure from a run that did not do its work would be a lie.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 5 {
		fatalf("usage: loop-baseline produce|batch-drain|single-drain URL TOPIC N [J]")
	}
	mode, topic := os.Args[1], os.Args[3]
	n := atoi(os.Args[4])
	j := 1
	if len(os.Args) > 5 {
		j = atoi(os.Args[5])
	}
	l := &loop{base: os.Args[2] + "/v1/topics/" + url.PathEscape(topic), http: &http.Client{
		Timeout:   time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64},
	}}
	switch mode {
	case "produce":
		l.produce(n, j)
	case "batch-drain":
		l.batchDrain(n, j)
	case "single-drain":
		l.singleDrain(n, j)
	default:
		fatalf("unknown mode %q", mode)
	}
}

type loop struct {
	base string // the topic's URL
	http *http.Client
}

// do sends one request and returns the status and body; a transport error is fatal.
func (l *loop) do(method, path string, body []byte, header ...string) (int, []byte) {
	req, err := http.NewRequest(method, l.base+path, bytes.NewReader(body))
	if err != nil {
		fatalf("%v", err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := l.http.Do(req)
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

// produce sends "1".."n" as single POSTs, j at a time.
func (l *loop) produce(n, j int) {
	var next atomic.Int64
	inParallel(j, func() bool {
		i := next.Add(1)
		if i > int64(n) {
			return false
		}
		st, body := l.do(http.MethodPost, "/produce", []byte(strconv.FormatInt(i, 10)))
		if st != http.StatusAccepted {
			fatalf("produce: %d %s", st, body)
		}
		return true
	})
}

// inParallel runs j loops of step, each until step says there is no more.
func inParallel(j int, step func() (more bool)) {
	var wg sync.WaitGroup
	for range j {
		wg.Go(func() {
			for step() {
			}
		})
	}
	wg.Wait()
}

// batchDrain runs j loops that consume up to 100 and batch-ack what came, one request
// at a time each, until a consume finds nothing.
func (l *loop) batchDrain(want, j int) {
	var got atomic.Int64
	inParallel(j, func() bool {
		st, body := l.do(http.MethodGet, "/consume?max=100", nil, "X-Narad-Client", "bench")
		if st == http.StatusNoContent {
			return false
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
		if st, body := l.do(http.MethodPost, "/ack", ack, "Content-Type", "application/json"); st != http.StatusOK {
			fatalf("ack: %d %s", st, body)
		}
		got.Add(int64(len(handles)))
		return true
	})
	if int(got.Load()) != want {
		fatalf("drain took %d messages, want %d", got.Load(), want)
	}
}

// singleDrain runs j loops of a single consume and its ack, each until a consume finds
// nothing.
func (l *loop) singleDrain(want, j int) {
	var got atomic.Int64
	inParallel(j, func() bool {
		st, body := l.do(http.MethodGet, "/consume", nil)
		if st == http.StatusNoContent {
			return false
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
		if st, body := l.do(http.MethodPost, "/ack"+q, nil); st != http.StatusNoContent {
			fatalf("ack: %d %s", st, body)
		}
		got.Add(1)
		return true
	})
	if int(got.Load()) != want {
		fatalf("drain took %d messages, want %d", got.Load(), want)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		fatalf("not a positive count: %q", s)
	}
	return n
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loop-baseline: "+format+"\n", args...)
	os.Exit(1)
}
