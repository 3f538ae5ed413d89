package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

func TestListTopicsFollowsPages(t *testing.T) {
	p2 := 0
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		if r.URL.Path != "/v1/topics" || r.Method != "GET" {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		switch tok := r.URL.Query().Get("page_token"); tok {
		case "":
			writeJSON(w, 200, `{"topics":[{"name":"a","partitions":3},{"name":"b","partitions":4}],"next_page_token":"p2"}`)
		case "p2":
			// The last page answers 503 once: a read is retried.
			if p2++; p2 == 1 {
				writeText(w, 503, "warming up")
				return
			}
			writeJSON(w, 200, `{"topics":[{"name":"c","partitions":5,"visibility_timeout_ms":30000}],"next_page_token":""}`)
		default:
			t.Errorf("page_token %q", tok)
		}
	})
	c, _ := newClient(t, n.URL)
	ts, err := c.ListTopics(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].Name != "a" || ts[2].Name != "c" || ts[2].VisibilityTimeoutMs != 30000 {
		t.Errorf("topics %+v", ts)
	}
	if len(n.requests()) != 3 {
		t.Errorf("%d requests, want 3", len(n.requests()))
	}
}

func TestListTopicsRepeatedToken(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		writeJSON(w, 200, `{"topics":[{"name":"a"}],"next_page_token":"same"}`)
	})
	c, _ := newClient(t, n.URL)
	if _, err := c.ListTopics(ctxT(t)); err == nil {
		t.Errorf("a node repeating its page token was listed")
	}
	if len(n.requests()) > 3 {
		t.Errorf("%d requests", len(n.requests()))
	}
}

func TestTopicInfo(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, _ []byte) {
		if r.URL.Path != "/v1/topics/orders.v2" {
			t.Errorf("path %s", r.URL.Path)
		}
		writeJSON(w, 200, `{"name":"orders.v2","partitions":2,"retention_ms":86400000,"visibility_timeout_ms":30000,
			"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":1024,
			"partition_stats":[{"index":0,"oldest_offset":0,"next_offset":5,"high_watermark":5,"size_bytes":100,"in_flight":2},
			                   {"index":1,"oldest_offset":3,"next_offset":3,"high_watermark":9,"size_bytes":0}]}`)
	})
	c, _ := newClient(t, n.URL)
	tp, err := c.Topic(ctxT(t), "orders.v2")
	if err != nil {
		t.Fatal(err)
	}
	if tp.VisibilityTimeoutMs != 30000 || len(tp.PartitionStats) != 2 || tp.PartitionStats[1].HighWatermark != 9 ||
		tp.PartitionStats[0].SizeBytes != 100 {
		t.Errorf("topic %+v", tp)
	}
}

func TestCreateAndDeleteTopic(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/topics":
			var spec map[string]any
			json.Unmarshal(body, &spec)
			if r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", r.Header.Get("Content-Type"))
			}
			if spec["name"] == "dup" {
				writeJSON(w, 409, `{"error":"topic exists"}`)
				return
			}
			if _, ok := spec["retention_ms"]; ok {
				t.Errorf("a zero retention was sent: %s", body)
			}
			writeJSON(w, 201, fmt.Sprintf(`{"name":%q,"partitions":%v,"visibility_timeout_ms":30000}`, spec["name"], spec["partitions"]))
		case r.Method == "DELETE" && r.URL.Path == "/v1/topics/orders":
			w.WriteHeader(204)
		case r.Method == "DELETE":
			writeText(w, 503, "try later")
		}
	})
	c, _ := newClient(t, n.URL)
	ctx := ctxT(t)
	tp, err := c.CreateTopic(ctx, TopicSpec{Name: "orders", Partitions: 6})
	if err != nil || tp.Name != "orders" || tp.Partitions != 6 || tp.VisibilityTimeoutMs != 30000 {
		t.Errorf("create: %+v, %v", tp, err)
	}
	if _, err := c.CreateTopic(ctx, TopicSpec{Name: "dup"}); StatusOf(err) != 409 {
		t.Errorf("create dup: %v", err)
	}
	if err := c.DeleteTopic(ctx, "orders"); err != nil {
		t.Errorf("delete: %v", err)
	}
	before := len(n.requests())
	if err := c.DeleteTopic(ctx, "other"); StatusOf(err) != 503 || len(n.requests()) != before+1 {
		t.Errorf("delete 503: %v, retried %d times", err, len(n.requests())-before-1)
	}
}
