package devbroker

import (
	"strings"
	"testing"
	"time"
)

func TestClusterMembersAndMoves(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "a"}, {Name: "b", Partitions: 5}}})
	wantBody(t, h.do("GET", "/v1/cluster/members", nil), 200, `{"members":[{"id":"narad-0","addr":"`+h.b.Addr()+
		`","status":"alive","draining":false,"owned_partitions":8,"outbound_moves":0,"voter":true,"leader":true,"heartbeat_age_seconds":0}]}`+"\n")
	wantBody(t, h.do("GET", "/v1/cluster/members?detail=true", nil), 200, `{"members":[{"id":"narad-0","addr":"`+h.b.Addr()+
		`","status":"alive","draining":false,"owned_partitions":8,"outbound_moves":0,"voter":true,"leader":true,"heartbeat_age_seconds":0,`+
		`"node_status":{"node":"narad-0","draining":false,"produce_in_flight":0,"dispatch_backlog":0}}]}`+"\n")
	wantBody(t, h.do("GET", "/v1/cluster/moves", nil), 200, `{"moves":[]}`+"\n")
	wantError(t, h.do("GET", "/v1/cluster/members?detail=maybe", nil), 400, `detail "maybe" must be true or false`)
	wantError(t, h.do("GET", "/v1/cluster/moves?detail=2", nil), 400, `detail "2" must be true or false`)
}

// A single node is its cluster's only voter and no one can take its partitions: a real
// node refuses such a decommission with 409 and every reason.
func TestClusterDecommission(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "a"}}})
	const reasons = `[{"code":"below_min_voters","message":"removing narad-0 would leave 0 voters, fewer than the 3 a cluster keeps"},` +
		`{"code":"no_receivers","message":"no other alive node can take the partitions of narad-0"}]`
	wantBody(t, h.json("POST", "/v1/cluster/members/narad-0/decommission?dry_run=true", ""), 200,
		`{"member":"narad-0","would_decommission":false,"reasons":`+reasons+`,"voter":true,"owned_partitions":3,"inbound_moves":0}`+"\n")
	if r := h.json("POST", "/v1/cluster/members/narad-0/decommission?dry_run=1", ""); r.status != 200 {
		t.Fatalf("dry_run=1: %v", r)
	}
	wantBody(t, h.json("POST", "/v1/cluster/members/narad-0/decommission", ""), 409,
		`{"error":"decommission of narad-0 refused: removing narad-0 would leave 0 voters, fewer than the 3 a cluster keeps; `+
			`no other alive node can take the partitions of narad-0","reasons":`+reasons+`}`+"\n")
	wantBody(t, h.json("POST", "/v1/cluster/members/narad-0/decommission?dry_run=false", ""), 409,
		`{"error":"decommission of narad-0 refused: removing narad-0 would leave 0 voters, fewer than the 3 a cluster keeps; `+
			`no other alive node can take the partitions of narad-0","reasons":`+reasons+`}`+"\n")
	wantError(t, h.json("POST", "/v1/cluster/members/narad-0/decommission?dry_run=maybe", ""), 400, `dry_run "maybe" must be true or false`)
	wantError(t, h.json("POST", "/v1/cluster/members/narad-9/decommission", ""), 404, `member "narad-9" not found`)
	// The member stays as it was.
	if r := h.do("GET", "/v1/cluster/members", nil); !strings.Contains(string(r.body), `"draining":false`) {
		t.Fatalf("members after a refused decommission: %v", r)
	}

	wantEmpty(t, h.do("DELETE", "/v1/cluster/members/narad-0/decommission", nil), 204)
	wantError(t, h.do("DELETE", "/v1/cluster/members/narad-0/decommission?dry_run=true", nil), 400, "a cancel cannot be dry-run")
	wantError(t, h.do("DELETE", "/v1/cluster/members/narad-9/decommission", nil), 404, `member "narad-9" not found`)

	wantError(t, h.json("POST", "/v1/cluster/members/narad-0/forget", ""), 400,
		`raft server "narad-0" is the leader itself: forget removes only a server with no member record`)
	wantError(t, h.json("POST", "/v1/cluster/members/narad-3/forget", ""), 404, `raft server "narad-3" not found`)
}

func TestClusterAdminOnly(t *testing.T) {
	h := startUsers(t, newFakeClock())
	if r := h.do("GET", "/v1/cluster/members", nil); r.status != 200 {
		t.Fatalf("admin: %v", r)
	}
	h.user, h.pass = "app", "s3cret"
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/cluster/members"}, {"GET", "/v1/cluster/moves"},
		{"POST", "/v1/cluster/members/narad-0/decommission?dry_run=true"},
		{"DELETE", "/v1/cluster/members/narad-0/decommission"},
		{"POST", "/v1/cluster/members/narad-0/forget"},
		{"POST", "/v1/cluster/members/nope/decommission"}, // no probing for member IDs
	} {
		wantError(t, h.json(req.method, req.path, ""), 403, `user "app" lacks the admin grant`)
	}
	h.user = ""
	wantError(t, h.do("GET", "/v1/cluster/moves", nil), 401, "authentication required")
}

func TestMetrics(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{{Name: "orders"}, {Name: "later"}}})
	if err := h.b.Attach("orders", "later", time.Hour); err != nil {
		t.Fatal(err)
	}
	h.mustProduce("orders", "partition=1", "a")
	h.mustProduce("orders", "partition=1", "bb")
	h.mustProduce("orders", "partition=1", "ccc")
	one(t, h.consume("orders", "partition=1")) // offset 0 stays leased
	m := one(t, h.consume("orders", "partition=1"))
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204) // acked ahead of offset 0
	clock.Advance(7 * time.Second)
	r := h.do("GET", "/metrics", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("metrics: %v %v", r, r.header)
	}
	for _, line := range []string{
		"# TYPE narad_topics_total gauge\nnarad_topics_total 2\n",
		"narad_partitions_total 6\n",
		`narad_topic_bytes{topic="orders"} 6` + "\n",
		`narad_partition_size_bytes{topic="orders",partition="1"} 6` + "\n",
		"# TYPE narad_messages_produced_total counter\n",
		`narad_messages_produced_total{topic="orders",partition="1"} 3` + "\n",
		`narad_messages_consumed_total{topic="orders",partition="1"} 2` + "\n",
		`narad_consumer_lag_messages{topic="orders",partition="1"} 3` + "\n",
		`narad_consumer_lag_messages{topic="orders",partition="0"} 0` + "\n",
		`narad_oldest_unconsumed_message_age_seconds{topic="orders",partition="1"} 7` + "\n",
		`narad_inflight_size{topic="orders",partition="1"} 1` + "\n",
		`narad_acked_ahead_size{topic="orders",partition="1"} 1` + "\n",
		`narad_fanout_lag_messages{parent="orders",child="later",partition="1"} 3` + "\n",
		`narad_fanout_child_dropped_messages{parent="orders",child="later"} 0` + "\n",
	} {
		if !strings.Contains(string(r.body), line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", r.body)
	}
}

// A delayed copy whose parent message aged out first is lost to the child, and counted.
func TestMetricsFanoutDropped(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{{Name: "p", RetentionMs: 7_200_000}, {Name: "c"}}})
	if err := h.b.Attach("p", "c", time.Hour); err != nil {
		t.Fatal(err)
	}
	h.mustProduce("p", "", "m")
	clock.Advance(3 * time.Hour) // due after 1 h, gone after 2 h, and no timer ran on this clock
	wantEmpty(t, h.consume("c", ""), 204)
	if r := h.do("GET", "/metrics", nil); !strings.Contains(string(r.body), `narad_fanout_child_dropped_messages{parent="p",child="c"} 1`+"\n") {
		t.Fatalf("metrics: %s", r.body)
	}
}

func TestMetricsAuth(t *testing.T) {
	h := startUsers(t, newFakeClock())
	h.user, h.pass = "app", "s3cret" // any valid user
	if r := h.do("GET", "/metrics", nil); r.status != 200 || !strings.Contains(string(r.body), "narad_topics_total 1\n") {
		t.Fatalf("metrics: %v", r)
	}
	h.user = ""
	wantError(t, h.do("GET", "/metrics", nil), 401, "authentication required")
}
