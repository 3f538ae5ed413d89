package replay

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// Matcher decides which messages a read shows (--filter, --grep) and counts what it
// was asked about. Both set: a message must pass both. It is used from one
// goroutine (the read's, through Options.Match).
type Matcher struct {
	// Filter keeps a message when a result of the expression on it (the message as
	// -o json shows it) is neither false nor null, as jq's select does. An expression that fails on a
	// message does not keep it: in a topic of mixed payloads, `.payload.status ==
	// "failed"` fails on every text message, and those are not the failed orders.
	Filter *render.JQ
	// Grep keeps a message whose key or payload, as text, it matches: a JSON payload
	// as its bytes, a text payload as its text. A binary payload or key never matches.
	Grep *regexp.Regexp

	// Read and Matched count the messages asked about and kept; Filtered those the
	// filter ran on (the ones --grep, if any, let through), Errors those it failed on,
	// the first of which is FirstErr.
	Read, Matched, Filtered, Errors int64
	FirstErr                        error

	// failed is Errors for a watch from another goroutine while the read runs
	// (FailedNow): the field is the read's own.
	failed atomic.Int64

	buf []byte
}

// FailedNow is how many messages the filter failed on so far, safe to ask from any
// goroutine while the read runs (the waiting line of a follow that matches nothing
// says it).
func (mt *Matcher) FailedNow() int64 { return mt.failed.Load() }

// Match reports whether m is kept, and counts it. ctx's end stops a filter that goes
// on and on (the read is ending: m is not kept, and the filter did not fail on it).
func (mt *Matcher) Match(ctx context.Context, m *client.Message) bool {
	mt.Read++
	ok := (mt.Grep == nil || mt.grep(m)) && (mt.Filter == nil || mt.filter(ctx, m))
	if ok {
		mt.Matched++
	}
	return ok
}

// FilterFailedAll reports a filter that failed on every message it ran on (at least
// one): an expression wrong for the data (`.a.b` on text payloads), not a topic of
// mixed payloads where it fails on some.
func (mt *Matcher) FilterFailedAll() bool {
	return mt != nil && mt.Errors > 0 && mt.Errors == mt.Filtered
}

func (mt *Matcher) filter(ctx context.Context, m *client.Message) bool {
	mt.Filtered++
	v, err := render.MessageValue(m)
	if err == nil {
		var ok bool
		if ok, err = mt.Filter.Truthy(ctx, v); err == nil {
			return ok
		}
		if ctx.Err() != nil {
			mt.Filtered--
			return false
		}
	}
	mt.Errors++
	mt.failed.Store(mt.Errors)
	if mt.FirstErr == nil {
		mt.FirstErr = fmt.Errorf("p%d @%d: %w", m.Partition, m.Offset, err)
	}
	return false
}

func (mt *Matcher) grep(m *client.Message) bool {
	if m.Key != nil && m.KeyEncoding == "" && mt.Grep.MatchString(*m.Key) {
		return true
	}
	kind, err := m.PayloadKind()
	switch {
	case err != nil || kind == client.PayloadBinary:
		return false
	case kind == client.PayloadJSON:
		return mt.Grep.Match(m.Payload)
	}
	b, _, err := m.AppendPayload(mt.buf[:0])
	if err != nil {
		return false
	}
	mt.buf = b
	return mt.Grep.Match(b)
}
