package client

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// bodyBuffers are scratch space for answers of unknown length.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest scratch buffer kept for the next answer: a batch
// answer is usually tens of KiB, and a rare 8 MiB one should not stay behind.
const maxPooledBody = 1 << 20

// readBody reads an answer whole (at most maxBody+1 bytes, so the caller can tell
// one that is too large) into a slice of exactly its size. io.ReadAll's doubling
// left about twice a batch answer's size as garbage at every consume, and with it
// the heap a long drain runs at.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxBody {
		b := make([]byte, n)
		read, err := io.ReadFull(resp.Body, b)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // nothing at all of what was announced
		}
		return b[:read], err
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, maxBody+1))
	b := bytes.Clone(buf.Bytes())
	if buf.Cap() <= maxPooledBody {
		bodyBuffers.Put(buf)
	}
	return b, err
}
