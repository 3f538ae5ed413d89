package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Produce sends body as one message. 202 (any 2xx) is durable acceptance and is
// never retried. A 502/503/504/421 or a connection error or timeout is retried up to
// RetryPolicy.ProduceAttempts attempts in all: such a failure is ambiguous, so a
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
	r := &request{op: OpProduce, method: http.MethodPost, path: topicPath(topic, "/produce"), query: q,
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

// bounded sends r up to ProduceAttempts times while the answer is a retryable status
// or a transient connection error. It returns the last answer, whatever it was, and
// an error only when the last attempt got no answer.
func (c *Client) bounded(ctx context.Context, r *request) (*response, error) {
	var spent time.Duration // for the hooks: request time plus backoff asked for
	for attempt := 0; ; attempt++ {
		r.attempt = attempt + 1
		start := time.Now()
		resp, err := c.send(ctx, r)
		spent += time.Since(start)
		last := attempt+1 >= c.retry.ProduceAttempts
		switch {
		case err != nil:
			if last || ctx.Err() != nil || !retryableTransport(err) {
				return nil, err
			}
		case !retryableStatus(resp.status) || last:
			return resp, nil
		}
		d := c.retry.backoff(attempt)
		spent += d
		c.onRetry(retryEvent(r, resp, err), d, spent, c.retry.ProduceAttempts)
		if err := c.retry.Sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%s: %w", r.op, err)
		}
	}
}
