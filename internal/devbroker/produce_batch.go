package devbroker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// MaxProduceBatchBody is the largest body of a batch produce on a v3.1 node.
const MaxProduceBatchBody = 1 << 20

// batchMessage is one element of a batch produce body, as API.md gives it.
type batchMessage struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Key             *string         `json:"key"`
	KeyEncoding     string          `json:"key_encoding"`
	Partition       *int            `json:"partition"`
}

// batchRefusal is the first bad message of a batch: the status a single produce of it
// would get and the text after "message <i>: ".
type batchRefusal struct {
	status int
	text   string
}

// handleProduceBatch serves POST /v1/topics/{topic}/produce/batch with the limits of a
// v3.1 node: 1 to 100 messages, a body of at most 1 MiB, every message checked before
// any is stored (the first bad one refuses the whole request, naming it), and
// 202 {"accepted":N} once all are stored. In legacy mode the route does not exist: the
// router's plain-text 404, which a client tells from the JSON "topic not found".
func (b *Broker) handleProduceBatch(w http.ResponseWriter, r *http.Request) {
	if b.legacy.Load() {
		http.NotFound(w, r)
		return
	}
	t, _, ok := b.topicRequest(w, r, OpProduce, permProduce)
	if !ok {
		return
	}
	badRequest := func(text string) { writeError(w, http.StatusBadRequest, text) }
	q := r.URL.Query()
	if q.Has("key") || q.Has("partition") {
		badRequest("key and partition go in each message of a batch, not in the query")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		badRequest("a batch produce needs Content-Type: application/json")
		return
	}
	raw, ok := readLimited(w, r, MaxProduceBatchBody, "body", http.StatusRequestEntityTooLarge)
	if !ok {
		return
	}
	msgs, err := decodeProduceBatch(raw)
	if err != nil {
		badRequest(err.Error())
		return
	}
	ms := make([]*message, len(msgs))
	pins := make([]int, len(msgs))
	for i := range msgs {
		m, pin, refused := checkBatchMessage(&msgs[i], t.partitionCount())
		if refused != nil {
			writeError(w, refused.status, "message "+strconv.Itoa(i)+": "+refused.text)
			return
		}
		// All or nothing: a message a single produce would refuse (a delay child's
		// 409, a schema's 400) refuses the batch before anything is stored.
		if err := t.admit(m.payload); err != nil {
			status, text := produceErrorStatus(err, t.name)
			writeError(w, status, "message "+strconv.Itoa(i)+": "+text)
			return
		}
		ms[i], pins[i] = m, pin
	}
	// One fault decision for the request: a 503 is ambiguous for the whole batch.
	if f, hit := b.faults.decide(OpProduce); hit {
		b.writeFault(w, f)
		return
	}
	legacy := b.legacy.Load()
	for i, m := range ms {
		if _, err := t.produce(m, pins[i], legacy); err != nil {
			// Deleted or changed meanwhile; the messages before it were stored, as a
			// real node's 5xx would leave it ambiguous.
			status, text := produceErrorStatus(err, t.name)
			writeError(w, status, text)
			return
		}
	}
	writeJSON(w, http.StatusAccepted, struct {
		Accepted int `json:"accepted"`
	}{len(ms)})
}

// decodeProduceBatch parses the body strictly: one JSON object, no unknown fields,
// 1 to MaxBatch messages.
func decodeProduceBatch(raw []byte) ([]batchMessage, error) {
	var body struct {
		Messages []batchMessage `json:"messages"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, fmt.Errorf("invalid JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON body: data after the object")
	}
	switch n := len(body.Messages); {
	case n == 0:
		return nil, errors.New("messages required")
	case n > MaxBatch:
		return nil, fmt.Errorf("too many messages: more than %d (max %d)", MaxBatch, MaxBatch)
	}
	return body.Messages, nil
}

// checkBatchMessage turns one element into a message to store and the partition it is
// pinned to (-1: by key or round robin), or says why a single produce of it would fail.
func checkBatchMessage(bm *batchMessage, partitions int) (*message, int, *batchRefusal) {
	bad := func(format string, a ...any) (*message, int, *batchRefusal) {
		return nil, 0, &batchRefusal{http.StatusBadRequest, fmt.Sprintf(format, a...)}
	}
	if len(bm.Payload) == 0 {
		return bad("message required")
	}
	// A JSON value is stored exactly as written: the string "hi" is those 4 bytes.
	payload := []byte(bm.Payload)
	switch bm.PayloadEncoding {
	case "":
	case "base64":
		var err error
		if payload, err = decodeBase64Value(bm.Payload); err != nil {
			return bad("payload: %v", err)
		}
	default:
		return bad("payload_encoding %q: want base64 or none", bm.PayloadEncoding)
	}
	switch {
	case len(payload) == 0:
		return bad("message required")
	case len(payload) > MaxMessageBytes:
		return nil, 0, &batchRefusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("message over %d bytes", MaxMessageBytes)}
	}
	var key string
	if bm.Key != nil {
		key = *bm.Key
	}
	switch bm.KeyEncoding {
	case "":
	case "base64":
		if bm.Key == nil {
			return bad("key_encoding without a key")
		}
		k, err := base64.StdEncoding.DecodeString(key)
		if err != nil {
			return bad("key is not valid base64")
		}
		key = string(k)
	default:
		return bad("key_encoding %q: want base64 or none", bm.KeyEncoding)
	}
	pin := -1
	if bm.Partition != nil {
		if p := *bm.Partition; p < 0 || p >= partitions {
			return bad("partition must be an integer from 0 to %d", partitions-1)
		}
		pin = *bm.Partition
	}
	// An empty key is no key, as in a single produce.
	return newMessage(key, key != "", payload), pin, nil
}

// decodeBase64Value decodes a JSON string holding standard, padded base64.
func decodeBase64Value(raw json.RawMessage) ([]byte, error) {
	// Base64 needs no escapes, so the usual string is decoded where it stands.
	s := []byte(raw)
	if n := len(s); n < 2 || s[0] != '"' || s[n-1] != '"' || bytes.IndexByte(s, '\\') >= 0 {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, errors.New("a base64 payload must be a JSON string")
		}
		s = []byte(str)
	} else {
		s = s[1 : n-1]
	}
	b, err := base64.StdEncoding.AppendDecode(nil, s)
	if err != nil {
		return nil, errors.New("not valid base64")
	}
	return b, nil
}
