package devbroker

import (
	"encoding/json"
	"strings"
	"testing"
)

// topicObj is the part of a topic object the admin tests look at.
type topicObj struct {
	Name                      string          `json:"name"`
	ID                        string          `json:"id"`
	Partitions                int             `json:"partitions"`
	RetentionMs               int64           `json:"retention_ms"`
	VisibilityTimeoutMs       int64           `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int             `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int             `json:"max_acked_ahead_per_partition"`
	CreatedAt                 int64           `json:"created_at"`
	Owner                     string          `json:"owner"`
	Role                      string          `json:"role"`
	Children                  []string        `json:"children"`
	Parent                    string          `json:"parent"`
	AttachEpoch               string          `json:"attach_epoch"`
	FanoutDelayMs             int64           `json:"fanout_delay_ms"`
	AttachOffsets             []int64         `json:"attach_offsets"`
	SchemaVersion             *int            `json:"schema_version"`
	Schema                    json.RawMessage `json:"schema"`
}

func decodeTopic(t *testing.T, r resp, status int) topicObj {
	t.Helper()
	var o topicObj
	if r.status != status || json.Unmarshal(r.body, &o) != nil {
		t.Fatalf("want %d with a topic, got %v", status, r)
	}
	return o
}

func (h *harness) patch(topic, body string) resp {
	h.t.Helper()
	return h.do("PATCH", "/v1/topics/"+topic, []byte(body), "Content-Type", "application/json")
}

func TestEditTopic(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	o := decodeTopic(t, h.patch("orders", `{"retention_ms":7200000}`), 200)
	if o.RetentionMs != 7200000 || o.Partitions != 3 || o.Name != "orders" || o.Role != "standalone" {
		t.Fatalf("after retention: %+v", o)
	}
	o = decodeTopic(t, h.patch("orders", `{"max_in_flight_per_partition":5,"max_acked_ahead_per_partition":6}`), 200)
	if o.MaxInFlightPerPartition != 5 || o.MaxAckedAheadPerPartition != 6 || o.RetentionMs != 7200000 {
		t.Fatalf("after caps: %+v", o)
	}
	// 0 is the node's default, for retention and for the caps; a cap left out keeps its value.
	o = decodeTopic(t, h.patch("orders", `{"retention_ms":0,"max_in_flight_per_partition":0}`), 200)
	if o.RetentionMs != DefaultRetention.Milliseconds() || o.MaxInFlightPerPartition != DefaultMaxInFlight || o.MaxAckedAheadPerPartition != 6 {
		t.Fatalf("after defaults: %+v", o)
	}
	o = decodeTopic(t, h.patch("orders", `{"partitions":5}`), 200)
	if o.Partitions != 5 {
		t.Fatalf("after grow: %+v", o)
	}
	// The new partitions take messages and hand them out.
	h.mustProduce("orders", "partition=4", "p4")
	if m := one(t, h.consume("orders", "partition=4")); m.Partition != 4 || string(m.Payload) != `"p4"` {
		t.Fatalf("consume from a new partition: %+v", m)
	}
	if st := h.stats("orders"); len(st.Partitions) != 5 || st.Spec.Partitions != 5 || st.Spec.MaxAckedAheadPerPartition != 6 {
		t.Fatalf("stats after edits: %+v", st.Spec)
	}
	if n := h.b.Requests(OpEditTopic); n != 4 {
		t.Fatalf("Requests(edit_topic) = %d, want 4", n)
	}
}

func TestEditTopicRefusals(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	for body, want := range map[string]string{
		`{}`:                                   "nothing to change: give at least one of partitions, retention_ms, max_in_flight_per_partition, max_acked_ahead_per_partition or schema",
		`{"visibility_timeout_ms":1000}`:       "visibility_timeout_ms cannot be changed after the topic is created (consumers size their lease extensions on it): create a new topic instead",
		`{"partitions":3}`:                     "partitions 3: must be more than the current 3 (partitions only grow)",
		`{"partitions":2}`:                     "partitions 2: must be more than the current 3 (partitions only grow)",
		`{"partitions":109}`:                   "partitions 109: must be at most 108",
		`{"retention_ms":-1}`:                  "invalid retention_ms -1: must be positive",
		`{"max_in_flight_per_partition":-2}`:   "invalid max_in_flight_per_partition -2: must be positive",
		`{"max_acked_ahead_per_partition":-3}`: "invalid max_acked_ahead_per_partition -3: must be positive",
		`{"schema_base_version":1}`:            "schema_base_version needs schema",
		`{"partitions":"4"}`:                   `invalid json: json: cannot unmarshal string into Go struct field .partitions of type int`,
		`{"name":"other"}`:                     `invalid json: json: unknown field "name"`,
		`{"retention_ms":1}{}`:                 "invalid json: data after the body",
	} {
		wantError(t, h.patch("orders", body), 400, want)
	}
	wantErrorPrefix(t, h.patch("orders", `not json`), 400, "invalid json: ")
	wantError(t, h.patch("nope", `{"partitions":4}`), 404, `topic "nope" not found`)
	wantError(t, h.patch("orders", strings.Repeat(" ", maxRequestBody+1)), 413, "request body over 1048576 bytes")
	st := h.stats("orders").Spec
	if st.Partitions != 3 || st.RetentionMs != DefaultRetention.Milliseconds() || st.MaxInFlightPerPartition != DefaultMaxInFlight {
		t.Fatalf("a refused edit changed the topic: %+v", st)
	}
}

// Fields apply one after another, as on a real node: a refused group leaves the groups
// before it applied.
func TestEditTopicNotATransaction(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	wantError(t, h.patch("orders", `{"retention_ms":7200000,"max_in_flight_per_partition":9,"partitions":2}`), 400,
		"partitions 2: must be more than the current 3 (partitions only grow)")
	if st := h.stats("orders").Spec; st.RetentionMs != 7200000 || st.MaxInFlightPerPartition != 9 || st.Partitions != 3 {
		t.Fatalf("after a partly applied edit: %+v", st)
	}
}

// A raised max_in_flight frees a partition at its cap at once: a waiting consumer gets
// the message without another produce.
func TestEditTopicRaisedCapWakesWaiters(t *testing.T) {
	h := startTopic(t, TopicSpec{MaxInFlightPerPartition: 1})
	h.mustProduce("orders", "partition=0", "a")
	h.mustProduce("orders", "partition=0", "b")
	one(t, h.consume("orders", "partition=0"))
	waiter := async(func() resp { return h.consume("orders", "partition=0&wait=10s") })
	h.waitForWaiters(1)
	decodeTopic(t, h.patch("orders", `{"max_in_flight_per_partition":2}`), 200)
	if m := one(t, <-waiter); string(m.Payload) != `"b"` {
		t.Fatalf("waiter got %+v", m)
	}
}

func TestEditTopicAuth(t *testing.T) {
	h := start(t, Config{
		Topics: []TopicSpec{{Name: "orders"}},
		Users: []User{
			mustUser(t, "root:toor:admin"),
			mustUser(t, "app:pw:consume:orders*,create:mine*"),
		},
	})
	wantError(t, h.patch("orders", `{"partitions":4}`), 401, "authentication required")
	h.user, h.pass = "app", "pw"
	// A consume grant reads a topic but does not manage it.
	wantError(t, h.patch("orders", `{"partitions":4}`), 403, `user "app" lacks the admin grant and does not own topic "orders"`)
	// A grant is checked before existence.
	wantError(t, h.patch("nope", `{"partitions":4}`), 403, `user "app" lacks the admin grant and does not own topic "nope"`)
	// The creator owns a topic and manages it without admin.
	if o := decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"mine-1"}`)), 201); o.Owner != "app" || o.Role != "" {
		t.Fatalf("created: %+v", o)
	}
	decodeTopic(t, h.patch("mine-1", `{"partitions":4}`), 200)
	if o := decodeTopic(t, h.do("GET", "/v1/topics/mine-1", nil), 200); o.Owner != "app" || o.Partitions != 4 || o.Role != "standalone" {
		t.Fatalf("info: %+v", o)
	}
	wantEmpty(t, h.do("DELETE", "/v1/topics/mine-1", nil), 204)
	h.user, h.pass = "root", "toor"
	decodeTopic(t, h.patch("orders", `{"partitions":4}`), 200)
}

func TestTopicCreatedAtAndID(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now})
	a := decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders"}`)), 201)
	if a.CreatedAt != clock.Now().Unix() || len(a.ID) != 16 || a.Owner != "" {
		t.Fatalf("created: %+v", a)
	}
	// Created again under the name, a topic is a new incarnation.
	wantEmpty(t, h.do("DELETE", "/v1/topics/orders", nil), 204)
	clock.Advance(90e9)
	b := decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders"}`)), 201)
	if b.ID == a.ID || b.CreatedAt != a.CreatedAt+90 {
		t.Fatalf("recreated: %+v after %+v", b, a)
	}
}
