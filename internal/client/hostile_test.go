package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/narad/narad/internal/textenc"
)

// A node that answers too much: whatever it sends, and however many consumes are in
// flight, what narad allocates to read the answers stays within twice the cap in all.
// TotalAlloc is what the process allocated, so it bounds the peak from above
// whatever the garbage collector did meanwhile.

const hostileSize = 200_000_000 // the answer a bad node sends: three times the cap

// hostileAnswer writes size bytes of one message whose payload never ends: a batch
// or the single shape, with a Content-Length or chunked. It stops when the client
// hangs up.
func hostileAnswer(w http.ResponseWriter, batch, withLength bool, size int) {
	head := `{"topic":"t","partition":0,"offset":0,"receipt_handle":"0:0:1","payload":"`
	if batch {
		head = `{"messages":[` + head
	}
	w.Header().Set("Content-Type", "application/json")
	if withLength {
		w.Header().Set("Content-Length", strconv.Itoa(size))
	}
	w.WriteHeader(200)
	io.WriteString(w, head)
	chunk := bytes.Repeat([]byte("A"), 256<<10)
	for sent := len(head); sent < size; sent += len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
			return
		}
	}
}

// barrier lets the handler answer only once n requests are in flight, so that the
// client is reading all of them at once.
type barrier struct {
	mu   sync.Mutex
	n    int
	all  chan struct{}
	seen int
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) arrive() {
	b.mu.Lock()
	b.seen++
	if b.seen == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	<-b.all
}

// allocatedBy is how many bytes f allocated, the server's share included.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// consumeAll runs n consumes at once and returns their errors.
func consumeAll(t *testing.T, c *Client, n, max int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Consume(ctxT(t), "t", ConsumeOptions{Max: max})
		}()
	}
	wg.Wait()
	return errs
}

func TestHostileAnswersCostAtMostTwiceTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("reads several hundred MiB over loopback")
	}
	gzipBomb := func() []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write([]byte(`{"messages":[{"topic":"t","payload":"`))
		zeros := bytes.Repeat([]byte("0"), 1<<20)
		for range 100 {
			zw.Write(zeros)
		}
		zw.Close()
		return b.Bytes()
	}()
	for _, c := range []struct {
		name     string
		inFlight int
		max      int // 0: the single shape, as an older node answers
		answer   func(w http.ResponseWriter)
	}{
		{"an answer of 200 MB with its length", 1, 10, func(w http.ResponseWriter) {
			hostileAnswer(w, true, true, hostileSize)
		}},
		{"an answer of 200 MB without a length", 1, 10, func(w http.ResponseWriter) {
			hostileAnswer(w, true, false, hostileSize)
		}},
		{"two batch consumes in flight", 2, 100, func(w http.ResponseWriter) {
			hostileAnswer(w, true, false, hostileSize)
		}},
		{"twelve consumes in flight to an older node", 12, 0, func(w http.ResponseWriter) {
			hostileAnswer(w, false, false, hostileSize)
		}},
		{"a gzip bomb of 100 MB", 1, 10, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", strconv.Itoa(len(gzipBomb)))
			w.Write(gzipBomb)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBarrier(c.inFlight)
			n := newNode(t, func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
				b.arrive()
				c.answer(w)
			})
			cl, _ := newClient(t, n.URL)
			var errs []error
			got := allocatedBy(func() { errs = consumeAll(t, cl, c.inFlight, c.max) })
			tooLarge := 0
			for _, err := range errs {
				if errors.Is(err, errBodyTooLarge) {
					tooLarge++
				}
			}
			// Every answer is over the cap: at least one is refused for its size (the
			// others may end as cut short when the client hangs up on them).
			if tooLarge == 0 {
				t.Errorf("no answer refused for its size: %v", errs)
			}
			if limit := uint64(2 * maxBody); got > limit {
				t.Errorf("allocated %s bytes reading %d answers; want at most %s", textenc.GroupDigits(int64(got)),
					c.inFlight, textenc.GroupDigits(int64(limit)))
			}
			t.Logf("allocated %s bytes; errors %v", textenc.GroupDigits(int64(got)), errs[0])
		})
	}
}

// refusedURL is a loopback address nothing listens on.
func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// A node never reached is what an error says when a deadline (--timeout) or a stop
// ends the retries, not that time ran out: the address is wrong or the node down.
func TestNeverReachedIsTheErrorWhenTheDeadlineEndsTheRetries(t *testing.T) {
	for _, c := range []struct {
		name string
		call func(c *Client, ctx context.Context) error
	}{
		{"consume", func(c *Client, ctx context.Context) error {
			_, err := c.Consume(ctx, "t", ConsumeOptions{Max: 10})
			return err
		}},
		{"topic", func(c *Client, ctx context.Context) error { _, err := c.Topic(ctx, "t"); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cl, sl := newClient(t, refusedURL(t))
			sl.onCall = func(int) { cancel() } // the deadline passes during the first backoff
			err := c.call(cl, ctx)
			if errors.Is(err, context.Canceled) || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("error %v; want the refused connection", err)
			}
			if c.name == "consume" && !IsUnreachable(err) {
				t.Errorf("error %v is not IsUnreachable", err)
			}
		})
	}
}

// The same when the deadline passes during a later attempt rather than a backoff: the
// attempt's error is then the deadline's own, and the attempts before it said why.
// status --wait-empty --timeout at a wrong address exited 3 (not drained in time)
// instead of 1 (cannot reach) when the timeout came mid-attempt on a loaded machine.
func TestNeverReachedIsTheErrorWhenTheDeadlineCutsAnAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var calls atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			return tr.RoundTrip(req) // refused
		}
		cancel() // the deadline passes while this attempt is on its way
		<-req.Context().Done()
		return nil, req.Context().Err()
	})}
	cl, _ := newClient(t, refusedURL(t), func(c *Config) { c.HTTPClient = hc })
	_, err := cl.Topic(ctx, "t")
	if calls.Load() < 2 {
		t.Fatalf("%d attempts, want the deadline to cut the second", calls.Load())
	}
	if errors.Is(err, context.Canceled) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v; want the refused connection", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// --ca-cert is read only if it is a regular file of at most 1 MiB: /dev/zero would be
// read until memory ran out.
func TestCACertMustBeARegularFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/zero")
	}
	_, err := New(Config{BaseURL: "https://127.0.0.1:1", CACertFile: "/dev/zero"})
	if err == nil || !strings.Contains(err.Error(), "/dev/zero is not a regular file") {
		t.Errorf("error %v; want it refused", err)
	}
}
