package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/textenc"
)

// Produce sends body as one message. 202 (any 2xx) is durable acceptance and is
// never retried. A 502/503/504/421 or a connection error or timeout is retried up to
// RetryPolicy.BoundedAttempts attempts in all: such a failure is ambiguous, so a
// retry may store the message twice, which the API allows (consumers are idempotent).
// A 4xx (400 schema or empty body, 409, 413, ...) comes back at once as *Error.
func (c *Client) Produce(ctx context.Context, topic string, body []byte, o ProduceOptions) error {
	q := url.Values{}
	if o.Key != nil {
		q.Set("key", *o.Key)
	}
	if o.Partition != nil {
		q.Set("partition", strconv.Itoa(*o.Partition))
	}
	if body == nil {
		// An empty message is the node's to refuse (400 "message required"); a nil
		// body would send no Content-Length at all.
		body = []byte{}
	}
	r := &request{op: OpProduce, method: http.MethodPost, path: topicPath(topic, "/produce"), query: q.Encode(),
		body: body, ctype: "application/octet-stream"}
	resp, err := c.bounded(ctx, r)
	if err != nil {
		return err
	}
	if resp.status/100 != 2 {
		return resp.err(r.op)
	}
	return nil
}

// retryStopKey carries WithRetryStop's channel.
type retryStopKey struct{}

// WithRetryStop returns ctx carrying stop, for the bounded calls made with it (a
// produce, a topic read): once stop is closed they start no new attempt. The attempt on
// its way finishes, and stands when it was the last word; when it was not (no answer,
// or an answer to retry) the call fails with that, wrapped so that errors.Is(err,
// ErrStopped). narad produce's first signal: the requests already out finish, without
// minutes of retries against a node that does not answer.
func WithRetryStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, retryStopKey{}, stop)
}

// retryStopped is a bounded call that a stop kept from trying again: last is what
// its last attempt got.
type retryStopped struct{ last error }

func (e *retryStopped) Error() string   { return e.last.Error() + " (not tried again after the stop)" }
func (e *retryStopped) Unwrap() []error { return []error{e.last, ErrStopped} }

// bounded sends r up to BoundedAttempts times while the answer is a retryable status
// or a transient connection error, and no stop came (WithRetryStop). It returns the
// last answer, whatever it was, and an error only when the last attempt got no answer
// or a stop cut the retries.
func (c *Client) bounded(ctx context.Context, r *request) (*response, error) {
	stop, _ := ctx.Value(retryStopKey{}).(<-chan struct{})
	var spent time.Duration // for the hooks: request time plus backoff asked for
	var refused error       // the last attempt's transport error, while the node was never reached
	for attempt := 0; ; attempt++ {
		r.attempt = attempt + 1
		start := time.Now()
		resp, err := c.send(ctx, r)
		spent += time.Since(start)
		last := attempt+1 >= c.retry.BoundedAttempts
		switch {
		case err != nil && ctx.Err() != nil && refused != nil && !c.reached.Load():
			// Cut during an attempt, after others found the node unreachable: that is
			// the news, as when the cut comes during the backoff (below).
			return nil, refused
		case err != nil:
			if last || ctx.Err() != nil || !retryableTransport(err) {
				return nil, err
			}
			refused = err
		case !BusyStatus(resp.status) || last:
			return resp, nil
		}
		// What this attempt got, should the stop keep it from being tried again.
		stopped := &retryStopped{err}
		if err == nil {
			stopped.last = resp.err(r.op)
		}
		if chans.Closed(stop) {
			return nil, stopped
		}
		d := c.retry.wait(attempt, resp.retryAfter())
		spent += d
		c.onRetry(retryEvent(r, resp, err), d, spent, c.retry.BoundedAttempts)
		if serr := c.sleepUnless(ctx, stop, d); serr != nil {
			if errors.Is(serr, ErrStopped) {
				return nil, stopped
			}
			if err != nil && !c.reached.Load() {
				// A node never reached is the news, not the deadline (--timeout) that
				// ended the wait for it: "connection refused", exit 1, not a timeout.
				return nil, err
			}
			return nil, fmt.Errorf("%s: %w", r.op, serr)
		}
		if chans.Closed(stop) {
			return nil, stopped // came as the wait ended
		}
	}
}

// The API's limits on a batch produce (v3.1).
const (
	// MaxProduceBatch is the most messages one batch produce may carry.
	MaxProduceBatch = 100
	// MaxProduceBatchBody is the largest body of a batch produce.
	MaxProduceBatchBody = 1 << 20
	// ProduceBatchFraming is what the body adds around its message objects:
	// {"messages":[ and ]}.
	ProduceBatchFraming = len(`{"messages":[]}`)
)

// ErrNoBatchProduce is a node that predates batch produce (its router answered the
// route 404 in plain text): send the messages one by one. The Client remembers it, and
// from then on ProduceBatch answers it without a request.
var ErrNoBatchProduce = errors.New("the node has no batch produce (a node older than v3.1)")

// ProduceMessage is one message of a batch produce. An empty Key is no key, as the
// API has it.
type ProduceMessage struct {
	Payload   []byte
	Key       *string
	Partition *int
}

// BatchRefusal is a batch the node refused because of one of its messages: Index (from
// 0) names it and Err is the answer, its text without the "message <i>: " prefix.
// Nothing of the batch was stored, so the other messages can be sent again as they are.
type BatchRefusal struct {
	Index int
	Err   *Error
}

func (e *BatchRefusal) Error() string { return e.Err.Error() }
func (e *BatchRefusal) Unwrap() error { return e.Err }

// ProduceBatchBound bounds what a message adds to a batch body (its object and a
// comma) without encoding it: base64 is its largest payload form, a key character
// takes at most 6 bytes (\u00XX), and 128 covers the field names and the partition.
func ProduceBatchBound(m ProduceMessage) int {
	n := 128 + base64.StdEncoding.EncodedLen(len(m.Payload))
	if m.Key != nil {
		n += max(6*len(*m.Key), base64.StdEncoding.EncodedLen(len(*m.Key)))
	}
	return n
}

// ProduceBatch sends msgs (1 to MaxProduceBatch, the body at most MaxProduceBatchBody)
// in one request to POST /v1/topics/{topic}/produce/batch. nil means every message was
// durably accepted. It is retried like Produce (502, 503, 504, 421, connection errors
// and timeouts, at most RetryPolicy.BoundedAttempts attempts), so after an ambiguous
// failure part of the batch may be stored twice, which the API allows.
//
// A refusal that names a message (400, 409, 413 "message <i>: ...") is a *BatchRefusal;
// a node without the route is ErrNoBatchProduce; any other answer is an *Error with op
// "produce", so a 404 "topic not found" reads as it does for a single produce.
func (c *Client) ProduceBatch(ctx context.Context, topic string, msgs []ProduceMessage) error {
	if c.legacyProduce.Load() {
		return ErrNoBatchProduce
	}
	if len(msgs) == 0 || len(msgs) > MaxProduceBatch {
		return fmt.Errorf("produce: a batch holds 1 to %d messages, not %d", MaxProduceBatch, len(msgs))
	}
	body := AppendProduceBatch(make([]byte, 0, batchBodyHint(msgs)), msgs)
	if len(body) > MaxProduceBatchBody {
		return fmt.Errorf("produce: a batch body of %d bytes is over the %d the node takes", len(body), MaxProduceBatchBody)
	}
	r := &request{op: OpProduceBatch, method: http.MethodPost, path: topicPath(topic, "/produce/batch"),
		body: body, ctype: "application/json", header: http.Header{"X-Narad-Client": {c.name}}}
	resp, err := c.bounded(ctx, r)
	if err != nil {
		return err
	}
	switch {
	case resp.status/100 == 2:
		var a struct {
			Accepted *int `json:"accepted"`
		}
		// A 2xx is the node's promise whatever its body; only a count that says
		// otherwise is believed over it.
		if json.Unmarshal(resp.body, &a) == nil && a.Accepted != nil && *a.Accepted != len(msgs) {
			return fmt.Errorf("produce: the node accepted %d of a batch of %d", *a.Accepted, len(msgs))
		}
		return nil
	}
	e := resp.err(r.op)
	if e.Status == http.StatusNotFound && e.Plain {
		if !c.legacyProduce.Swap(true) {
			c.learned(r.op, FallbackProduceSingles)
		}
		return ErrNoBatchProduce
	}
	if i, rest, ok := refusedIndex(e.Message); ok && i < len(msgs) {
		switch e.Status {
		case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
			e.Message = rest
			return &BatchRefusal{Index: i, Err: e}
		}
	}
	return e
}

// BatchProduce reports whether batches may be sent: false once the node turned out
// not to have batch produce.
func (c *Client) BatchProduce() bool { return !c.legacyProduce.Load() }

func batchBodyHint(msgs []ProduceMessage) int {
	n := ProduceBatchFraming
	for _, m := range msgs {
		n += len(m.Payload) + 64
		if m.Key != nil {
			n += len(*m.Key)
		}
	}
	return n
}

// refusedIndex reads "message <i>: rest", the shape of a batch refusal.
func refusedIndex(text string) (i int, rest string, ok bool) {
	s, ok := strings.CutPrefix(text, "message ")
	if !ok {
		return 0, "", false
	}
	num, rest, ok := strings.Cut(s, ": ")
	if !ok || num == "" || len(num) > 6 {
		return 0, "", false
	}
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	i, err := strconv.Atoi(num)
	return i, rest, err == nil
}

// AppendProduceBatch appends the body of a batch produce of msgs to dst: a payload
// that is a JSON document with nothing around it goes verbatim (the node stores it as
// written); anything else (text, binary, JSON with whitespace around it, which the node
// would not keep) as base64. A key that is not UTF-8 goes as base64, an empty key not
// at all (it means none).
func AppendProduceBatch(dst []byte, msgs []ProduceMessage) []byte {
	dst = append(dst, `{"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendProduceMessage(dst, m)
	}
	return append(dst, "]}"...)
}

func appendProduceMessage(dst []byte, m ProduceMessage) []byte {
	dst = append(dst, `{"payload":`...)
	if verbatimJSON(m.Payload) {
		dst = append(dst, m.Payload...)
	} else {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, m.Payload)
		dst = append(dst, `","payload_encoding":"base64"`...)
	}
	if m.Key != nil && *m.Key != "" {
		dst = append(dst, `,"key":`...)
		if utf8.ValidString(*m.Key) {
			dst = textenc.AppendJSONString(dst, *m.Key, textenc.Wire)
		} else {
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, []byte(*m.Key))
			dst = append(dst, `","key_encoding":"base64"`...)
		}
	}
	if m.Partition != nil {
		dst = append(dst, `,"partition":`...)
		dst = strconv.AppendInt(dst, int64(*m.Partition), 10)
	}
	return append(dst, '}')
}

// verbatimJSON is a payload the node stores exactly as written when it goes as a JSON
// value: a JSON document in valid UTF-8 (json.Valid alone lets bad bytes through inside
// strings) with no whitespace around it.
func verbatimJSON(p []byte) bool {
	if len(p) == 0 || isJSONSpace(p[0]) || isJSONSpace(p[len(p)-1]) {
		return false
	}
	// The first byte rules out most text before the full check, whose failure costs
	// allocations (a line of text is the common case of --lines).
	switch c := p[0]; {
	case c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
	case c == 't' || c == 'f' || c == 'n':
		s := string(p) // no allocation: compared only
		return s == "true" || s == "false" || s == "null"
	default:
		return false
	}
	return utf8.Valid(p) && json.Valid(p)
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
