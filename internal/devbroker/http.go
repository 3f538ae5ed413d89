package devbroker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/narad/narad/internal/textenc"
)

type route struct {
	pattern string
	h       http.HandlerFunc
}

// routes is the API of API.md. Unknown paths and methods get the router's own plain-text
// 404 and 405, as on a real node, so a client must cope with a non-JSON error body.
func (b *Broker) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", b.handleHealthz)
	mux.HandleFunc("GET /readyz", b.handleReadyz)
	mux.HandleFunc("GET /metrics", b.handleMetrics)
	// One line per route; requestOp names what Requests counts them under.
	for _, r := range []route{
		{"POST /v1/topics", b.handleCreateTopic},
		{"GET /v1/topics", b.handleListTopics},
		{"GET /v1/topics/{topic}", b.handleTopicInfo},
		{"PATCH /v1/topics/{topic}", b.handleEditTopic},
		{"DELETE /v1/topics/{topic}", b.handleDeleteTopic},
		{"GET /v1/topics/{topic}/schema", b.handleTopicSchema},
		{"POST /v1/topics/{topic}/children", b.handleAttachChild},
		{"GET /v1/topics/{topic}/children", b.handleListChildren},
		{"DELETE /v1/topics/{topic}/children/{child}", b.handleDetachChild},
		{"POST /v1/topics/{topic}/produce", b.handleProduce},
		{"POST /v1/topics/{topic}/produce/batch", b.handleProduceBatch},
		{"GET /v1/topics/{topic}/consume", b.handleConsume},
		{"POST /v1/topics/{topic}/ack", b.handleAck},
		{"GET /v1/cluster/members", b.handleMembers},
		{"GET /v1/cluster/moves", b.handleMoves},
		{"POST /v1/cluster/members/{id}/decommission", b.handleDecommission},
		{"DELETE /v1/cluster/members/{id}/decommission", b.handleCancelDecommission},
		{"POST /v1/cluster/members/{id}/forget", b.handleForget},
	} {
		mux.Handle(r.pattern, b.v1(r.h))
	}
	// With security off a real node has no user routes at all: its router answers 404.
	if b.auth != nil {
		for _, r := range []route{
			{"POST /v1/users", b.handleCreateUser},
			{"GET /v1/users", b.handleListUsers},
			{"GET /v1/users/{name}", b.handleGetUser},
			{"PUT /v1/users/{name}/grants", b.handleSetGrants},
			{"PUT /v1/users/{name}/password", b.handleSetPassword},
			{"DELETE /v1/users/{name}", b.handleDeleteUser},
		} {
			mux.Handle(r.pattern, b.v1(r.h))
		}
	}
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
	case "PATCH /v1/topics/{topic}":
		return OpEditTopic
	case "GET /v1/topics/{topic}/schema":
		return OpTopicSchema
	case "POST /v1/topics/{topic}/children":
		return OpAttachChild
	case "GET /v1/topics/{topic}/children":
		return OpListChildren
	case "DELETE /v1/topics/{topic}/children/{child}":
		return OpDetachChild
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
			// The path is the client's choice (a 404 needs no credentials) and the log is
			// read on a terminal: escaped, so it cannot drive that terminal.
			fmt.Fprintf(b.cfg.Log, "%s %s %s %v\n", r.Method, textenc.Escape(r.URL.Path), status, time.Since(start).Round(time.Microsecond))
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
	t, _, identity, ok = b.topicRequestAs(w, r, op, perm)
	return t, identity, ok
}

// topicRequestAs is topicRequest that also returns the caller (nil with security off).
func (b *Broker) topicRequestAs(w http.ResponseWriter, r *http.Request, op string, perm permission) (t *topic, u *account, identity string, ok bool) {
	b.count(op)
	name := r.PathValue("topic")
	if u, identity, ok = b.authenticate(w, r); !ok {
		return nil, nil, "", false
	}
	t = b.topic(name)
	if !b.permitTopic(w, u, perm, name, t) {
		return nil, nil, "", false
	}
	if t == nil {
		writeNotFound(w, name)
		return nil, nil, "", false
	}
	return t, u, identity, true
}

func (b *Broker) handleProduce(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpProduce, permProduce)
	if !ok {
		return
	}
	name := t.name
	q := r.URL.Query()
	pin := -1
	if s := q.Get("partition"); s != "" {
		p, err := parsePartition(s, t.partitionCount())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		pin = p
	}
	payload, ok := readLimited(w, r, MaxMessageBytes, "message", http.StatusRequestEntityTooLarge)
	if !ok {
		return
	}
	if len(payload) == 0 {
		writeError(w, http.StatusBadRequest, "message required")
		return
	}
	if f, hit := b.faults.decide(OpProduce); hit {
		b.writeFault(w, f)
		return
	}
	key := q.Get("key")
	if _, err := t.produce(newMessage(key, key != "", payload), pin, b.legacy.Load()); err != nil {
		status, text := produceErrorStatus(err, name)
		writeError(w, status, text)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// produceErrorStatus is the answer to a produce topic.produce refused: 404 for a topic
// deleted under it, 409 for a delay child, 400 for a payload its schema refuses.
func produceErrorStatus(err error, topic string) (int, string) {
	var se *statusError
	if errors.As(err, &se) {
		return se.status, se.text
	}
	return http.StatusNotFound, fmt.Sprintf("topic %q not found", topic)
}

// writeErr answers err with the status its kind calls for.
func writeErr(w http.ResponseWriter, err error) {
	var se *statusError
	switch {
	case errors.As(err, &se):
		writeError(w, se.status, se.text)
	case errors.Is(err, ErrTopicExists):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, ErrTopicNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// maxRequestBody bounds the JSON body of the admin routes (topics, users, fan-out).
const maxRequestBody = 1 << 20

// decodeBody reads a JSON body of at most 1 MiB into v, strictly: an unknown field,
// trailing data or a wrong type is a 400, as on a real node. Over the limit it answers
// tooLarge (413 on the topic routes, 400 on the user and attach routes). It answers
// the request itself and returns false when the body is refused.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, tooLarge int) bool {
	raw, ok := readLimited(w, r, maxRequestBody, "request body", tooLarge)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid json: "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalid json: data after the body")
		return false
	}
	return true
}

// readLimited reads a request body of at most limit bytes. A longer one (by its
// Content-Length, or once read) is answered status with "<what> over <limit> bytes",
// a body that cannot be read 400; it answers every refusal itself and returns false.
func readLimited(w http.ResponseWriter, r *http.Request, limit int, what string, status int) ([]byte, bool) {
	// The refusal's text is made only for a refusal: this is every produce's path.
	tooLarge := func() string { return fmt.Sprintf("%s over %d bytes", what, limit) }
	if r.ContentLength > int64(limit) {
		writeError(w, status, tooLarge())
		return nil, false
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		// "request body" reads as "the body" in this message, as it always has.
		writeError(w, http.StatusBadRequest, "reading the "+strings.TrimPrefix(what, "request ")+": "+err.Error())
		return nil, false
	}
	if len(raw) > limit {
		writeError(w, status, tooLarge())
		return nil, false
	}
	return raw, true
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
	name := t.name
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
	raw, ok := readLimited(w, r, MaxAckBodyBytes, "body", http.StatusRequestEntityTooLarge)
	if !ok {
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
		writeNotFound(w, t.name)
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
