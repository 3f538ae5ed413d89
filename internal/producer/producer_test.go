package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/narad/narad/internal/client"
)

// fakeClient records what was sent and answers with answer (nil: accepted).
type fakeClient struct {
	mu      sync.Mutex
	batches [][]string // payloads of each ProduceBatch call, refused ones included
	singles []string
	stored  []string // what an accepting node would hold, in order
	// answer decides each call: batch is nil for a single produce.
	answer func(ctx context.Context, batch []client.ProduceMessage, single []byte) error
}

func (f *fakeClient) ProduceBatch(ctx context.Context, topic string, msgs []client.ProduceMessage) error {
	var ps []string
	for _, m := range msgs {
		ps = append(ps, string(m.Payload))
	}
	f.mu.Lock()
	f.batches = append(f.batches, ps)
	f.mu.Unlock()
	var err error
	if f.answer != nil {
		err = f.answer(ctx, msgs, nil)
	}
	if err == nil {
		f.mu.Lock()
		f.stored = append(f.stored, ps...)
		f.mu.Unlock()
	}
	return err
}

func (f *fakeClient) Produce(ctx context.Context, topic string, body []byte, o client.ProduceOptions) error {
	f.mu.Lock()
	f.singles = append(f.singles, string(body))
	f.mu.Unlock()
	var err error
	if f.answer != nil {
		err = f.answer(ctx, nil, body)
	}
	if err == nil {
		f.mu.Lock()
		f.stored = append(f.stored, string(body))
		f.mu.Unlock()
	}
	return err
}

func (f *fakeClient) snapshot() (batches [][]string, singles, stored []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches), slices.Clone(f.singles), slices.Clone(f.stored)
}

// first is the first payload of a request: a batch's, or a single produce's.
func first(batch []client.ProduceMessage, single []byte) string {
	if batch == nil {
		return string(single)
	}
	return string(batch[0].Payload)
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// failures collects OnFailure reports as "pos status err".
type failures struct {
	mu  sync.Mutex
	got []string
}

func (fs *failures) add(f Failure) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.got = append(fs.got, fmt.Sprintf("%d %d %v", f.Record.Pos, f.Status, f.Err))
}

func (fs *failures) list() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.got)
}

// With -j 1 the messages go in input order, in batches of at most 100.
func TestBatchesInOrder(t *testing.T) {
	fc := &fakeClient{}
	res := Run(context.Background(), fc, Lines(strings.NewReader(numbered(250))), Options{Topic: "t"})
	batches, singles, stored := fc.snapshot()
	if res.Produced != 250 || res.Failed+res.Unknown != 0 || res.Fatal != nil || res.Stopped || res.Bytes != int64(len(numbered(250))-250) {
		t.Fatalf("result %+v", res)
	}
	want := strings.Fields(numbered(250))
	if !slices.Equal(stored, want) || len(singles) != 0 {
		t.Errorf("stored out of order or singly (%d singles): %v", len(singles), stored)
	}
	for _, b := range batches {
		if len(b) > client.MaxProduceBatch {
			t.Errorf("a batch of %d", len(b))
		}
	}
	if len(batches) < 3 {
		t.Errorf("%d batches for 250 messages", len(batches))
	}
	if res.Resume != 251 || res.Taken != 250 {
		t.Errorf("resume %d after %d taken", res.Resume, res.Taken)
	}
}

// A batch is cut before its body could pass 1 MiB; a message too large for any batch
// goes on its own.
func TestBatchBytes(t *testing.T) {
	fc := &fakeClient{}
	big := strings.Repeat("x", 300<<10)
	huge := strings.Repeat("y", 900<<10)
	res := Run(context.Background(), fc, Args([]string{big, big, big, huge, "small"}), Options{Topic: "t"})
	batches, singles, _ := fc.snapshot()
	if res.Produced != 5 {
		t.Fatalf("result %+v", res)
	}
	for _, b := range batches {
		var msgs []client.ProduceMessage
		for _, p := range b {
			msgs = append(msgs, client.ProduceMessage{Payload: []byte(p)})
		}
		if n := len(client.AppendProduceBatch(nil, msgs)); n > client.MaxProduceBatchBody {
			t.Errorf("a batch body of %d bytes", n)
		}
	}
	if !slices.Contains(singles, huge) {
		t.Errorf("the message too large for a batch did not go on its own")
	}
	for _, b := range batches {
		if slices.Contains(b, huge) {
			t.Errorf("the message too large for a batch went in one")
		}
	}
}

// A refused message is reported by its position, once for all its copies (each
// counted); the rest of its batch is sent again and stored once.
func TestBatchRefusal(t *testing.T) {
	fc := &fakeClient{}
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		for i, m := range batch {
			if string(m.Payload) == "bad" {
				return &client.BatchRefusal{Index: i, Err: &client.Error{Status: 413, Message: "message over 1048576 bytes"}}
			}
		}
		return nil
	}
	var fs failures
	res := Run(context.Background(), fc, Lines(strings.NewReader("a\nbad\nc\n")), Options{Topic: "t", Count: 2, OnFailure: fs.add})
	_, _, stored := fc.snapshot()
	if res.Produced != 4 || res.Failed != 2 || res.Unknown != 0 {
		t.Errorf("result %+v", res.Stats)
	}
	if want := []string{"a", "a", "c", "c"}; !slices.Equal(stored, want) {
		t.Errorf("stored %q, want %q", stored, want)
	}
	if got := fs.list(); len(got) != 1 || got[0] != "2 413 413 message over 1048576 bytes" {
		t.Errorf("reports %q", got)
	}
	if res.Resume != 4 {
		t.Errorf("resume at %d, want 4 (a reported line is done)", res.Resume)
	}
}

// A refusal that names no message: each message of the batch gets its own request.
func TestBatchRefusalWithoutIndex(t *testing.T) {
	fc := &fakeClient{}
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		switch {
		case batch != nil:
			return &client.Error{Status: 400, Message: "something in there"}
		case string(single) == "bad":
			return &client.Error{Status: 400, Message: "schema violation"}
		}
		return nil
	}
	var fs failures
	res := Run(context.Background(), fc, Args([]string{"a", "bad", "c"}), Options{Topic: "t", OnFailure: fs.add})
	if res.Produced != 2 || res.Failed != 1 || res.Fatal != nil {
		t.Errorf("result %+v", res)
	}
	if got := fs.list(); len(got) != 1 || !strings.HasPrefix(got[0], "2 400 ") {
		t.Errorf("reports %q", got)
	}
}

// A node without batch produce: one request per message from then on, in order.
func TestNoBatchProduce(t *testing.T) {
	fc := &fakeClient{}
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		if batch != nil {
			return client.ErrNoBatchProduce
		}
		return nil
	}
	res := Run(context.Background(), fc, Lines(strings.NewReader(numbered(300))), Options{Topic: "t"})
	batches, singles, stored := fc.snapshot()
	if res.Produced != 300 || len(singles) != 300 || !slices.Equal(stored, strings.Fields(numbered(300))) {
		t.Errorf("produced %d with %d singles, stored in order: %v", res.Produced, len(singles), slices.Equal(stored, strings.Fields(numbered(300))))
	}
	if len(batches) != 1 {
		t.Errorf("%d batch requests, want the one that found out", len(batches))
	}
}

// Bad input is reported and never sent; the others go.
func TestBadInput(t *testing.T) {
	fc := &fakeClient{}
	var fs failures
	res := Run(context.Background(), fc, JSONLines(strings.NewReader(`{"payload":1}`+"\nnot json\n"+`{"payload":2}`+"\n")), Options{Topic: "t", Count: 3, OnFailure: fs.add})
	_, _, stored := fc.snapshot()
	if res.Produced != 6 || res.Failed != 1 || len(stored) != 6 {
		t.Errorf("result %+v, stored %q", res.Stats, stored)
	}
	if got := fs.list(); len(got) != 1 || !strings.HasPrefix(got[0], "2 0 not a JSON message line") {
		t.Errorf("reports %q", got)
	}
}

// A fatal answer stops the run: nothing more is sent. A 4xx stored nothing; a 5xx
// after the client's retries may have, so those messages are unknown.
func TestFatal(t *testing.T) {
	for _, tt := range []struct {
		err     error
		unknown bool
	}{
		{&client.Error{Status: 401, Message: "authentication required"}, false},
		{&client.Error{Status: 404, Message: `topic "t" not found`}, false},
		// A redirect is not followed: the node pointed elsewhere and stored nothing.
		{&client.Error{Status: 307, Message: "redirect to http://other:7942/v1/topics/t/produce/batch"}, false},
		{&client.Error{Status: 503, Message: "owner unavailable"}, true},
		{fmt.Errorf("produce: %w", syscall.ECONNREFUSED), false},
		{errors.New("produce: connection reset"), true},
	} {
		fc := &fakeClient{}
		fc.answer = func(context.Context, []client.ProduceMessage, []byte) error { return tt.err }
		res := Run(context.Background(), fc, Lines(strings.NewReader(numbered(1000))), Options{Topic: "t", Concurrency: 4})
		batches, singles, _ := fc.snapshot()
		if res.Fatal != tt.err || res.Produced != 0 || res.Stopped || (res.Unknown > 0) != tt.unknown {
			t.Errorf("%v: result %+v", tt.err, res)
		}
		if n := len(batches) + len(singles); n > 4 {
			t.Errorf("%v: %d requests after a fatal answer, want at most one per worker", tt.err, n)
		}
		if res.Resume != 1 {
			t.Errorf("%v: resume at %d, want 1", tt.err, res.Resume)
		}
	}
}

// The soft stop: reading stops, every request out finishes, and the count is exact:
// the records taken are the ones stored, lines 1..N, and the resume point is N+1.
func TestStopFinishesWhatWasTaken(t *testing.T) {
	stop := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	fc := &fakeClient{}
	fc.answer = func(ctx context.Context, batch []client.ProduceMessage, single []byte) error {
		once.Do(func() { close(stop) }) // the signal arrives while the first request is out
		<-release
		return nil
	}
	done := make(chan Result, 1)
	go func() {
		done <- Run(context.Background(), fc, Lines(&endless{}), Options{Topic: "t", Concurrency: 8, Stop: stop})
	}()
	<-stop
	close(release)
	res := <-done
	_, _, stored := fc.snapshot()
	// A record taken but not yet in a batch at the stop may stay behind: it is where
	// the resume starts.
	if !res.Stopped || res.Unknown != 0 || res.Produced != int64(len(stored)) || res.Taken < res.Produced {
		t.Fatalf("result %+v with %d stored", res, len(stored))
	}
	for i, s := range slices.Sorted(slices.Values(numbers(stored))) {
		if s != i+1 {
			t.Fatalf("stored line %d where line %d was expected", s, i+1)
		}
	}
	if res.Resume != len(stored)+1 {
		t.Errorf("resume at %d after %d stored", res.Resume, len(stored))
	}
}

// The hard stop: the requests out are abandoned and their messages unknown; the
// resume point is the first line not known to be stored.
func TestCancelAbandons(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var held atomic.Int32
	fc := &fakeClient{}
	fc.answer = func(c context.Context, batch []client.ProduceMessage, single []byte) error {
		if first(batch, single) == "1" {
			return nil // the first batch went through
		}
		if held.Add(1) == 2 {
			cancel() // the second signal, while two requests are out
		}
		<-c.Done()
		return fmt.Errorf("produce: %w", c.Err())
	}
	res := Run(ctx, fc, Lines(&endless{}), Options{Topic: "t", Concurrency: 3})
	batches, singles, stored := fc.snapshot()
	if !res.Stopped || res.Produced != int64(len(stored)) || res.Unknown == 0 {
		t.Fatalf("result %+v", res)
	}
	var abandoned int64
	for _, b := range batches {
		if b[0] != "1" {
			abandoned += int64(len(b))
		}
	}
	for _, s := range singles {
		if s != "1" {
			abandoned++
		}
	}
	// A batch a worker had not sent yet when the stop came is neither: resuming sends it.
	if res.Unknown != abandoned || res.Resume != len(stored)+1 || res.UnknownFirst < res.Resume {
		t.Errorf("unknown %d (%d-%d), resume %d; want the %d abandoned, resuming from line %d", res.Unknown, res.UnknownFirst, res.UnknownLast, res.Resume, abandoned, len(stored)+1)
	}
}

// TestStoredPastResume: a batch abandoned by the second signal while a later one was
// answered 202: the result says the later lines were stored, so that resuming from the
// abandoned batch is known to send them again.
func TestStoredPastResume(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	laterStored := make(chan struct{})
	var once sync.Once
	fc := &fakeClient{}
	fc.answer = func(c context.Context, batch []client.ProduceMessage, single []byte) error {
		if first(batch, single) == "1" {
			<-laterStored // held until a later batch is in
			cancel()
			<-c.Done()
			return fmt.Errorf("produce: %w", c.Err())
		}
		select {
		case <-laterStored:
			<-c.Done() // everything after the first later batch is abandoned too
			return fmt.Errorf("produce: %w", c.Err())
		default:
		}
		once.Do(func() { close(laterStored) })
		return nil
	}
	res := Run(ctx, fc, Lines(&endless{}), Options{Topic: "t", Concurrency: 2})
	_, _, stored := fc.snapshot()
	if res.Resume != 1 || res.Unknown == 0 {
		t.Fatalf("resume %d, unknown %d: want the first batch abandoned", res.Resume, res.Unknown)
	}
	if len(stored) == 0 || res.StoredPastResume != int64(len(stored)) {
		t.Fatalf("stored past the resume point %d, the node holds %d", res.StoredPastResume, len(stored))
	}
	for _, line := range stored {
		n, _ := strconv.Atoi(line)
		if n < res.StoredFirst || n > res.StoredLast {
			t.Errorf("line %d stored, outside the reported %d-%d", n, res.StoredFirst, res.StoredLast)
		}
	}
}

// endless is the lines 1, 2, 3, ... for ever.
type endless struct {
	n   int
	buf []byte
}

func (e *endless) Read(p []byte) (int, error) {
	for len(e.buf) < len(p) {
		e.n++
		e.buf = fmt.Appendf(e.buf, "%d\n", e.n)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

func numbers(ss []string) []int {
	var out []int
	for _, s := range ss {
		var n int
		fmt.Sscan(s, &n)
		out = append(out, n)
	}
	return out
}
