package client

import (
	"fmt"
	"net/http"
	"time"
)

// Hook observes the client: any value implementing one or more of the Hook*
// interfaces below, installed with Config.Hooks. The client writes no prose of its
// own; whatever is shown of its work (-v, --curl, notices) is a hook's doing.
//
// Hooks are called synchronously on the goroutine making the request, from many
// goroutines at once: they must be quick, safe for concurrent use, and must not
// modify what an event points to.
type Hook any

// HookRequest is told of each attempt just before it is sent.
type HookRequest interface{ OnRequest(RequestEvent) }

// HookSent is told of each attempt as it is sent, with its Exchange and times only: for
// a hook that times requests, which needs none of the copy of the headers HookRequest
// is given (made for every request once any hook asks for it).
type HookSent interface{ OnSent(SentEvent) }

// HookAnswer is told of each HTTP answer, whatever its status.
type HookAnswer interface{ OnAnswer(AnswerEvent) }

// HookTransportError is told of each attempt that got no HTTP answer.
type HookTransportError interface{ OnTransportError(TransportErrorEvent) }

// HookRetry is told of each retry the client decides on, before it waits.
type HookRetry interface{ OnRetry(RetryEvent) }

// HookFallback is told, once per Client, of each thing the node turned out not to
// speak and the client now does differently.
type HookFallback interface{ OnFallback(FallbackEvent) }

// Exchange identifies one attempt: its request, answer or transport error events
// carry the same one.
type Exchange struct {
	Op     Op
	Method string
	// URL is the whole URL with its query, never with credentials.
	URL string
	// Attempt counts the attempts of one call from 1 (2 is its first retry).
	Attempt int
}

// RequestEvent is one attempt about to be sent.
type RequestEvent struct {
	Exchange
	// Header is what is sent, without Authorization: a copy the hook may keep.
	Header http.Header
	// Auth is set when the request carries Basic credentials, which no event shows.
	Auth bool
	// Body is the body sent, nil when none or Secret. It is the request's own: read
	// it only during the call.
	Body []byte
	// Secret is set when the body carries a password (user add, user passwd): Body is
	// then nil, so that no hook can show the password (--curl would print it).
	Secret bool
}

// SentEvent is one attempt on its way (HookSent).
type SentEvent struct {
	Exchange
	// Wait is how long the node may hold this request by design (a long poll's
	// wait), 0 for the others; Timeout is how long the attempt may take in all, Wait
	// included, before it is given up: the client's own timeout, or less when the
	// caller's deadline comes sooner.
	Wait, Timeout time.Duration
}

// AnswerEvent is one HTTP answer, read in full.
type AnswerEvent struct {
	Exchange
	Status   int
	Latency  time.Duration
	BodySize int
}

// TransportErrorEvent is one attempt that got no HTTP answer.
type TransportErrorEvent struct {
	Exchange
	Err     error
	Latency time.Duration
	// Sent is set when the connection was made and the request written: the node
	// took the request but did not answer it (a timeout, or the connection closed).
	Sent bool
}

// RetryEvent is a retry the client decided on.
type RetryEvent struct {
	Op Op
	// Status is the answer that asks for the retry, 0 when there was no answer.
	Status int
	// Err is why: the *Error of that answer, or the transport error.
	Err error
	// Wait is the backoff before the next attempt.
	Wait time.Duration
	// Attempt is the number of the attempt about to be made (2 for the first retry).
	Attempt int
	// MaxAttempts bounds the attempts of this call, counting the first; 0 when Budget
	// bounds it instead.
	MaxAttempts int
	// Elapsed is what this call has spent so far: its requests' time plus the backoff
	// asked for, this Wait included (as RetryPolicy.Budget counts it).
	Elapsed time.Duration
	// Budget is the time this call may spend retrying; 0 when MaxAttempts bounds it.
	Budget time.Duration
	// Handles is how many receipt handles are retried, for a settlement; 0 otherwise.
	Handles int
}

// Fallback is something an older node does not speak, and what the client does instead.
type Fallback uint8

const (
	// FallbackSettleSingles: the node refused a batch ack (400 "receipt_handle
	// required"); handles are settled one per request.
	FallbackSettleSingles Fallback = iota + 1
	// FallbackConsumeSingle: the node ignored max and answered one message; batches
	// hold one message.
	FallbackConsumeSingle
	// FallbackProduceSingles: the node has no batch produce (a plain-text 404);
	// messages are produced one per request.
	FallbackProduceSingles
)

func (f Fallback) String() string {
	switch f {
	case FallbackSettleSingles:
		return "the node refused a batch ack (a node older than v3.1); settling one handle per request"
	case FallbackConsumeSingle:
		return "the node ignored max and answered one message (a node older than v3.1); batches will hold one message"
	case FallbackProduceSingles:
		return "the node has no batch produce (a node older than v3.1); producing one message per request"
	}
	return fmt.Sprintf("Fallback(%d)", uint8(f))
}

// FallbackEvent is a Fallback learned from an answer to Op.
type FallbackEvent struct {
	Op       Op
	Fallback Fallback
}

// hooks is Config.Hooks sorted by what each observes, so that an event nobody
// observes costs nothing to build.
type hooks struct {
	request   []HookRequest
	sent      []HookSent
	answer    []HookAnswer
	transport []HookTransportError
	retry     []HookRetry
	fallback  []HookFallback
}

func newHooks(hs []Hook) (hooks, error) {
	var h hooks
	for _, x := range hs {
		n := 0
		if v, ok := x.(HookRequest); ok {
			h.request, n = append(h.request, v), n+1
		}
		if v, ok := x.(HookSent); ok {
			h.sent, n = append(h.sent, v), n+1
		}
		if v, ok := x.(HookAnswer); ok {
			h.answer, n = append(h.answer, v), n+1
		}
		if v, ok := x.(HookTransportError); ok {
			h.transport, n = append(h.transport, v), n+1
		}
		if v, ok := x.(HookRetry); ok {
			h.retry, n = append(h.retry, v), n+1
		}
		if v, ok := x.(HookFallback); ok {
			h.fallback, n = append(h.fallback, v), n+1
		}
		if n == 0 {
			return hooks{}, fmt.Errorf("hook %T observes nothing (it implements no client.Hook* interface)", x)
		}
	}
	return h, nil
}

// retryEvent is the retry of r after resp, or after err when there was no answer.
func retryEvent(r *request, resp *response, err error) RetryEvent {
	e := RetryEvent{Op: r.op, Err: err, Attempt: r.attempt + 1}
	if resp != nil {
		e.Status, e.Err = resp.status, resp.err(r.op)
	}
	return e
}

// onRetry tells the retry hooks of e, to be made after wait; maxAttempts is 0 for a
// call bounded by the retry budget.
func (c *Client) onRetry(e RetryEvent, wait, elapsed time.Duration, maxAttempts int) {
	if len(c.hooks.retry) == 0 {
		return
	}
	e.Wait, e.Elapsed, e.MaxAttempts = wait, elapsed, maxAttempts
	if maxAttempts == 0 {
		e.Budget = c.retry.Budget
	}
	for _, h := range c.hooks.retry {
		h.OnRetry(e)
	}
}

// learned tells the hooks of a Fallback just learned; callers see that it happens
// once per Client.
func (c *Client) learned(op Op, f Fallback) {
	for _, h := range c.hooks.fallback {
		h.OnFallback(FallbackEvent{Op: op, Fallback: f})
	}
}
