//go:build unix

package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Where the flaky proxy cuts a request's connection.
const (
	cutNone   = ""
	cutBefore = "before"     // before the request reaches the node: it never happened
	cutAfter  = "after"      // after the node answered: it happened, the client cannot know
	cutMid    = "mid-answer" // part of the answer sent: it happened, the client sees a torn answer
)

// flakyProxy stands between narad and the broker on 127.0.0.1 and drops, with a
// probability each, a request's connection before the request, after the node processed
// it, or in the middle of its answer: the three places a real network loses a request.
// The last two are where duplicates come from, so it counts what each cut hid.
type flakyProxy struct {
	target string // the broker, host:port
	p      float64
	srv    *http.Server
	ln     net.Listener
	client *http.Client

	mu   sync.Mutex
	rnd  *rand.Rand
	cuts map[string]int // "cut op" → requests
	// cutHandles is, per "cut op", the receipt handles those requests carried (a batch
	// ack carries up to 100).
	cutHandles map[string]int
	// hidden counts the messages in consume answers the client never got whole: leased
	// by the node, they come back only when their lease runs out (a redelivery).
	hidden int
}

// startProxy forwards to target, cutting each request at each place with probability p.
func startProxy(t *testing.T, target string, p float64, rnd *rand.Rand) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp := &flakyProxy{
		target: target, p: p, ln: ln, rnd: rnd, cuts: map[string]int{}, cutHandles: map[string]int{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
	}
	fp.srv = &http.Server{Handler: fp, ReadHeaderTimeout: 10 * time.Second}
	go fp.srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		fp.srv.Shutdown(ctx)
		fp.srv.Close()
		fp.client.CloseIdleConnections()
	})
	return fp
}

// URL is where narad is pointed.
func (fp *flakyProxy) URL() string { return "http://" + fp.ln.Addr().String() }

func (fp *flakyProxy) roll() string {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	x := fp.rnd.Float64()
	switch {
	case x < fp.p:
		return cutBefore
	case x < 2*fp.p:
		return cutAfter
	case x < 3*fp.p:
		return cutMid
	}
	return cutNone
}

// opOf names a request for the counts: consume, ack, extend, nack, produce or other.
func opOf(r *http.Request) string {
	switch {
	case strings.HasSuffix(r.URL.Path, "/consume"):
		return "consume"
	case strings.HasSuffix(r.URL.Path, "/ack"):
		switch r.URL.Query().Get("extend") {
		case "true", "1":
			return "extend"
		case "0":
			return "nack"
		}
		return "ack"
	case strings.HasSuffix(r.URL.Path, "/produce"):
		return "produce"
	}
	return "other"
}

func (fp *flakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := opOf(r)
	reqBody, err := io.ReadAll(r.Body)
	if err != nil {
		abort(w, nil)
		return
	}
	handles := len(handlePattern.FindAll(reqBody, -1)) + len(handlePattern.FindAllString(r.URL.Query().Get("receipt_handle"), -1))
	cut := fp.roll()
	if cut == cutBefore {
		fp.count(cut, op, handles, 0)
		abort(w, nil)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+fp.target+r.URL.RequestURI(), bytes.NewReader(reqBody))
	if err != nil {
		abort(w, nil)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := fp.client.Do(req)
	if err != nil {
		abort(w, nil) // the client went away mid long-poll: nothing to answer
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		abort(w, nil)
		return
	}
	switch cut {
	case cutAfter:
		fp.count(cut, op, handles, bytes.Count(body, []byte(`"receipt_handle"`)))
		abort(w, nil)
	case cutMid:
		fp.count(cut, op, handles, bytes.Count(body, []byte(`"receipt_handle"`)))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		raw, _ := httputil.DumpResponse(resp, true)
		fp.mu.Lock()
		n := 1 + fp.rnd.IntN(max(len(raw)-1, 1))
		fp.mu.Unlock()
		abort(w, raw[:n])
	default:
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}
}

// handlePattern matches a receipt handle in a settlement's query or body.
var handlePattern = regexp.MustCompile(`[0-9]+:[0-9]+:[0-9]+`)

// count records a cut: sent is the handles the request carried, answered the messages
// its answer held.
func (fp *flakyProxy) count(cut, op string, sent, answered int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.cuts[cut+" "+op]++
	fp.cutHandles[cut+" "+op] += sent
	if op == "consume" {
		fp.hidden += answered
	}
}

// summary is the cuts made, e.g. "after ack 3, before consume 5", and the messages
// hidden in cut consume answers.
func (fp *flakyProxy) summary() (string, int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	var parts []string
	for k, n := range fp.cuts {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", "), fp.hidden
}

// handlesLanded is how many handles of op requests the node processed but whose answer
// the client never got whole.
func (fp *flakyProxy) handlesLanded(op string) int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.cutHandles[cutAfter+" "+op] + fp.cutHandles[cutMid+" "+op]
}

// abort ends the connection without an answer: a reset, as a dying node or a broken
// network gives. With partial (the start of a raw answer) it sends that and closes
// cleanly instead, since a reset could discard the torn answer before the client reads
// it.
func abort(w http.ResponseWriter, partial []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if len(partial) > 0 {
		writeFlush(buf, partial)
	} else if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

func writeFlush(buf *bufio.ReadWriter, p []byte) {
	buf.Write(p)
	buf.Flush()
}
