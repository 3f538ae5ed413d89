package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/narad/narad/internal/textenc"
)

// What an answer may cost. A node decides how large its answers are, so a bad one
// (or a proxy, or a gzip bomb the transport unpacks) could otherwise make narad hold
// whatever it sends, once per request in flight. Three rules bound it:
//   - an answer whose Content-Length is over maxBody is refused before a byte of it
//     is read;
//   - an answer without one (chunked, or unpacked from gzip) is read in chunks and
//     cut as soon as it passes maxBody, so nothing is read twice its size or doubled
//     by a growing buffer;
//   - every answer being read at once shares one budget of maxBody bytes per Client:
//     twelve consumes in flight to a node that sends gigabytes cost maxBody in all,
//     not twelve times it. An answer of known length waits for its share (it holds
//     nothing while it waits); one of unknown length that finds the budget spent is
//     refused, since waiting while holding a share could wait forever.
//
// A consume's answer has a smaller cap of its own, from the API's limits: a message
// is at most 1 MiB, which its JSON encoding can make 6 MiB (a control character is
// six bytes as \u0001), so a single message's answer is cut at 8 MiB; a batch is at
// most 8 MiB by contract, and is cut at twice that. A node that keeps to the API
// then never meets the budget with fewer than four batches being read at once. Once read, an answer's bytes belong to the messages decoded from it: what
// the consumer holds is bounded by how many messages it takes, not here.

var errBodyTooLarge = errors.New("answer larger than 64 MiB")

// answerLimit is the most an answer may be, and what to call that limit.
type answerLimit struct {
	bytes int64
	what  string
}

var (
	anyAnswer    = answerLimit{maxBody, "64 MiB"}
	singleAnswer = answerLimit{8 << 20, "8 MiB, more than one message can take"}
	batchAnswer  = answerLimit{16 << 20, "16 MiB, twice what a batch may be"}
)

// tooLargeError is an answer refused for its size; it is errBodyTooLarge for
// errors.Is, and says which rule refused it.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string        { return e.msg }
func (e *tooLargeError) Is(target error) bool { return target == errBodyTooLarge }

// readBudget is the bytes that answers being read at once may hold together.
type readBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64         // 0 means maxBody, and a byte so one answer can be read one past it
	freed chan struct{} // closed (and replaced) when bytes are given back
}

func (b *readBudget) max() int64 {
	if b.limit > 0 {
		return b.limit
	}
	return maxBody + 1
}

// take reserves n bytes if they are free, without waiting.
func (b *readBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max() {
		return false
	}
	b.used += n
	return true
}

// wait reserves n bytes (at most the limit), waiting for other reads to give theirs
// back; only ctx ends the wait.
func (b *readBudget) wait(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.max() {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *readBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// firstChunks are the first chunk of answers of unknown length: most are a few KiB,
// and the pool saves allocating one per answer.
const firstChunk = 32 << 10

var firstChunks = sync.Pool{New: func() any { b := make([]byte, firstChunk); return &b }}

// maxChunk is the largest chunk an answer of unknown length is read in: chunks grow
// from firstChunk by doubling up to it, so a large answer takes few chunks and the
// last one wastes at most this much.
const maxChunk = 1 << 20

// readBody reads an answer whole into a slice of exactly its size, within the rules
// above; an answer over them is an error that is errBodyTooLarge.
func readBody(resp *http.Response, budget *readBudget, limit answerLimit) ([]byte, error) {
	if limit.bytes == 0 {
		limit = anyAnswer
	}
	ctx := context.Background()
	if resp.Request != nil {
		ctx = resp.Request.Context()
	}
	if n := resp.ContentLength; n >= 0 {
		if n > limit.bytes {
			return nil, &tooLargeError{fmt.Sprintf("answer of %s bytes is larger than %s", textenc.GroupDigits(n), limit.what)}
		}
		if n > budget.max() {
			return nil, &tooLargeError{fmt.Sprintf("answer of %s bytes is larger than the %s bytes answers may hold",
				textenc.GroupDigits(n), textenc.GroupDigits(budget.max()))}
		}
		if err := budget.wait(ctx, n); err != nil {
			return nil, err
		}
		defer budget.give(n)
		b := make([]byte, n)
		read, err := io.ReadFull(resp.Body, b)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // nothing at all of what was announced
		}
		return b[:read], err
	}

	first := firstChunks.Get().(*[]byte)
	defer firstChunks.Put(first)
	var (
		chunks [][]byte
		held   int64 // reserved from the budget
		total  int
	)
	defer func() { budget.give(held) }()
	// One byte past the cap tells an answer that is too large from one that fits.
	body := io.LimitReader(resp.Body, limit.bytes+1)
	for size := firstChunk; ; size = min(2*size, maxChunk) {
		size = int(min(int64(size), limit.bytes+1-int64(total)))
		if !budget.take(int64(size)) {
			return nil, &tooLargeError{fmt.Sprintf(
				"answer cut at %s bytes: answers being read at once may hold %s bytes together",
				textenc.GroupDigits(int64(total)), textenc.GroupDigits(budget.max()))}
		}
		held += int64(size)
		var c []byte
		if chunks == nil {
			c = *first
		} else {
			c = make([]byte, size)
		}
		n, err := io.ReadFull(body, c)
		chunks = append(chunks, c[:n])
		total += n
		if int64(total) > limit.bytes {
			return nil, &tooLargeError{"answer larger than " + limit.what}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break // the end of the answer, which has no length to fall short of
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, nil
}
