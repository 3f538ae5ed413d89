// Package bench holds the side-by-side measurements of the performance goals: narad against a raw Go
// loop doing the same work the plainest way, in the same run, on the same dev broker.
//
//	go test ./bench -run '^$' -bench Produce -benchtime 4x
//
// Each run starts a fresh in-process dev broker, so the two loops meet the same node;
// the ratio of their msgs/s is the figure (the absolute rates depend on the machine and
// its load).
package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/internal/cli"
	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

const (
	produceLines = 100_000
	produceJ     = 8
)

// input is 100,000 lines of a typical size (a short record), as lines for the raw loop
// and as the bytes of stdin for narad.
type input struct {
	lines []string
	stdin []byte
}

func newInput() *input {
	in := &input{lines: make([]string, produceLines)}
	for i := range in.lines {
		in.lines[i] = fmt.Sprintf(`order-%06d,customer-%d,4999`, i, i%50)
	}
	in.stdin = []byte(strings.Join(in.lines, "\n") + "\n")
	return in
}

// BenchmarkProduce is `narad produce t --lines -j 8` of 100,000 lines against the
// baseline, a raw loop of single POSTs at the same concurrency, taking turns (which
// goes first alternates) so that both meet the same load on a shared machine. It
// reports each one's msgs/s over all iterations and their ratio (the goal is >= 5).
func BenchmarkProduce(b *testing.B) {
	in := newInput()
	var raw, narad time.Duration
	for i := range b.N {
		if i%2 == 0 {
			raw += timeProduce(b, in, produceRaw)
			narad += timeProduce(b, in, produceNarad)
		} else {
			narad += timeProduce(b, in, produceNarad)
			raw += timeProduce(b, in, produceRaw)
		}
	}
	n := float64(produceLines * b.N)
	b.ReportMetric(n/raw.Seconds(), "raw-msgs/s")
	b.ReportMetric(n/narad.Seconds(), "narad-msgs/s")
	b.ReportMetric(raw.Seconds()/narad.Seconds(), "ratio")
}

// timeProduce runs produce against a fresh broker and checks that the node holds every
// line; only the produce is timed.
func timeProduce(b *testing.B, in *input, produce func(b *testing.B, url string, in *input)) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	br, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	b.StartTimer()
	start := time.Now()
	produce(b, br.URL(), in)
	d := time.Since(start)
	b.StopTimer()
	if st, _ := br.Stats("t"); st.Messages() != produceLines {
		b.Fatalf("the node holds %d of %d", st.Messages(), produceLines)
	}
	return d
}

// produceRaw is the baseline: produceJ goroutines POSTing one message per request with
// net/http, nothing else.
func produceRaw(b *testing.B, url string, in *input) {
	tr := &http.Transport{MaxIdleConnsPerHost: produceJ}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range produceJ {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(in.lines)) {
					return
				}
				resp, err := c.Post(url+"/v1/topics/t/produce", "application/octet-stream", strings.NewReader(in.lines[i]))
				if err != nil {
					failed.Store(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					failed.Store(fmt.Errorf("status %d", resp.StatusCode))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// produceNarad is `narad produce t --lines -j 8` reading the same lines from stdin: the
// whole command, in process.
func produceNarad(b *testing.B, url string, in *input) {
	ios, _, _, errOut := iostreams.Test()
	ios.In = bytes.NewReader(in.stdin)
	env := map[string]string{"NARAD_CONFIG": filepath.Join(b.TempDir(), "config.yaml")}
	f := &cli.Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: cli.NewSignals()}
	if code := cli.Run(f, []string{"produce", "t", "--lines", "-j", fmt.Sprint(produceJ), "-s", url}); code != 0 {
		b.Fatalf("exit %d: %s", code, errOut)
	}
}
