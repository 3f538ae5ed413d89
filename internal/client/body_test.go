package client

import (
	"bytes"
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
		got, err := readBody(&http.Response{ContentLength: c.length, Body: io.NopCloser(strings.NewReader(c.body))})
		if (err != nil) != c.err || string(got) != c.body {
			t.Errorf("%s: %d bytes, %v; want %d bytes, error %v", c.name, len(got), err, len(c.body), c.err)
		}
	}
}

// An answer read through the pool is the caller's own: the next read does not
// overwrite it.
func TestReadBodyResultIsNotShared(t *testing.T) {
	first, _ := readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(strings.NewReader("first answer"))})
	_, _ = readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(strings.NewReader("second answer"))})
	if !bytes.Equal(first, []byte("first answer")) {
		t.Errorf("first answer now reads %q", first)
	}
}

// A body over the limit is read one byte past it, so send can say it is too large.
func TestReadBodyStopsPastTheLimit(t *testing.T) {
	got, err := readBody(&http.Response{ContentLength: -1, Body: io.NopCloser(io.LimitReader(zeros{}, maxBody+100))})
	if err != nil || len(got) != maxBody+1 {
		t.Errorf("%d bytes, %v; want %d", len(got), err, maxBody+1)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
