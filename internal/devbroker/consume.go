package devbroker

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// consumeRequest is a consume's query, checked: what parseConsume hands to serveReplay
// or serveConsume.
type consumeRequest struct {
	pin     int   // partition=, -1 when absent
	offset  int64 // offset=, replay only
	replay  bool
	batch   int // max=, 0 for the single-message shape
	wait    time.Duration
	clamped bool // wait was cut to the node's cap
}

func (b *Broker) handleConsume(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	op := OpConsume
	if q.Get("offset") != "" {
		op = OpReplay
	}
	t, identity, ok := b.topicRequest(w, r, op, permConsume)
	if !ok {
		return
	}
	legacy := b.legacy.Load()
	req, err := b.parseConsume(q, r.Header, t.partitionCount(), legacy)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if f, hit := b.faults.decide(op); hit {
		b.writeFault(w, f)
		return
	}
	if l := t.parentLink(); l != nil && l.delay > 0 {
		l.pump() // copies that came due since the last timer fired (a test's clock moves by hand)
	}
	cost := 1
	if req.batch > 0 {
		cost = min(req.batch, b.maxConsumes)
	}
	if !b.limiter.acquire(identity, cost, b.maxConsumes) {
		// A slot comes back as soon as one of this identity's consumes ends.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many concurrent consumes: at most %d per identity", b.maxConsumes))
		return
	}
	// Released before answering, so that a client's next consume never finds its own
	// previous one still counted.
	release := func() { b.limiter.release(identity, cost) }
	if req.replay {
		b.serveReplay(w, t, req, legacy, release)
		return
	}
	b.serveConsume(w, r.Context(), t, req, legacy, release)
}

// parseConsume checks a consume's query against a topic of partitions partitions. An
// older node ignores max; every other rule holds for both.
func (b *Broker) parseConsume(q url.Values, h http.Header, partitions int, legacy bool) (consumeRequest, error) {
	req := consumeRequest{pin: -1, replay: q.Get("offset") != ""}
	if s := q.Get("partition"); s != "" {
		p, err := parsePartition(s, partitions)
		if err != nil {
			return req, err
		}
		req.pin = p
	}
	if req.replay {
		if req.pin < 0 {
			return req, fmt.Errorf("offset requires partition")
		}
		o, err := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err != nil || o < 0 {
			return req, fmt.Errorf("offset must be a non-negative integer")
		}
		req.offset = o
	}
	if s := q.Get("max"); s != "" && !legacy {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil || n < 1 || n > MaxBatch:
			return req, fmt.Errorf("max must be an integer from 1 to %d", MaxBatch)
		case req.replay:
			return req, fmt.Errorf("max cannot be combined with offset")
		case h.Values("X-Narad-Client") == nil:
			// The header forces a CORS preflight (never approved), so a page in a
			// browser holding cached credentials cannot reserve messages.
			return req, fmt.Errorf("a batch consume needs the X-Narad-Client header")
		}
		req.batch = n
	}
	if s := q.Get("wait"); s != "" && !req.replay {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return req, fmt.Errorf("wait %q must be a duration with a unit, such as 500ms or 10s", s)
		}
		req.wait = d
		if req.wait > b.maxWait {
			req.wait, req.clamped = b.maxWait, true
		}
	}
	return req, nil
}

// serveReplay answers a read by position: no lease, no wait. release is as for
// serveConsume.
func (b *Broker) serveReplay(w http.ResponseWriter, t *topic, req consumeRequest, legacy bool, release func()) {
	m, status, err := t.replay(req.pin, req.offset)
	release()
	switch {
	case err != nil:
		writeNotFound(w, t.name)
	case status == http.StatusGone:
		writeError(w, status, fmt.Sprintf("offset %d is older than the partition's retention", req.offset))
	case status == http.StatusNoContent:
		w.WriteHeader(status)
	default:
		writeBody(w, http.StatusOK, append(appendMessage(nil, t.name, req.pin, m, legacy, nil), '\n'))
	}
}

// serveConsume leases up to max(batch, 1) messages, long-polling up to the wait, and
// answers them. release frees the caller's consume slots once the messages are taken.
func (b *Broker) serveConsume(w http.ResponseWriter, ctx context.Context, t *topic, req consumeRequest, legacy bool, release func()) {
	if req.clamped && !legacy {
		w.Header().Set("X-Narad-Wait-Clamped", b.maxWait.String())
	}
	ds, err := b.await(ctx, t, req.pin, max(req.batch, 1), req.wait)
	release()
	switch {
	case err != nil:
		writeNotFound(w, t.name)
		return
	case len(ds) == 0:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body, h []byte
	if req.batch > 0 {
		body = append(body, `{"messages":[`...)
	}
	for i, d := range ds {
		if i > 0 {
			body = append(body, ',')
		}
		h = appendHandle(h[:0], d.part, d.m.offset, d.nonce)
		body = appendMessage(body, t.name, d.part, d.m, legacy, h)
	}
	if req.batch > 0 {
		body = append(body, "]}"...)
	}
	writeBody(w, http.StatusOK, append(body, '\n'))
}

// await takes up to n messages, long-polling up to wait. No lock is held while it waits:
// it sleeps on the topic's notification channel, which a produce, a nack, an ack or a
// lease expiry closes.
func (b *Broker) await(ctx context.Context, t *topic, pin, n int, wait time.Duration) ([]delivery, error) {
	deadline := time.Now().Add(wait)
	var timer *time.Timer
	for {
		ds, notify, err := t.take(ctx, pin, n)
		if err != nil || len(ds) > 0 || notify == nil {
			return ds, err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, nil
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
			defer timer.Stop()
		}
		b.waiters.Add(1)
		select {
		case <-notify:
		case <-timer.C: // one last look, then 204
		case <-ctx.Done():
			b.waiters.Add(-1)
			return nil, nil
		case <-b.closing:
			b.waiters.Add(-1)
			return nil, nil
		}
		b.waiters.Add(-1)
	}
}
