package devbroker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"
)

// routes is the API of API.md. Unknown paths and methods get the router's own plain-text
// 404 and 405, as on a real node, so a client must cope with a non-JSON error body.
func (b *Broker) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", b.handleHealthz)
	mux.HandleFunc("GET /readyz", b.handleReadyz)
	mux.Handle("POST /v1/topics", b.v1(b.handleCreateTopic))
	mux.Handle("GET /v1/topics", b.v1(b.handleListTopics))
	mux.Handle("GET /v1/topics/{topic}", b.v1(b.handleTopicInfo))
	mux.Handle("DELETE /v1/topics/{topic}", b.v1(b.handleDeleteTopic))
	mux.Handle("POST /v1/topics/{topic}/produce", b.v1(b.handleProduce))
	mux.Handle("POST /v1/topics/{topic}/produce/batch", b.v1(b.handleProduceBatch))
	mux.Handle("GET /v1/topics/{topic}/consume", b.v1(b.handleConsume))
	mux.Handle("POST /v1/topics/{topic}/ack", b.v1(b.handleAck))
	if b.cfg.Log == nil {
		return mux
	}
	return b.logged(mux)
}

// v1 applies the request-wide faults (latency, reset) to the API routes; health routes
// stay clean so that a harness can still tell the broker is up.
func (b *Broker) v1(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := b.faults.latency(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-b.closing:
				t.Stop()
			}
		}
		if b.faults.reset() {
			if op := requestOp(r); op != "" {
				b.count(op) // the handler that would have counted it does not run
			}
			resetConn(w)
			return
		}
		h(w, r)
	})
}

// requestOp is the operation Requests counts an API request under, as its handler does.
func requestOp(r *http.Request) string {
	switch r.Pattern {
	case "POST /v1/topics/{topic}/produce", "POST /v1/topics/{topic}/produce/batch":
		return OpProduce
	case "GET /v1/topics/{topic}/consume":
		if r.URL.Query().Get("offset") != "" {
			return OpReplay
		}
		return OpConsume
	case "POST /v1/topics/{topic}/ack":
		act, _ := parseExtend(r.URL.Query())
		return actionOps[act]
	case "POST /v1/topics":
		return OpCreateTopic
	case "GET /v1/topics":
		return OpListTopics
	case "GET /v1/topics/{topic}":
		return OpTopicInfo
	case "DELETE /v1/topics/{topic}":
		return OpDeleteTopic
	}
	return ""
}

// resetConn drops the connection without an answer. SO_LINGER 0 makes the close send a
// TCP RST, which is what a client sees when a node dies mid-request.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // not hijackable (HTTP/2, a recorder): abort instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (reset faults hijack it).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (b *Broker) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() {
			status := "reset"
			if sw.status != 0 {
				status = strconv.Itoa(sw.status)
			}
			b.logMu.Lock()
			fmt.Fprintf(b.cfg.Log, "%s %s %s %v\n", r.Method, r.URL.Path, status, time.Since(start).Round(time.Microsecond))
			b.logMu.Unlock()
		}()
		h.ServeHTTP(sw, r)
	})
}

// writeBody answers a JSON body with an explicit Content-Length, as a node does.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON answers v compactly, with the trailing newline of a Go json.Encoder.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own types are encoded here
	}
	writeBody(w, status, append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, text string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{text})
}

func (b *Broker) writeFault(w http.ResponseWriter, f fault) {
	switch {
	case f.status == 0:
		resetConn(w)
	case f.plain:
		body := f.text() + "\n"
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, body)
	default:
		writeError(w, f.status, f.text())
	}
}

func writeNotFound(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("topic %q not found", name))
}

func (b *Broker) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (b *Broker) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if b.ready.Load() {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
}

func parsePartition(s string, n int) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p >= n {
		return 0, fmt.Errorf("partition must be an integer from 0 to %d", n-1)
	}
	return p, nil
}

// topicRequest counts a request on a topic route, checks the caller's grant and finds
// the topic, answering the request itself (401/403/404) when one of those fails.
func (b *Broker) topicRequest(w http.ResponseWriter, r *http.Request, op string, perm permission) (t *topic, identity string, ok bool) {
	b.count(op)
	name := r.PathValue("topic")
	if identity, ok = b.authorize(w, r, perm, name); !ok {
		return nil, "", false
	}
	if t = b.topic(name); t == nil {
		writeNotFound(w, name)
		return nil, "", false
	}
	return t, identity, true
}

func (b *Broker) handleProduce(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpProduce, permProduce)
	if !ok {
		return
	}
	name := t.spec.Name
	q := r.URL.Query()
	pin := -1
	if s := q.Get("partition"); s != "" {
		p, err := parsePartition(s, t.spec.Partitions)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		pin = p
	}
	tooLarge := fmt.Sprintf("message over %d bytes", MaxMessageBytes)
	if r.ContentLength > MaxMessageBytes {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "reading the message: "+err.Error())
		return
	case len(payload) > MaxMessageBytes:
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	case len(payload) == 0:
		writeError(w, http.StatusBadRequest, "message required")
		return
	}
	if f, hit := b.faults.decide(OpProduce); hit {
		b.writeFault(w, f)
		return
	}
	key := q.Get("key")
	if _, err := t.produce(newMessage(key, key != "", payload), pin, b.legacy.Load()); err != nil {
		writeNotFound(w, name)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (b *Broker) handleConsume(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	replay := q.Get("offset") != ""
	op := OpConsume
	if replay {
		op = OpReplay
	}
	t, identity, ok := b.topicRequest(w, r, op, permConsume)
	if !ok {
		return
	}
	name := t.spec.Name
	legacy := b.legacy.Load()
	badRequest := func(text string) { writeError(w, http.StatusBadRequest, text) }

	pin := -1
	if s := q.Get("partition"); s != "" {
		p, err := parsePartition(s, t.spec.Partitions)
		if err != nil {
			badRequest(err.Error())
			return
		}
		pin = p
	}
	var offset int64
	if replay {
		if pin < 0 {
			badRequest("offset requires partition")
			return
		}
		o, err := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err != nil || o < 0 {
			badRequest("offset must be a non-negative integer")
			return
		}
		offset = o
	}
	batch := 0 // 0: the single-message shape
	if s := q.Get("max"); s != "" && !legacy {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil || n < 1 || n > MaxBatch:
			badRequest(fmt.Sprintf("max must be an integer from 1 to %d", MaxBatch))
			return
		case replay:
			badRequest("max cannot be combined with offset")
			return
		case r.Header.Values("X-Narad-Client") == nil:
			// The header forces a CORS preflight (never approved), so a page in a
			// browser holding cached credentials cannot reserve messages.
			badRequest("a batch consume needs the X-Narad-Client header")
			return
		}
		batch = n
	}
	var wait time.Duration
	clamped := false
	if s := q.Get("wait"); s != "" && !replay {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			badRequest(fmt.Sprintf("wait %q must be a duration with a unit, such as 500ms or 10s", s))
			return
		}
		wait = d
		if wait > b.maxWait {
			wait, clamped = b.maxWait, true
		}
	}

	if f, hit := b.faults.decide(op); hit {
		b.writeFault(w, f)
		return
	}
	cost := 1
	if batch > 0 {
		cost = min(batch, b.maxConsumes)
	}
	if !b.limiter.acquire(identity, cost, b.maxConsumes) {
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many concurrent consumes: at most %d per identity", b.maxConsumes))
		return
	}

	if replay {
		m, status, err := t.replay(pin, offset)
		b.limiter.release(identity, cost)
		switch {
		case err != nil:
			writeNotFound(w, name)
		case status == http.StatusGone:
			writeError(w, status, fmt.Sprintf("offset %d is older than the partition's retention", offset))
		case status == http.StatusNoContent:
			w.WriteHeader(status)
		default:
			writeBody(w, http.StatusOK, append(appendMessage(nil, name, pin, m, legacy, nil), '\n'))
		}
		return
	}

	if clamped && !legacy {
		w.Header().Set("X-Narad-Wait-Clamped", b.maxWait.String())
	}
	ds, err := b.await(r.Context(), t, pin, max(batch, 1), wait)
	// Released before answering, so that a client's next consume never finds its own
	// previous one still counted.
	b.limiter.release(identity, cost)
	switch {
	case err != nil:
		writeNotFound(w, name)
		return
	case len(ds) == 0:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body, h []byte
	if batch > 0 {
		body = append(body, `{"messages":[`...)
	}
	for i, d := range ds {
		if i > 0 {
			body = append(body, ',')
		}
		h = appendHandle(h[:0], d.part, d.m.offset, d.nonce)
		body = appendMessage(body, name, d.part, d.m, legacy, h)
	}
	if batch > 0 {
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
		ds, notify, err := t.take(pin, n)
		if err != nil || len(ds) > 0 {
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

// parseExtend reads the extend parameter: absent, empty or "false" is an ack, "true" or
// "1" an extend, "0" a nack; anything else is refused.
func parseExtend(q map[string][]string) (action, bool) {
	v, ok := q["extend"]
	if !ok || len(v) == 0 {
		return actAck, true
	}
	switch v[0] {
	case "", "false":
		return actAck, true
	case "true", "1":
		return actExtend, true
	case "0":
		return actNack, true
	}
	return actAck, false
}

var actionOps = [...]string{actAck: OpAck, actExtend: OpExtend, actNack: OpNack}

type ackResult struct {
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

func (b *Broker) handleAck(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	act, validExtend := parseExtend(q)
	op := actionOps[act]
	t, _, ok := b.topicRequest(w, r, op, permConsume)
	if !ok {
		return
	}
	name := t.spec.Name
	if !validExtend {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("extend %q must be true, 1, 0 or false", q.Get("extend")))
		return
	}
	legacy := b.legacy.Load()
	if legacy && q.Get("receipt_handle") == "" {
		writeError(w, http.StatusBadRequest, "receipt_handle required")
		return
	}
	if q.Has("receipt_handle") {
		h, ok := parseHandle(q.Get("receipt_handle"))
		if !ok {
			writeError(w, http.StatusBadRequest, textMalformed)
			return
		}
		if f, hit := b.faults.decide(op); hit {
			b.writeFault(w, f)
			return
		}
		status, texts, err := t.settle([]handle{h}, nil, act, legacy)
		switch {
		case err != nil:
			writeNotFound(w, name)
		case status[0] == http.StatusNoContent:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeError(w, status[0], texts[0])
		}
		return
	}
	b.handleBatchAck(w, r, t, act, op, legacy)
}

func (b *Broker) handleBatchAck(w http.ResponseWriter, r *http.Request, t *topic, act action, op string, legacy bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeError(w, http.StatusBadRequest, "a batch ack needs Content-Type: application/json")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxAckBodyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if len(raw) > MaxAckBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxAckBodyBytes))
		return
	}
	var body struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	n := len(body.ReceiptHandles)
	if n == 0 || n > MaxBatch {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("receipt_handles must hold 1 to %d handles", MaxBatch))
		return
	}
	results := make([]ackResult, n)
	hs := make([]handle, n)
	skip := make([]bool, n)
	for i, s := range body.ReceiptHandles {
		h, ok := parseHandle(s)
		if !ok {
			results[i], skip[i] = ackResult{http.StatusBadRequest, textMalformed}, true
			continue
		}
		hs[i] = h
		// Each handle is one ack to the fault injector: a fault is that handle's
		// result, as when one partition's owner is unreachable.
		if f, hit := b.faults.decide(op); hit {
			if f.status == 0 {
				resetConn(w) // nothing settled yet, so the whole request had no effect
				return
			}
			results[i], skip[i] = ackResult{f.status, f.text()}, true
		}
	}
	status, texts, err := t.settle(hs, skip, act, legacy)
	if err != nil {
		writeNotFound(w, t.spec.Name)
		return
	}
	for i := range results {
		if !skip[i] {
			results[i] = ackResult{status[i], texts[i]}
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Results []ackResult `json:"results"`
	}{results})
}

// topicJSON is a topic as the API describes it; PartitionStats only from topic info.
type topicJSON struct {
	Name                      string          `json:"name"`
	Partitions                int             `json:"partitions"`
	RetentionMs               int64           `json:"retention_ms"`
	VisibilityTimeoutMs       int64           `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int             `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int             `json:"max_acked_ahead_per_partition"`
	PartitionStats            []partitionJSON `json:"partition_stats,omitempty"`
}

type partitionJSON struct {
	Index         int   `json:"index"`
	OldestOffset  int64 `json:"oldest_offset"`
	NextOffset    int64 `json:"next_offset"`
	HighWatermark int64 `json:"high_watermark"`
	SizeBytes     int64 `json:"size_bytes"`
}

func toTopicJSON(s TopicSpec) topicJSON {
	return topicJSON{
		Name: s.Name, Partitions: s.Partitions, RetentionMs: s.RetentionMs,
		VisibilityTimeoutMs:       s.VisibilityTimeout.Milliseconds(),
		MaxInFlightPerPartition:   s.MaxInFlightPerPartition,
		MaxAckedAheadPerPartition: s.MaxAckedAheadPerPartition,
	}
}

func (b *Broker) handleCreateTopic(w http.ResponseWriter, r *http.Request) {
	b.count(OpCreateTopic)
	u, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	var req struct {
		Name                      string `json:"name"`
		Partitions                int    `json:"partitions"`
		RetentionMs               int64  `json:"retention_ms"`
		VisibilityTimeoutMs       int64  `json:"visibility_timeout_ms"`
		MaxInFlightPerPartition   int    `json:"max_in_flight_per_partition"`
		MaxAckedAheadPerPartition int    `json:"max_acked_ahead_per_partition"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxAckBodyBytes+1))
	if err == nil && len(raw) > MaxAckBodyBytes {
		err = errors.New("body too large")
	}
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if !b.permit(w, u, permCreate, req.Name) {
		return
	}
	if req.VisibilityTimeoutMs < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("visibility_timeout_ms %d: must be positive", req.VisibilityTimeoutMs))
		return
	}
	// Past this the conversion to a Duration wraps, possibly into a lease of a few ms.
	if maxMs := int64(math.MaxInt64 / time.Millisecond); req.VisibilityTimeoutMs > maxMs {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("visibility_timeout_ms %d: must be at most %d", req.VisibilityTimeoutMs, maxMs))
		return
	}
	spec, err := b.createTopic(TopicSpec{
		Name: req.Name, Partitions: req.Partitions, RetentionMs: req.RetentionMs,
		VisibilityTimeout:         time.Duration(req.VisibilityTimeoutMs) * time.Millisecond,
		MaxInFlightPerPartition:   req.MaxInFlightPerPartition,
		MaxAckedAheadPerPartition: req.MaxAckedAheadPerPartition,
	})
	switch {
	case errors.Is(err, ErrTopicExists):
		writeError(w, http.StatusConflict, fmt.Sprintf("topic %q already exists", req.Name))
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusCreated, toTopicJSON(spec))
	}
}

func (b *Broker) handleListTopics(w http.ResponseWriter, r *http.Request) {
	b.count(OpListTopics)
	if _, ok := b.authorize(w, r, permList, ""); !ok {
		return
	}
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	after := ""
	if s := q.Get("page_token"); s != "" {
		tok, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || !validTopicName(string(tok)) {
			writeError(w, http.StatusBadRequest, "page_token is not one this node gave out")
			return
		}
		after = string(tok)
	}
	out := struct {
		Topics        []topicJSON `json:"topics"`
		NextPageToken string      `json:"next_page_token"`
	}{Topics: []topicJSON{}}
	for _, n := range b.topicNames() {
		if n <= after {
			continue
		}
		if len(out.Topics) == limit {
			out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(out.Topics[limit-1].Name))
			break
		}
		if t := b.topic(n); t != nil {
			out.Topics = append(out.Topics, toTopicJSON(t.spec))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleTopicInfo(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpTopicInfo, permRead)
	if !ok {
		return
	}
	name := t.spec.Name
	st, err := t.stats()
	if err != nil {
		writeNotFound(w, name)
		return
	}
	out := toTopicJSON(st.Spec)
	for _, p := range st.Partitions {
		out.PartitionStats = append(out.PartitionStats, partitionJSON{
			Index: p.Index, OldestOffset: p.OldestOffset, NextOffset: p.NextOffset,
			HighWatermark: p.NextOffset, SizeBytes: p.SizeBytes,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleDeleteTopic(w http.ResponseWriter, r *http.Request) {
	b.count(OpDeleteTopic)
	name := r.PathValue("topic")
	if _, ok := b.authorize(w, r, permAdmin, name); !ok {
		return
	}
	if err := b.DeleteTopic(name); err != nil {
		writeNotFound(w, name)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
