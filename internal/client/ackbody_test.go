package client

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The batch ack body carries every handle as it is, whatever the handle holds, and
// is exactly as long as chunks counts it.
func TestAckBodyCarriesTheHandles(t *testing.T) {
	hs := []string{"4:0:3327358780392153864", `q"uote`, `back\slash`, "<tag>&amp;", "tab\there\nand\r", "\x01\x1f", "é", "", "\u2028"}
	s := &settleCall{res: make([]SettleResult, len(hs))}
	idx := make([]int, len(hs))
	for i, h := range hs {
		s.res[i].Handle = h
		idx[i] = i
		if n, enc := handleJSONLen(h), appendHandleJSON(nil, h); n != len(enc) {
			t.Errorf("handleJSONLen(%q) = %d, appendHandleJSON writes %d bytes", h, n, len(enc))
		}
	}
	body := s.ackBody(idx)
	var got struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}
	if err := json.Unmarshal(body, &got); err != nil || !slices.Equal(got.ReceiptHandles, hs) {
		t.Errorf("body %s reads %q, %v; want %q", body, got.ReceiptHandles, err, hs)
	}
	// Bytes that are not UTF-8 go as json.Marshal writes them.
	if got, want := appendHandleJSON(nil, "\xff\xfe"), mustMarshal(t, "\xff\xfe"); string(got) != string(want) {
		t.Errorf("invalid UTF-8 written %s, want %s", got, want)
	}
	if n := handleJSONLen("\xff\xfe"); n != len(mustMarshal(t, "\xff\xfe")) {
		t.Errorf("handleJSONLen of invalid UTF-8 = %d", n)
	}
}

// Batches keep the handles in order, each within 100 handles and 64 KiB of body,
// with a body as long as chunks counted.
func TestChunksWithinTheLimits(t *testing.T) {
	var hs []string
	for i := range 250 {
		hs = append(hs, fmt.Sprintf("%d:%s", i, strings.Repeat("h", i*6)))
	}
	s := &settleCall{res: make([]SettleResult, len(hs))}
	pending := make([]int, len(hs))
	for i, h := range hs {
		s.res[i].Handle = h
		pending[i] = i
	}
	var all []int
	jobs := s.chunks(pending)
	if len(jobs) < 4 {
		t.Errorf("%d batches: the test means the size limit to cut some", len(jobs))
	}
	for _, job := range jobs {
		body := s.ackBody(job)
		if len(job) == 0 || len(job) > maxBatchHandles || len(body) > maxBatchBody {
			t.Errorf("a batch of %d handles, %d bytes", len(job), len(body))
		}
		all = append(all, job...)
	}
	if !slices.Equal(all, pending) {
		t.Errorf("batches hold %v, want every handle once in order", all)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
