package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/textenc"
)

const (
	// The API's limits on a batch ack.
	maxBatchHandles = 100 // also the largest max of a batch consume
	maxBatchBody    = 64 << 10
	// settleParallel bounds the requests one Settle has in flight: enough to settle
	// thousands of handles one by one on an older node without opening a connection
	// per handle.
	settleParallel = 8
)

// legacySettleText is how a node older than v3.1 refuses a batch ack.
const legacySettleText = "receipt_handle required"

// Op is the action's Op in errors and events.
func (a Action) Op() Op {
	switch a {
	case Ack:
		return OpAck
	case Extend:
		return OpExtend
	case Nack:
		return OpNack
	}
	return opNone
}

// String is the action's name, which is also its Op's: ack, extend or nack.
func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Extend:
		return "extend"
	case Nack:
		return "nack"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// extendParam is the query's extend value: none for an ack, true to renew the lease,
// 0 to give the message back.
func (a Action) extendParam() string {
	switch a {
	case Extend:
		return "true"
	case Nack:
		return "0"
	}
	return ""
}

// Settle acks, extends or nacks handles, and answers one result per handle in input
// order. It sends batches of at most 100 handles and 64 KiB, one handle alone as a
// single request; a node that refuses batches (400 "receipt_handle required") is
// remembered and served one handle per request from then on.
//
// Handles answered 502, 503, 504 or 421, or whose request got no answer, are retried
// with backoff until they get 204 or 410 or another final answer, or until the retry
// budget or ctx runs out; their result is then the last answer seen (Status 0 when
// there was none). A settlement that was never confirmed may have happened: the
// message may come again, and a retried ack that had in fact landed answers 410.
//
// The error is for what is not per handle: 401, 403, 404 (returned at once, never
// retried, with the remaining handles marked with that status), a ctx done before
// anything was sent, an unknown Action. Even then there is one result per handle.
func (c *Client) Settle(ctx context.Context, topic string, a Action, handles []string) ([]SettleResult, error) {
	s, err := c.settle(ctx, topic, a, handles)
	return s.res, err
}

// Ack settles a message for good: nil on 204, an *Error with Status 410 when the lease
// was gone. Retried like Settle.
func (c *Client) Ack(ctx context.Context, topic, handle string) error {
	return c.settleOne(ctx, topic, Ack, handle)
}

// Extend renews a lease for a full visibility timeout from now; 410 means the lease
// already ran out and the message belongs to someone else.
func (c *Client) Extend(ctx context.Context, topic, handle string) error {
	return c.settleOne(ctx, topic, Extend, handle)
}

// Nack gives a message back at once, to be delivered again with a new handle.
func (c *Client) Nack(ctx context.Context, topic, handle string) error {
	return c.settleOne(ctx, topic, Nack, handle)
}

// Unconfirmed reports a result without a final answer (no answer at all, or a 502,
// 503, 504 or 421 when the retries ran out or were abandoned): the settlement may or
// may not have happened, and sending it again is safe (an ack that had landed
// answers 410 the second time).
func (r SettleResult) Unconfirmed() bool {
	return r.Status == 0 || BusyStatus(r.Status)
}

func (c *Client) settleOne(ctx context.Context, topic string, a Action, handle string) error {
	s, err := c.settle(ctx, topic, a, []string{handle})
	if err != nil {
		return err
	}
	return s.cause[0]
}

// settleCall is one Settle call's state. Each handle index is written by the one request
// that carries it in a round, so the slices need no lock; the rest does.
type settleCall struct {
	c      *Client
	topic  string
	a      Action
	res    []SettleResult
	cause  []error // per handle: nil on 204, the *Error or transport error otherwise
	retry  []bool  // per handle: its last answer asks for another attempt
	pass   int     // the attempt being made (the round), from 1
	mu     sync.Mutex
	fatal  *Error        // a 401/403/404: stop everything
	refuse []int         // handles of batches to send again one by one (legacy node, 413)
	asked  time.Duration // the longest Retry-After of this round's answers
}

func (c *Client) settle(ctx context.Context, topic string, a Action, handles []string) (*settleCall, error) {
	s := &settleCall{c: c, topic: topic, a: a, res: make([]SettleResult, len(handles)),
		cause: make([]error, len(handles)), retry: make([]bool, len(handles))}
	for i, h := range handles {
		s.res[i].Handle = h
	}
	op := a.String()
	if a != Ack && a != Extend && a != Nack {
		err := fmt.Errorf("settle: unknown action %s", op)
		s.failAll(err)
		return s, err
	}
	if err := ctx.Err(); err != nil {
		err = fmt.Errorf("%s: %w", op, err)
		s.failAll(err)
		return s, err
	}
	pending := make([]int, len(handles))
	for i := range pending {
		pending[i] = i
	}
	var spent time.Duration // request time plus backoff asked for: see RetryPolicy.Budget
	for round := 0; len(pending) > 0; round++ {
		s.pass = round + 1
		start := time.Now()
		s.asked = 0
		s.round(ctx, pending)
		spent += time.Since(start)
		if s.fatal != nil {
			for i := range s.res {
				if s.retry[i] || (s.cause[i] == nil && s.res[i].Status != http.StatusNoContent) {
					s.record(i, s.fatal.Status, s.fatal.Message, s.fatal, false)
				}
			}
			return s, s.fatal
		}
		pending = pending[:0]
		for i, r := range s.retry {
			if r {
				pending = append(pending, i)
			}
		}
		if len(pending) == 0 || ctx.Err() != nil {
			break
		}
		if !c.reached.Load() && round+1 >= c.retry.BoundedAttempts {
			// Nothing ever answered: a wrong --server, not a node to wait out for the
			// whole budget. The settlements never arrived anywhere; say so as a whole.
			return s, s.cause[pending[0]]
		}
		d := c.retry.wait(round, s.asked)
		if spent+d > c.retry.Budget {
			break // the last answers stand
		}
		first := pending[0]
		c.onRetry(RetryEvent{Op: a.Op(), Status: s.res[first].Status, Err: s.cause[first], Attempt: round + 2,
			Handles: len(pending)}, d, spent+d, 0)
		if c.retry.Sleep(ctx, d) != nil {
			break
		}
		spent += d
		for _, i := range pending {
			s.res[i].Retries++
		}
	}
	return s, nil
}

func (s *settleCall) failAll(err error) {
	msg := strings.TrimPrefix(err.Error(), s.a.String()+": ")
	for i := range s.res {
		s.record(i, 0, msg, err, false)
	}
}

// round sends every pending handle once: in batches, or one by one to an older node.
func (s *settleCall) round(ctx context.Context, pending []int) {
	var jobs [][]int
	if s.c.legacySettle.Load() {
		jobs = singles(pending)
	} else {
		jobs = s.chunks(pending)
	}
	s.run(ctx, jobs)
	if len(s.refuse) > 0 && s.fatal == nil {
		again := s.refuse
		s.refuse = nil
		s.run(ctx, singles(again))
	}
}

// run sends the jobs, settleParallel at a time. The first goes alone: if the
// credentials are wrong it is the only request to fail (a node locks a user name out
// after 5 failed logins), and an older node's refusal of batches is learned before
// the others are sent.
func (s *settleCall) run(ctx context.Context, jobs [][]int) {
	if len(jobs) == 0 {
		return
	}
	s.send(ctx, jobs[0])
	if s.fatal != nil || len(jobs) == 1 {
		return
	}
	if len(jobs) > 1 && s.c.legacySettle.Load() && len(jobs[0]) > 1 {
		// The first batch was refused as legacy: the rest would be too.
		for _, j := range jobs[1:] {
			s.refuse = append(s.refuse, j...)
		}
		return
	}
	// settleParallel senders take the jobs in turn: a goroutine per job cost its start
	// and the growth of its stack every time, which one handle per request (an older
	// node) made every handle.
	rest := jobs[1:]
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(settleParallel, len(rest)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(rest)) && !s.stopped(); i = next.Add(1) - 1 {
				s.send(ctx, rest[i])
			}
		})
	}
	wg.Wait()
}

// stopped reports a fatal answer: nothing more is sent.
func (s *settleCall) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal != nil
}

func (s *settleCall) send(ctx context.Context, idx []int) {
	if len(idx) == 1 {
		s.single(ctx, idx[0])
	} else {
		s.batch(ctx, idx)
	}
}

func singles(idx []int) [][]int {
	jobs := make([][]int, len(idx))
	for k := range idx {
		jobs[k] = idx[k : k+1]
	}
	return jobs
}

// chunks cuts the handles into batches within the API's limits of 100 handles and
// 64 KiB of body.
func (s *settleCall) chunks(pending []int) [][]int {
	const overhead = len(`{"receipt_handles":[]}`)
	// Each batch is a run of pending itself: the round uses them before pending
	// changes.
	jobs := make([][]int, 0, (len(pending)+maxBatchHandles-1)/maxBatchHandles)
	start := 0
	size := overhead
	for k, i := range pending {
		n := handleJSONLen(s.res[i].Handle)
		if k > start {
			n++ // the comma
		}
		if k > start && (k-start == maxBatchHandles || size+n > maxBatchBody) {
			jobs = append(jobs, pending[start:k:k])
			start, size, n = k, overhead, n-1
		}
		size += n
	}
	if len(pending) > start {
		jobs = append(jobs, pending[start:len(pending):len(pending)])
	}
	return jobs
}

// request is a settlement's request without its handles: single puts its handle in
// the query, batch puts the body (and its content type) in.
func (s *settleCall) request() *request {
	var q string
	if e := s.a.extendParam(); e != "" {
		q = "extend=" + url.QueryEscape(e)
	}
	return &request{op: s.a.Op(), attempt: s.pass, method: http.MethodPost, path: topicPath(s.topic, "/ack"), query: q}
}

// single settles one handle with ?receipt_handle=H, which every node version takes.
func (s *settleCall) single(ctx context.Context, i int) {
	r := s.request()
	if r.query != "" {
		r.query += "&"
	}
	r.query += "receipt_handle=" + url.QueryEscape(s.res[i].Handle)
	resp, err := s.c.send(ctx, r)
	s.noteRetryAfter(resp)
	if err != nil {
		s.record(i, 0, strings.TrimPrefix(err.Error(), r.op.String()+": "), err, ctx.Err() == nil && retryableTransport(err))
		return
	}
	if resp.status/100 == 2 {
		s.record(i, http.StatusNoContent, "", nil, false)
		return
	}
	e := resp.err(r.op)
	if s.isFatal(e) {
		return
	}
	s.record(i, e.Status, e.Message, e, BusyStatus(e.Status))
}

// batch settles handles with one {"receipt_handles":[...]} body.
func (s *settleCall) batch(ctx context.Context, idx []int) {
	r := s.request()
	r.body, r.ctype = s.ackBody(idx), "application/json"
	resp, err := s.c.send(ctx, r)
	s.noteRetryAfter(resp)
	if err != nil {
		retry := ctx.Err() == nil && retryableTransport(err)
		msg := strings.TrimPrefix(err.Error(), r.op.String()+": ")
		for _, i := range idx {
			s.record(i, 0, msg, err, retry)
		}
		return
	}
	switch {
	case resp.status == http.StatusOK:
		type result struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		}
		var ans struct {
			Results []result `json:"results"`
		}
		ans.Results = make([]result, 0, len(idx)) // one a handle: no growing while decoding
		err := json.Unmarshal(resp.body, &ans)
		if err == nil && len(ans.Results) != len(idx) {
			err = fmt.Errorf("%d results for %d handles", len(ans.Results), len(idx))
		}
		if err != nil {
			// Not retried: some of these may have been settled, and a second try would
			// only turn them into 410s.
			msg := "unreadable batch answer: " + err.Error()
			cause := fmt.Errorf("%s: %s", r.op, msg)
			for _, i := range idx {
				s.record(i, 0, msg, cause, false)
			}
			return
		}
		for k, i := range idx {
			st, msg := ans.Results[k].Status, oneLine(ans.Results[k].Error)
			if st < 100 || st > 599 {
				// No status an HTTP answer can have: this handle's result says nothing,
				// so it may or may not be settled (not retried, as above).
				what := "no status"
				if st != 0 {
					what = fmt.Sprintf("status %d", st)
				}
				msg := "unreadable batch answer: " + what + " for this handle"
				s.record(i, 0, msg, fmt.Errorf("%s: %s", r.op, msg), false)
				continue
			}
			if st/100 == 2 {
				s.record(i, http.StatusNoContent, "", nil, false)
				continue
			}
			s.record(i, st, msg, &Error{Op: r.op, Status: st, Message: msg}, BusyStatus(st))
		}
		return
	case resp.status == http.StatusBadRequest && strings.Contains(strings.ToLower(errorText(resp.body)), legacySettleText):
		if !s.c.legacySettle.Swap(true) {
			s.c.learned(r.op, FallbackSettleSingles)
		}
		s.refuseBatch(idx)
		return
	case resp.status == http.StatusRequestEntityTooLarge:
		// The node counts the body differently than we do: send these one by one.
		s.refuseBatch(idx)
		return
	}
	e := resp.err(r.op)
	if s.isFatal(e) {
		return
	}
	for _, i := range idx {
		s.record(i, e.Status, e.Message, e, BusyStatus(e.Status))
	}
}

// ackBody is the batch ack body for the handles at idx: {"receipt_handles":[...]},
// in one allocation.
func (s *settleCall) ackBody(idx []int) []byte {
	const head, tail = `{"receipt_handles":[`, `]}`
	size := len(head) + len(tail)
	for _, i := range idx {
		size += handleJSONLen(s.res[i].Handle) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, head...)
	for k, i := range idx {
		if k > 0 {
			body = append(body, ',')
		}
		body = appendHandleJSON(body, s.res[i].Handle)
	}
	return append(body, tail...)
}

// appendHandleJSON appends a handle as a JSON string: valid UTF-8 (every handle a
// node sends) as textenc.AppendJSONString writes it, anything else as json.Marshal does.
func appendHandleJSON(dst []byte, h string) []byte {
	if utf8.ValidString(h) {
		return textenc.AppendJSONString(dst, h, textenc.Wire)
	}
	enc, _ := json.Marshal(h)
	return append(dst, enc...)
}

// handleJSONLen is the length appendHandleJSON writes, without writing it.
func handleJSONLen(h string) int {
	if !utf8.ValidString(h) {
		enc, _ := json.Marshal(h)
		return len(enc)
	}
	n := len(h) + 2
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
			n++
		case c < 0x20:
			n += 5 // \u00XX
		}
	}
	return n
}

func (s *settleCall) refuseBatch(idx []int) {
	s.mu.Lock()
	s.refuse = append(s.refuse, idx...)
	s.mu.Unlock()
}

// isFatal notes a 401, 403 or 404: the same for every handle, and never to be retried.
func (s *settleCall) isFatal(e *Error) bool {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = e
		}
		s.mu.Unlock()
		return true
	}
	return false
}

// noteRetryAfter keeps the longest wait this round's answers asked for: the round's
// retry waits for the slowest of them.
func (s *settleCall) noteRetryAfter(resp *response) {
	if d := resp.retryAfter(); d > 0 {
		s.mu.Lock()
		s.asked = max(s.asked, d)
		s.mu.Unlock()
	}
}

func (s *settleCall) record(i, status int, msg string, cause error, retry bool) {
	s.res[i].Status, s.res[i].Err, s.cause[i], s.retry[i] = status, msg, cause, retry
}
