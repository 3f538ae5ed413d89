package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy is the one backoff every call uses. The zero value means the defaults.
//
// Who retries what (never a 4xx other than 421, and 429 on consume; never a 401):
//   - ack/extend/nack: 502, 503, 504, 421 and connection errors/timeouts, until 204 or
//     410 or until Budget is spent. Mandatory: a dropped ack becomes a redelivery.
//   - produce: 502, 503, 504, 421 and connection errors/timeouts, at most
//     BoundedAttempts attempts in all; a retry may duplicate, which the API allows.
//   - consume and replay: 429, 502, 503, 421 for as long as ctx allows; connection
//     errors at most BoundedAttempts times in a row, so a wrong address fails fast.
//   - topic reads: like produce. Topic create/delete and readyz are not retried:
//     a retried create or delete would turn its own success into 409 or 404.
type RetryPolicy struct {
	// Initial is the first backoff (default 100ms); each retry doubles it up to Max
	// (default 5s). A random jitter takes off up to half of each wait so that many
	// consumers hit by the same outage do not come back in step.
	Initial, Max time.Duration
	// Budget bounds the time spent retrying a settlement (default 2m). It is counted
	// as the backoff asked of Sleep plus the time the requests took, so a test with
	// an instant Sleep still runs the budget out deterministically.
	Budget time.Duration
	// BoundedAttempts bounds, counting the first, the attempts of every retry that is
	// not bounded by Budget (default 5): a produce, a topic read, and a consume's run of
	// connection errors, as listed above.
	BoundedAttempts int
	// Sleep waits d or until ctx is done, returning ctx.Err() then. Tests inject an
	// instant one; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of RetryPolicy.
const (
	DefaultRetryInitial    = 100 * time.Millisecond
	DefaultRetryMax        = 5 * time.Second
	DefaultRetryBudget     = 2 * time.Minute
	DefaultBoundedAttempts = 5
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Initial <= 0 {
		p.Initial = DefaultRetryInitial
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	if p.Budget <= 0 {
		p.Budget = DefaultRetryBudget
	}
	if p.BoundedAttempts <= 0 {
		p.BoundedAttempts = DefaultBoundedAttempts
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	return p
}

// backoff is the wait before retry number n (0 for the first retry): Initial·2ⁿ capped
// at Max, less a random part of up to half ("equal jitter", never close to zero).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Initial
	for i := 0; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	half := d / 2
	return d - half + rand.N(half+1)
}

// wait is the wait before retry number n after an answer whose Retry-After asked for
// asked (0: none): the backoff, or longer if the node asked for longer (API.md: wait at
// least that long).
func (p RetryPolicy) wait(n int, asked time.Duration) time.Duration {
	return max(p.backoff(n), asked)
}

// maxRetryAfter bounds what a Retry-After may ask: a node that asks for an hour (a bug,
// or a hostile one) would otherwise park a consumer or an ack for that long. The wait
// is said on stderr as every retry's is (the client's OnRetry hook).
const maxRetryAfter = time.Minute

// retryAfter is the wait a Retry-After header asks for, in seconds or as an HTTP date
// (RFC 9110), at most maxRetryAfter; 0 when there is none or it cannot be read.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// retryAfter is what r's Retry-After asks for (0 for no answer).
func (r *response) retryAfter() time.Duration {
	if r == nil {
		return 0
	}
	return retryAfter(r.header, time.Now())
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BusyStatus is the set of answers that mean "not done, try again" for a settlement
// or a produce: the node could not reach the partition owner (502/503, or a proxy's
// 504) or is not the owner right now (421). The client retries them (see
// RetryPolicy); the CLI's hints and notices ask it too.
func BusyStatus(status int) bool {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusMisdirectedRequest:
		return true
	}
	return false
}

// retryableConsumeStatus adds 429 (too many concurrent consumes) for consume, where
// waiting is the remedy; 504 is left out since a long poll already waits.
func retryableConsumeStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusMisdirectedRequest:
		return true
	}
	return false
}

// retryableTransport tells a transient connection failure or timeout from one that
// will fail the same way every time (a certificate the client does not trust).
func retryableTransport(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		rerr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &uerr), errors.As(err, &herr), errors.As(err, &cerr),
		errors.As(err, &rerr), errors.Is(err, errBodyTooLarge):
		return false
	}
	return true
}
