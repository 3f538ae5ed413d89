package client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// readBody returns the answer exactly, with a length or without (chunked), and a
// shortened one as an error.
func TestReadBody(t *testing.T) {
	long := strings.Repeat("0123456789", 10_000)
	for _, c := range []struct {
		name   string
		length int64
		body   string
		err    bool
	}{
		{"with length", int64(len(long)), long, false},
		{"chunked", -1, long, false},
		{"empty", 0, "", false},
		{"empty chunked", -1, "", false},
		{"shorter than its length", 10, "01234", true},
		{"nothing of its length", 10, "", true},
	} {
		got, err := readBody(&http.Response{ContentLength: c.length, Body: io.NopCloser(strings.NewReader(c.body))}, &readBudget{}, anyAnswer)
		if (err != nil) != c.err || string(got) != c.body {
			t.Errorf("%s: %d bytes, %v; want %d bytes, error %v", c.name, len(got), err, len(c.body), c.err)
		}
	}
}

// An answer read through the pool is the caller's own: the next read does not
// overwrite it.
func TestReadBodyResultIsNotShared(t *testing.T) {
	first, _ := readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(strings.NewReader("first answer"))}, &readBudget{}, anyAnswer)
	_, _ = readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(strings.NewReader("second answer"))}, &readBudget{}, anyAnswer)
	if !bytes.Equal(first, []byte("first answer")) {
		t.Errorf("first answer now reads %q", first)
	}
}

// A body over the limit is cut one byte past it, and one exactly at it is read.
func TestReadBodyStopsPastTheLimit(t *testing.T) {
	r := &countingReader{r: io.LimitReader(zeros{}, maxBody+100)}
	got, err := readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(r)}, &readBudget{}, anyAnswer)
	if !errors.Is(err, errBodyTooLarge) || got != nil || r.n != maxBody+1 {
		t.Errorf("%d bytes, %d read, %v; want an error after %d", len(got), r.n, err, maxBody+1)
	}
	got, err = readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(io.LimitReader(zeros{}, maxBody))}, &readBudget{}, anyAnswer)
	if err != nil || len(got) != maxBody {
		t.Errorf("%d bytes, %v; want %d", len(got), err, maxBody)
	}
}

// An answer whose length is over the limit is refused before any of it is read.
func TestReadBodyRefusesAtItsLength(t *testing.T) {
	r := &countingReader{r: zeros{}}
	_, err := readBody(&http.Response{ContentLength: 200_000_000, Body: io.NopCloser(r)}, &readBudget{}, anyAnswer)
	if !errors.Is(err, errBodyTooLarge) || r.n != 0 {
		t.Errorf("%v after reading %d bytes; want it refused before reading", err, r.n)
	}
	if want := "answer of 200,000,000 bytes is larger than 64 MiB"; err == nil || err.Error() != want {
		t.Errorf("error %v; want %q", err, want)
	}
}

// Answers read at once share the budget: one of unknown length that finds it spent
// is refused instead of waiting while it holds a share; one of known length waits
// for its share and gets it once the other gives its back.
func TestReadBodyShareOneBudget(t *testing.T) {
	b := &readBudget{limit: 100 << 10}
	if !b.take(90 << 10) {
		t.Fatal("the budget refused its first taker")
	}
	_, err := readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(io.LimitReader(zeros{}, 50<<10))}, b, anyAnswer)
	if !errors.Is(err, errBodyTooLarge) {
		t.Errorf("chunked answer over the budget: %v; want it refused", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readBody(&http.Response{ContentLength: 50 << 10, Body: io.NopCloser(io.LimitReader(zeros{}, 50<<10))}, b, anyAnswer)
		done <- err
	}()
	b.give(90 << 10)
	if err := <-done; err != nil {
		t.Errorf("answer of known length: %v", err)
	}
	if b.used != 0 {
		t.Errorf("%d bytes still reserved", b.used)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
