package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/chans"
)

// Consume takes messages from topic: one (Max == 0) or a batch of up to Max (at most
// 100, the API's limit; a larger Max asks for 100). A 204
// (nothing arrived within Wait) is an empty result, not an error. 429, 502, 503 and
// 421 are retried with backoff for as long as ctx allows; a connection error is
// retried a few times (then IsUnreachable reports it); anything else comes back as
// *Error. Closing o.Stop ends it with ErrStopped between attempts; a ctx cancelled
// while a request was in flight gives an error wrapping ErrAnswerLost.
//
// A node older than v3.1 ignores max and answers the single-message shape; that
// answer is taken as a batch of one, and the hooks are told once (FallbackConsumeSingle).
func (c *Client) Consume(ctx context.Context, topic string, o ConsumeOptions) (*ConsumeResult, error) {
	r := &request{op: OpConsume, method: http.MethodGet, path: topicPath(topic, "/consume"), query: consumeQuery(o),
		wait: o.Wait, limit: singleAnswer}
	if o.Max > 0 && !c.legacyConsume.Load() {
		r.limit = batchAnswer
	}
	resp, err := c.consumeRetrying(ctx, r, o.Stop)
	if err != nil {
		return nil, err
	}
	res := &ConsumeResult{}
	if resp.status == http.StatusNoContent {
		return res, nil
	}
	expect := min(o.Max, maxBatchHandles)
	if c.legacyConsume.Load() {
		expect = 0 // the node answers one message: nothing to make room for
	}
	msgs, batch, err := decodeConsumeSized(resp.body, expect)
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	if o.Max > 0 && !batch {
		res.Single = true
		if !c.legacyConsume.Swap(true) {
			c.learned(OpConsume, FallbackConsumeSingle)
		}
	}
	res.Messages = msgs
	return res, nil
}

// consumeQuery is a consume's query, built by hand: with one message per consume
// from an older node, a url.Values per request was a twentieth of what a drain
// allocated. The keys are in url.Values.Encode's order.
func consumeQuery(o ConsumeOptions) string {
	var b []byte
	sep := func() {
		if len(b) > 0 {
			b = append(b, '&')
		}
	}
	if o.Max > 0 {
		// Fewer than max is a normal answer, so asking for more than the API's 100 is
		// asking for 100, not a 400.
		b = append(b, "max="...)
		b = strconv.AppendInt(b, int64(min(o.Max, maxBatchHandles)), 10)
	}
	if o.Partition != nil {
		sep()
		b = append(b, "partition="...)
		b = strconv.AppendInt(b, int64(*o.Partition), 10)
	}
	if o.Wait > 0 {
		sep()
		b = append(b, "wait="...)
		b = append(b, url.QueryEscape(formatWait(o.Wait))...)
	}
	return string(b)
}

// Replay reads the retained message at partition/offset: no lease, no receipt handle.
// It is nil, nil at or past the partition's high watermark (204), and an *Error with
// status 410 when the offset is older than retention.
func (c *Client) Replay(ctx context.Context, topic string, partition int, offset int64) (*Message, error) {
	q := url.Values{}
	q.Set("partition", strconv.Itoa(partition))
	q.Set("offset", strconv.FormatInt(offset, 10))
	r := &request{op: OpReplay, method: http.MethodGet, path: topicPath(topic, "/consume"), query: q.Encode(),
		limit: singleAnswer}
	resp, err := c.consumeRetrying(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusNoContent {
		return nil, nil
	}
	msgs, _, err := decodeConsumeSized(resp.body, 1)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return &msgs[0], nil
}

var (
	// ErrStopped is a consume ended by ConsumeOptions.Stop while no request was in
	// flight: nothing can have been leased for it.
	ErrStopped = errors.New("stopped")
	// ErrAnswerLost marks a consume whose ctx ended while its request was in flight:
	// the node may have leased messages for it, and those come back only when their
	// lease runs out.
	ErrAnswerLost = errors.New("cancelled while the node may have been answering")
)

// unreachableError is a consume that gave up after connection errors in a row.
type unreachableError struct{ error }

func (e unreachableError) Unwrap() error { return e.error }

// IsUnreachable reports a consume that got no answer from the node after a few
// attempts (refused, reset, timed out): a node that is down or restarting, or a wrong
// address. A TLS verification failure is not one: it will not cure itself.
func IsUnreachable(err error) bool {
	var u unreachableError
	return errors.As(err, &u)
}

// consumeRetrying sends r until it gets 200 or 204, backing off on the statuses that
// ask for it. Anything else is an *Error at once: a 401 must never loop (a node locks
// a user name out after 5 failed logins). Closing stop ends it before the next attempt.
func (c *Client) consumeRetrying(ctx context.Context, r *request, stop <-chan struct{}) (*response, error) {
	busy, down := 0, 0 // retries so far for a busy node, and connection errors in a row
	// A node busy for longer than the retry budget is reported rather than waited on
	// silently forever (sub --drain in CI must end); request time plus backoff asked
	// for, as for settlements.
	var spent time.Duration
	for {
		if chans.Closed(stop) {
			return nil, fmt.Errorf("%s: %w", r.op, ErrStopped)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", r.op, err)
		}
		r.attempt++
		start := time.Now()
		resp, err := c.send(ctx, r)
		spent += time.Since(start)
		var n, maxAttempts int
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("%w (%w)", err, ErrAnswerLost)
		case err != nil:
			if !retryableTransport(err) {
				return nil, err
			}
			if down+1 >= c.retry.BoundedAttempts {
				return nil, unreachableError{err}
			}
			down++
			n, maxAttempts = down-1, r.attempt-down+c.retry.BoundedAttempts
		case resp.status == http.StatusOK || resp.status == http.StatusNoContent:
			return resp, nil
		case retryableConsumeStatus(resp.status):
			if spent >= c.retry.Budget {
				return nil, resp.err(r.op)
			}
			down = 0
			busy++
			n = busy - 1
		default:
			return nil, resp.err(r.op)
		}
		d := c.retry.wait(n, resp.retryAfter())
		spent += d
		c.onRetry(retryEvent(r, resp, err), d, spent, maxAttempts)
		if serr := c.sleepUnless(ctx, stop, d); serr != nil {
			if err != nil && !c.reached.Load() {
				// Cut (by --timeout, a stop) while retrying a node never reached: that
				// it cannot be reached is what to say, not that time ran out.
				return nil, unreachableError{err}
			}
			return nil, fmt.Errorf("%s: %w", r.op, serr)
		}
	}
}

// sleepUnless is the policy's Sleep, cut short by ctx (its error) or by closing stop
// (ErrStopped).
func (c *Client) sleepUnless(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	if stop == nil {
		return c.retry.Sleep(ctx, d)
	}
	sctx, cancel := chans.Context(ctx, stop)
	defer cancel()
	err := c.retry.Sleep(sctx, d)
	if err != nil && ctx.Err() == nil && chans.Closed(stop) {
		return ErrStopped
	}
	return err
}

// consumeBody is either answer shape: a batch {"messages":[...]} or, from a single
// consume or an older node, the message object itself. One decode covers both.
type consumeBody struct {
	Messages *[]Message `json:"messages"`
	Message
}

// decodeConsume decodes a consume answer; batch reports the batch shape. A body that
// is not valid JSON because an older node wrote Go escapes (`"key":"\x01"`) is repaired
// and decoded again, so one odd key does not stop a consumer.
func decodeConsume(body []byte) (msgs []Message, batch bool, err error) {
	var b consumeBody
	if err = json.Unmarshal(body, &b); err != nil {
		var serr *json.SyntaxError
		if !errors.As(err, &serr) {
			return nil, false, err
		}
		fixed, ok := repairGoEscapes(body)
		if !ok {
			return nil, false, fmt.Errorf("bad JSON in answer: %w", err)
		}
		b = consumeBody{}
		if err2 := json.Unmarshal(fixed, &b); err2 != nil {
			return nil, false, fmt.Errorf("bad JSON in answer: %w", err)
		}
		body = fixed
	}
	if b.Messages != nil {
		keepPayloadSpace(body, *b.Messages, true)
		return *b.Messages, true, nil
	}
	if b.Payload == nil && b.ReceiptHandle == "" && b.Topic == "" {
		return nil, false, errors.New("answer holds neither a message nor messages")
	}
	msgs = []Message{b.Message}
	keepPayloadSpace(body, msgs, false)
	return msgs, false, nil
}

// decodeConsumeSized gives decodeConsume's answer, faster: an answer laid out the
// way a node writes it is read in one pass (fastDecodeConsume); any other is decoded
// with room for expect messages made at once, so that the decoder does not grow the
// slice message by message, and what is not a batch with messages in it is decoded
// again the plain way.
func decodeConsumeSized(body []byte, expect int) (msgs []Message, batch bool, err error) {
	if msgs, batch, ok := fastDecodeConsume(body, expect); ok {
		return msgs, batch, nil
	}
	if expect > 1 {
		room := make([]Message, 0, expect)
		b := consumeBody{Messages: &room}
		if json.Unmarshal(body, &b) == nil && b.Messages != nil && len(*b.Messages) > 0 {
			keepPayloadSpace(body, *b.Messages, true)
			return *b.Messages, true, nil
		}
	}
	return decodeConsume(body)
}

// Go-escape repair: an older node formatted some strings with Go's %q, which writes
// escapes JSON does not have. The repair rewrites only the string literals holding
// such escapes, after the bytes they stand for:
//   - the value of "key" or "payload" becomes base64, with "key_encoding" or
//     "payload_encoding" set to "base64" right after it (what v3.1 sends for bytes);
//   - any other string becomes a JSON string of its text (invalid UTF-8 replaced).
//
// Everything else is copied byte for byte, so a JSON payload stays verbatim. It
// reports whether it repaired anything: false when there was nothing to repair or
// a string literal is broken beyond Go escapes.
func repairGoEscapes(in []byte) ([]byte, bool) {
	out := make([]byte, 0, len(in)+64)
	changed := false
	var lastStr []byte  // raw text of the last string literal: an object key, if a ':' follows
	var valueOf string  // the key whose value the next string literal is, when it follows ':'
	afterColon := false // the last byte outside strings, ignoring spaces, was ':'
	for i := 0; i < len(in); {
		ch := in[i]
		if ch != '"' {
			switch ch {
			case ':':
				afterColon, valueOf = true, string(lastStr)
			case ' ', '\t', '\n', '\r':
			default:
				afterColon = false
			}
			out = append(out, ch)
			i++
			continue
		}
		end, dec, goEsc, ok := scanString(in, i)
		if !ok {
			return nil, false
		}
		field := ""
		if afterColon {
			field = valueOf
		}
		afterColon = false
		if !goEsc {
			out = append(out, in[i:end]...)
			lastStr = in[i+1 : end-1]
			i = end
			continue
		}
		changed = true
		lastStr = nil
		switch field {
		case "key", "payload":
			enc, _ := json.Marshal(dec) // []byte marshals as base64
			out = append(out, enc...)
			out = append(out, `,"`+field+`_encoding":"base64"`...)
		default:
			enc, _ := json.Marshal(string(dec))
			out = append(out, enc...)
		}
		i = end
	}
	return out, changed
}

// scanString reads the string literal starting at in[i] (a '"'). It returns the index
// just past its closing quote, its decoded bytes, whether it used a Go-only escape
// (\xNN, \a, \v, \', \NNN octal, \UXXXXXXXX), and false if it is not a string literal
// either language would accept.
func scanString(in []byte, i int) (end int, dec []byte, goEsc, ok bool) {
	j := i + 1
	for j < len(in) {
		c := in[j]
		switch {
		case c == '"':
			return j + 1, dec, goEsc, true
		case c != '\\':
			dec = append(dec, c)
			j++
			continue
		}
		if j+1 >= len(in) {
			return 0, nil, false, false
		}
		e := in[j+1]
		switch e {
		case '"', '\\', '/':
			dec = append(dec, e)
			j += 2
		case 'b':
			dec, j = append(dec, '\b'), j+2
		case 'f':
			dec, j = append(dec, '\f'), j+2
		case 'n':
			dec, j = append(dec, '\n'), j+2
		case 'r':
			dec, j = append(dec, '\r'), j+2
		case 't':
			dec, j = append(dec, '\t'), j+2
		case 'a':
			dec, j, goEsc = append(dec, '\a'), j+2, true
		case 'v':
			dec, j, goEsc = append(dec, '\v'), j+2, true
		case '\'':
			dec, j, goEsc = append(dec, '\''), j+2, true
		case 'x':
			v, ok := hexAt(in, j+2, 2)
			if !ok {
				return 0, nil, false, false
			}
			dec, j, goEsc = append(dec, byte(v)), j+4, true
		case 'u':
			v, ok := hexAt(in, j+2, 4)
			if !ok {
				return 0, nil, false, false
			}
			j += 6
			r := rune(v)
			// A UTF-16 surrogate pair is two \u escapes in JSON.
			if r >= 0xD800 && r < 0xDC00 && j+1 < len(in) && in[j] == '\\' && in[j+1] == 'u' {
				if lo, ok := hexAt(in, j+2, 4); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + rune(lo-0xDC00)
					j += 6
				}
			}
			dec = appendRune(dec, r)
		case 'U':
			v, ok := hexAt(in, j+2, 8)
			if !ok {
				return 0, nil, false, false
			}
			dec, j, goEsc = appendRune(dec, rune(v)), j+10, true
		case '0', '1', '2', '3', '4', '5', '6', '7':
			if j+3 >= len(in) {
				return 0, nil, false, false
			}
			v, err := strconv.ParseUint(string(in[j+1:j+4]), 8, 8)
			if err != nil {
				return 0, nil, false, false
			}
			dec, j, goEsc = append(dec, byte(v)), j+4, true
		default:
			return 0, nil, false, false
		}
	}
	return 0, nil, false, false
}

func hexAt(in []byte, i, n int) (uint64, bool) {
	if i+n > len(in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(in[i:i+n]), 16, 32)
	return v, err == nil
}

func appendRune(b []byte, r rune) []byte {
	return utf8.AppendRune(b, r) // a lone surrogate or out-of-range rune becomes U+FFFD
}
