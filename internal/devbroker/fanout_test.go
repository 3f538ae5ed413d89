package devbroker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func (h *harness) attach(parent, body string) resp {
	h.t.Helper()
	return h.do("POST", "/v1/topics/"+parent+"/children", []byte(body), "Content-Type", "application/json")
}

type childRow struct {
	Name        string `json:"name"`
	DelayMs     int64  `json:"delay_ms"`
	LagMessages int64  `json:"lag_messages"`
	LagComplete bool   `json:"lag_complete"`
}

func (h *harness) children(parent string) []childRow {
	h.t.Helper()
	r := h.do("GET", "/v1/topics/"+parent+"/children", nil)
	var out struct {
		Parent   string     `json:"parent"`
		Children []childRow `json:"children"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &out) != nil || out.Parent != parent || out.Children == nil {
		h.t.Fatalf("children of %s: %v", parent, r)
	}
	return out.Children
}

// mustCreate creates topics from Go.
func mustCreate(t *testing.T, b *Broker, specs ...TopicSpec) {
	t.Helper()
	for _, s := range specs {
		if err := b.CreateTopic(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A child gets a copy of every message committed to its parent after the attach, with
// the same key and payload; nothing from before; nothing after the detach.
func TestFanoutCopies(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "orders"}, {Name: "audit", Partitions: 5}}})
	h.mustProduce("orders", "key=k0", "before")
	p := decodeTopic(t, h.attach("orders", `{"child":"audit"}`), 200)
	if p.Name != "orders" || p.Role != "parent" || strings.Join(p.Children, ",") != "audit" {
		t.Fatalf("attach answered %+v", p)
	}
	wantBody(t, h.do("GET", "/v1/topics/orders/children", nil), 200,
		`{"parent":"orders","children":[{"name":"audit","delay_ms":0,"lag_messages":0,"lag_complete":true}]}`+"\n")
	c := decodeTopic(t, h.do("GET", "/v1/topics/audit", nil), 200)
	if c.Role != "child" || c.Parent != "orders" || len(c.AttachEpoch) != 16 || c.FanoutDelayMs != 0 ||
		fmt.Sprint(c.AttachOffsets) != fmt.Sprint(offsetsOf(h.stats("orders"))) || c.Partitions != 5 {
		t.Fatalf("child: %+v", c)
	}

	h.mustProduce("orders", "key=k1", `{"a":1}`)
	h.mustProduce("orders", "", "keyless")
	h.mustProduce("orders", "partition=2", "\xff\x00")
	// The copies are there once the parent's 202 is: no waiting.
	got := map[string]string{}
	for range 3 {
		m := one(t, h.consume("audit", ""))
		key := "-"
		if m.Key != nil {
			key = *m.Key
			if want := PartitionForKey(key, 5); m.Partition != want {
				t.Errorf("copy of key %s in partition %d, want %d (the child's own routing)", key, m.Partition, want)
			}
		}
		got[key+" "+m.PayloadEncoding] = string(m.Payload)
		wantEmpty(t, h.ack("audit", m.ReceiptHandle, ""), 204)
	}
	if want := map[string]string{"k1 ": `{"a":1}`, "- ": `"keyless"`, "- base64": `"/wA="`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("copies %v, want %v", got, want)
	}
	wantEmpty(t, h.consume("audit", ""), 204) // "before" was not copied
	if n := h.stats("orders").Messages(); n != 4 {
		t.Fatalf("the parent holds %d messages, want its own 4", n)
	}

	wantEmpty(t, h.do("DELETE", "/v1/topics/orders/children/audit", nil), 204)
	h.mustProduce("orders", "", "after")
	wantEmpty(t, h.consume("audit", ""), 204)
	if c := decodeTopic(t, h.do("GET", "/v1/topics/audit", nil), 200); c.Role != "standalone" || c.Parent != "" {
		t.Fatalf("detached child: %+v", c)
	}
	if p := decodeTopic(t, h.do("GET", "/v1/topics/orders", nil), 200); p.Role != "standalone" || p.Children != nil {
		t.Fatalf("parent after detach: %+v", p)
	}
	wantBody(t, h.do("GET", "/v1/topics/orders/children", nil), 200, `{"parent":"orders","children":[]}`+"\n")
	// A child detached keeps its data and takes produces of its own.
	h.mustProduce("audit", "", "own")
	if n := h.stats("audit").Messages(); n != 4 {
		t.Fatalf("detached child holds %d messages, want 4", n)
	}
	for op, n := range map[string]int{OpAttachChild: 1, OpListChildren: 2, OpDetachChild: 1} {
		if got := h.b.Requests(op); got != n {
			t.Errorf("Requests(%s) = %d, want %d", op, got, n)
		}
	}
}

func offsetsOf(st TopicStats) []int64 {
	var out []int64
	for _, p := range st.Partitions {
		out = append(out, p.NextOffset)
	}
	return out
}

// A delay child gets each copy only once the parent's commit time plus the delay has
// passed on the broker's clock; until then the copies count as lag.
func TestFanoutDelayChild(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{{Name: "orders-retry-30s"}, {Name: "orders-retry-30s-run"}}})
	decodeTopic(t, h.attach("orders-retry-30s", `{"child":"orders-retry-30s-run","delay_ms":30000}`), 200)
	if c := decodeTopic(t, h.do("GET", "/v1/topics/orders-retry-30s-run", nil), 200); c.FanoutDelayMs != 30000 || c.Role != "child" {
		t.Fatalf("delay child: %+v", c)
	}
	h.mustProduce("orders-retry-30s", "key=a", "one")
	clock.Advance(10 * time.Second)
	h.mustProduce("orders-retry-30s", "key=b", "two")
	wantEmpty(t, h.consume("orders-retry-30s-run", ""), 204)
	if rows := h.children("orders-retry-30s"); len(rows) != 1 || rows[0] != (childRow{"orders-retry-30s-run", 30000, 2, true}) {
		t.Fatalf("children: %+v", rows)
	}
	clock.Advance(20*time.Second - time.Millisecond)
	wantEmpty(t, h.consume("orders-retry-30s-run", ""), 204) // never early
	clock.Advance(time.Millisecond)
	m := one(t, h.consume("orders-retry-30s-run", ""))
	if string(m.Payload) != `"one"` || *m.Key != "a" || m.Timestamp != clock.Now().Unix() {
		t.Fatalf("first copy %+v", m)
	}
	wantEmpty(t, h.consume("orders-retry-30s-run", ""), 204)
	if rows := h.children("orders-retry-30s"); rows[0].LagMessages != 1 {
		t.Fatalf("lag after one copy: %+v", rows)
	}
	clock.Advance(10 * time.Second)
	if m := one(t, h.consume("orders-retry-30s-run", "")); string(m.Payload) != `"two"` {
		t.Fatalf("second copy %+v", m)
	}
	if rows := h.children("orders-retry-30s"); rows[0].LagMessages != 0 {
		t.Fatalf("lag after both copies: %+v", rows)
	}
	// Only the parent feeds a delay child.
	wantError(t, h.produce("orders-retry-30s-run", "", "direct"), 409, "direct produce to a delayed child topic is not allowed")
	if _, _, err := h.b.Produce("orders-retry-30s-run", "", []byte("direct")); !errors.Is(err, ErrConflict) {
		t.Fatalf("Broker.Produce into a delay child: %v", err)
	}
	// An immediate child still takes produces of its own.
	mustCreate(t, h.b, TopicSpec{Name: "tap"})
	decodeTopic(t, h.attach("orders-retry-30s", `{"child":"tap"}`), 200)
	h.mustProduce("tap", "", "own")
}

// With the real clock, a timer delivers a delayed copy: a consumer long-polling on the
// child gets it without any other request.
func TestFanoutDelayChildTimer(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "parent"}, {Name: "later"}}})
	if err := h.b.Attach("parent", "later", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waiter := async(func() resp { return h.consume("later", "wait=10s") })
	h.waitForWaiters(1)
	h.mustProduce("parent", "", "late")
	if m := one(t, <-waiter); string(m.Payload) != `"late"` {
		t.Fatalf("delayed copy %+v", m)
	}
}

func TestFanoutCreateChild(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "orders", Partitions: 6}}})
	c := decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders-run","parent":"orders","fanout_delay_ms":86400000}`)), 201)
	if c.Role != "child" || c.Parent != "orders" || c.FanoutDelayMs != 86400000 || c.Partitions != 6 || len(c.AttachOffsets) != 6 {
		t.Fatalf("created child: %+v", c)
	}
	c = decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders-tap","parent":"orders","partitions":3}`)), 201)
	if c.Partitions != 3 || c.FanoutDelayMs != 0 {
		t.Fatalf("created immediate child: %+v", c)
	}
	if p := decodeTopic(t, h.do("GET", "/v1/topics/orders", nil), 200); strings.Join(p.Children, ",") != "orders-run,orders-tap" {
		t.Fatalf("children in attach order: %+v", p.Children)
	}
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"x","parent":"nope"}`)), 404, `parent topic "nope" not found`)
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"x","fanout_delay_ms":5}`)), 400, "fanout_delay_ms needs parent")
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"x","parent":"orders","fanout_delay_ms":31536000001}`)), 400,
		"delay_ms 31536000001: must be from 0 to 31536000000 (one year)")
	// A refused attach creates nothing: a child cannot be a parent.
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"x","parent":"orders-tap"}`)), 409,
		`topic "orders-tap" is a child of "orders": a child cannot have children of its own`)
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders-tap","parent":"orders"}`)), 409, `topic "orders-tap" already exists`)
	if names := strings.Join(h.b.topicNames(), ","); names != "orders,orders-run,orders-tap" {
		t.Fatalf("topics after refusals: %s", names)
	}
}

func TestFanoutRefusals(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{
		{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "short", RetentionMs: 3_600_000},
	}})
	for body, want := range map[string]string{
		`{}`:                                "child required",
		`{"child":""}`:                      "child required",
		`{"child":"a"}`:                     `topic "a" cannot be attached to itself`,
		`{"child":"b","delay_ms":-1}`:       "delay_ms -1: must be from 0 to 31536000000 (one year)",
		`{"child":"b","delay_ms":1e12}`:     "invalid json: json: cannot unmarshal number 1e12 into Go struct field .delay_ms of type int64",
		`{"child":"b","fanout_delay_ms":5}`: `invalid json: json: unknown field "fanout_delay_ms"`,
	} {
		wantError(t, h.attach("a", body), 400, want)
	}
	wantError(t, h.attach("a", `{"child":"b","delay_ms":31536000001}`), 400, "delay_ms 31536000001: must be from 0 to 31536000000 (one year)")
	wantError(t, h.attach("a", strings.Repeat(" ", maxRequestBody+1)), 400, "request body over 1048576 bytes")
	wantError(t, h.attach("nope", `{"child":"b"}`), 404, `topic "nope" not found`)
	wantError(t, h.attach("a", `{"child":"nope"}`), 404, `topic "nope" not found`)
	wantError(t, h.do("DELETE", "/v1/topics/a/children/b", nil), 404, `topic "b" is not a child of "a"`)
	wantError(t, h.do("DELETE", "/v1/topics/nope/children/b", nil), 404, `topic "nope" not found`)
	wantError(t, h.do("DELETE", "/v1/topics/a/children/nope", nil), 404, `topic "nope" not found`)
	wantError(t, h.do("GET", "/v1/topics/nope/children", nil), 404, `topic "nope" not found`)

	decodeTopic(t, h.attach("a", `{"child":"b"}`), 200)
	// One parent per child; a child has no children; so there are no cycles.
	wantError(t, h.attach("c", `{"child":"b"}`), 409, `topic "b" is already a child of "a": a child has one parent`)
	wantError(t, h.attach("a", `{"child":"b"}`), 409, `topic "b" is already a child of "a": a child has one parent`)
	wantError(t, h.attach("b", `{"child":"a"}`), 409, `topic "a" has children: a child cannot have children of its own`)
	wantError(t, h.attach("b", `{"child":"c"}`), 409, `topic "b" is a child of "a": a child cannot have children of its own`)
	wantError(t, h.attach("d", `{"child":"a"}`), 409, `topic "a" has children: a child cannot have children of its own`)
	// The parent's retention must hold the delay plus an hour, at the attach and after.
	wantError(t, h.attach("short", `{"child":"d","delay_ms":1}`), 409,
		`the retention of "short" (3600000 ms) cannot hold a delay of 1 ms: a parent keeps messages for at least the delay plus one hour`)
	decodeTopic(t, h.attach("short", `{"child":"d"}`), 200) // an immediate child needs no retention
	wantError(t, h.attach("c", `{"child":"short"}`), 409, `topic "short" has children: a child cannot have children of its own`)
	if rows := h.children("c"); len(rows) != 0 {
		t.Fatalf("children of c: %+v", rows)
	}
}

func TestFanoutRetentionAndDelay(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "p"}, {Name: "slow"}}})
	decodeTopic(t, h.attach("p", `{"child":"slow","delay_ms":3600000}`), 200)
	wantError(t, h.patch("p", `{"retention_ms":7199999}`), 409,
		`retention_ms 7199999 is too short for delay child "slow": a parent keeps messages for at least the delay (3600000 ms) plus one hour`)
	decodeTopic(t, h.patch("p", `{"retention_ms":7200000}`), 200)
}

func TestFanoutMaxChildren(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "p"}}})
	for i := range MaxChildren {
		mustCreate(t, h.b, TopicSpec{Name: fmt.Sprintf("c%d", i), Parent: "p"})
	}
	mustCreate(t, h.b, TopicSpec{Name: "one-more"})
	wantError(t, h.attach("p", `{"child":"one-more"}`), 409, `topic "p" has 108 children, the most a parent takes`)
}

// A child adopts its parent's schema history and follows it while attached.
func TestFanoutSchemas(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{
		{Name: "p", Schema: `{"type":"object"}`}, {Name: "c"}, {Name: "other", Schema: `{"type":"array"}`},
		{Name: "plain"},
	}})
	decodeTopic(t, h.attach("p", `{"child":"c"}`), 200)
	wantBody(t, h.do("GET", "/v1/topics/c/schema", nil), 200, `{"topic":"c","version":1,"versions":[{"version":1,"schema":{"type":"object"}}]}`+"\n")
	decodeTopic(t, h.patch("p", `{"schema":true}`), 200)
	if o := decodeTopic(t, h.do("GET", "/v1/topics/c", nil), 200); *o.SchemaVersion != 2 || string(o.Schema) != "true" {
		t.Fatalf("child after the parent's change: %+v", o)
	}
	wantError(t, h.patch("c", `{"schema":{"type":"object"}}`), 409, `topic "c" is a child of "p", whose schema it follows: change the parent's`)
	wantError(t, h.attach("p", `{"child":"other"}`), 409, `the schema histories of "other" and "p" differ: a child must have its parent's history`)
	wantError(t, h.attach("plain", `{"child":"other"}`), 409, `topic "other" has a schema and "plain" has none: a child with a schema cannot go under a parent without one`)
	// Detached, a child keeps its history and manages it again.
	wantEmpty(t, h.do("DELETE", "/v1/topics/p/children/c", nil), 204)
	if o := decodeTopic(t, h.patch("c", `{"schema":{"type":"object"}}`), 200); *o.SchemaVersion != 3 {
		t.Fatalf("detached child's new version: %+v", o)
	}
}

// Deleting a topic removes its links: its children stay, standalone.
func TestFanoutDelete(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "p"}, {Name: "c1"}, {Name: "c2"}}})
	decodeTopic(t, h.attach("p", `{"child":"c1"}`), 200)
	decodeTopic(t, h.attach("p", `{"child":"c2","delay_ms":1000}`), 200)
	wantEmpty(t, h.do("DELETE", "/v1/topics/c1", nil), 204)
	if rows := h.children("p"); len(rows) != 1 || rows[0].Name != "c2" {
		t.Fatalf("children after deleting c1: %+v", rows)
	}
	h.mustProduce("p", "", "m") // nothing to copy into a deleted child
	wantEmpty(t, h.do("DELETE", "/v1/topics/p", nil), 204)
	if o := decodeTopic(t, h.do("GET", "/v1/topics/c2", nil), 200); o.Role != "standalone" {
		t.Fatalf("child of a deleted parent: %+v", o)
	}
	h.mustProduce("c2", "", "now standalone")
}

// Partitions added to a parent are copied from their first message.
func TestFanoutParentGrows(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "p"}, {Name: "c"}}})
	decodeTopic(t, h.attach("p", `{"child":"c"}`), 200)
	decodeTopic(t, h.patch("p", `{"partitions":4}`), 200)
	h.mustProduce("p", "partition=3", "new partition")
	if m := one(t, h.consume("c", "")); string(m.Payload) != `"new partition"` {
		t.Fatalf("copy %+v", m)
	}
}

// Linking needs the right to manage the topics: ownership (the creator) or admin.
// Listing needs any grant on the parent.
func TestFanoutAuth(t *testing.T) {
	h := start(t, Config{
		Topics: []TopicSpec{{Name: "orders"}},
		Users: []User{
			mustUser(t, "root:toor:admin"),
			mustUser(t, "app:pw:create:app-*,consume:orders"),
		},
	})
	wantError(t, h.attach("orders", `{"child":"x"}`), 401, "authentication required")
	h.user, h.pass = "app", "pw"
	decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"app-a"}`)), 201)
	decodeTopic(t, h.do("POST", "/v1/topics", []byte(`{"name":"app-b"}`)), 201)
	decodeTopic(t, h.attach("app-a", `{"child":"app-b"}`), 200)
	wantError(t, h.attach("orders", `{"child":"app-a"}`), 403, `user "app" lacks the admin grant and does not own topic "orders"`)
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"app-c","parent":"orders"}`)), 403,
		`user "app" lacks the admin grant and does not own topic "orders"`)
	if rows := h.children("orders"); len(rows) != 0 {
		t.Fatalf("children: %+v", rows)
	}
	h.user, h.pass = "root", "toor"
	wantError(t, h.attach("orders", `{"child":"app-b"}`), 409, `topic "app-b" is already a child of "app-a": a child has one parent`)
	mustCreate(t, h.b, TopicSpec{Name: "orders-audit"})
	decodeTopic(t, h.attach("orders", `{"child":"orders-audit"}`), 200)
	h.user, h.pass = "app", "pw"
	// app owns neither orders nor orders-audit.
	wantError(t, h.do("DELETE", "/v1/topics/orders/children/orders-audit", nil), 403,
		`user "app" lacks the admin grant and does not own topic "orders-audit"`)
	// Owning either topic is enough to detach.
	wantEmpty(t, h.do("DELETE", "/v1/topics/app-a/children/app-b", nil), 204)
}

// Concurrent produces into a parent, with links changing under them: every message
// committed while a link stands is copied once, and one key's copies keep the parent's
// order.
func TestFanoutConcurrent(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{
		{Name: "p", Partitions: 7}, {Name: "now"}, {Name: "later", Partitions: 4}, {Name: "flap"},
	}})
	if err := h.b.Attach("p", "now", 0); err != nil {
		t.Fatal(err)
	}
	if err := h.b.Attach("p", "later", time.Minute); err != nil {
		t.Fatal(err)
	}
	const producers, each = 4, 150
	done := make(chan struct{})
	flapped := async(func() int {
		n := 0
		for {
			select {
			case <-done:
				return n
			default:
			}
			if err := h.b.Attach("p", "flap", 0); err != nil {
				t.Error(err)
				return n
			}
			if err := h.b.Detach("p", "flap"); err != nil {
				t.Error(err)
				return n
			}
			n++
		}
	})
	var results []<-chan error
	for g := range producers {
		results = append(results, async(func() error {
			for i := range each {
				key := fmt.Sprintf("k%d", g)
				if _, _, err := h.b.Produce("p", key, []byte(fmt.Sprint(i))); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	for _, r := range results {
		if err := <-r; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	<-flapped
	if n := h.stats("now").Messages(); n != producers*each {
		t.Fatalf("immediate child holds %d copies, want %d", n, producers*each)
	}
	if n := h.stats("later").Messages(); n != 0 {
		t.Fatalf("delay child holds %d copies before the delay", n)
	}
	clock.Advance(time.Minute)
	wantEmpty(t, h.consume("later", "partition=0&offset=1000000"), 204) // a replay copies what came due
	if n := h.stats("later").Messages(); n != producers*each {
		t.Fatalf("delay child holds %d copies after the delay, want %d", n, producers*each)
	}
	// Per key, the copies are in the order the parent committed them.
	for _, child := range []string{"now", "later"} {
		st := h.stats(child)
		next := map[string]int{}
		for _, p := range st.Partitions {
			for off := p.OldestOffset; off < p.NextOffset; off++ {
				m := one(t, h.consume(child, fmt.Sprintf("partition=%d&offset=%d", p.Index, off)))
				var i int
				if err := json.Unmarshal(m.Payload, &i); err != nil || i != next[*m.Key] {
					t.Fatalf("%s: copy %s of key %s at %d/%d, want %d", child, m.Payload, *m.Key, p.Index, off, next[*m.Key])
				}
				next[*m.Key]++
			}
		}
	}
}

// admit is what a batch produce checks each message with before storing any: the
// delay-child rule and the schema, as a single produce of it would answer.
func TestAdmit(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "p", Schema: `{"type":"object"}`}, {Name: "c"}}})
	if err := h.b.Attach("p", "c", time.Second); err != nil {
		t.Fatal(err)
	}
	p, c := h.b.topic("p"), h.b.topic("c")
	for _, tc := range []struct {
		t       *topic
		payload string
		status  int
	}{{p, `{}`, 0}, {p, `[]`, 400}, {p, `x`, 400}, {c, `{}`, 409}} {
		status := 0
		if err := tc.t.admit([]byte(tc.payload)); err != nil {
			status, _ = produceErrorStatus(err, tc.t.name)
		}
		if status != tc.status {
			t.Errorf("admit %s into %s: %d, want %d", tc.payload, tc.t.name, status, tc.status)
		}
	}
}
