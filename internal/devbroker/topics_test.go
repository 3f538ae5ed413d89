package devbroker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// defaultTopicJSON is a new topic with the defaults, as a create answers it (the id and
// creation time as wantTopicBody writes them); topicInList as a list or info shows it.
const defaultTopicJSON = `{"name":"orders","id":"ID","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000,` +
	`"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":1024,"created_at":T}` + "\n"

func topicInList(name string) string {
	return `{"name":"` + name + `","id":"ID","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000,` +
		`"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":1024,"created_at":T,"role":"standalone"}`
}

// Point 1: create with defaults, 201 and the topic.
func TestCreateTopicDefaults(t *testing.T) {
	h := start(t, Config{})
	r := h.do("POST", "/v1/topics", []byte(`{"name":"orders"}`), "Content-Type", "application/json")
	wantTopicBody(t, r, 201, defaultTopicJSON)
	st := h.stats("orders")
	if len(st.Partitions) != 3 || st.Spec.VisibilityTimeout != 30*time.Second {
		t.Fatalf("stats %+v", st)
	}
}

func TestCreateTopicSettings(t *testing.T) {
	h := start(t, Config{DefaultVisibility: 2 * time.Second})
	r := h.do("POST", "/v1/topics", []byte(`{"name":"a.b-c_D9","partitions":108,"retention_ms":60000,`+
		`"visibility_timeout_ms":1500,"max_in_flight_per_partition":7,"max_acked_ahead_per_partition":9}`))
	wantTopicBody(t, r, 201, `{"name":"a.b-c_D9","id":"ID","partitions":108,"retention_ms":60000,"visibility_timeout_ms":1500,`+
		`"max_in_flight_per_partition":7,"max_acked_ahead_per_partition":9,"created_at":T}`+"\n")
	// Config.DefaultVisibility is the default of a topic that names none.
	r = h.do("POST", "/v1/topics", []byte(`{"name":"b"}`))
	if r.status != 201 || !strings.Contains(string(r.body), `"visibility_timeout_ms":2000,`) {
		t.Fatalf("default visibility: %v", r)
	}
	// A 255-character name is the longest allowed.
	long := strings.Repeat("x", 255)
	if r := h.do("POST", "/v1/topics", []byte(`{"name":"`+long+`"}`)); r.status != 201 {
		t.Fatalf("255-char name: %v", r)
	}
}

func TestCreateTopicConflict(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	r := h.do("POST", "/v1/topics", []byte(`{"name":"orders","partitions":5}`))
	wantError(t, r, 409, `topic "orders" already exists`)
	if n := len(h.stats("orders").Partitions); n != 3 {
		t.Fatalf("a refused create changed the topic: %d partitions", n)
	}
}

func TestCreateTopicInvalid(t *testing.T) {
	h := start(t, Config{})
	for _, body := range []string{
		`{"name":""}`, `{}`, `{"name":"."}`, `{"name":".."}`, `{"name":"a b"}`, `{"name":"a/b"}`,
		`{"name":"ü"}`, `{"name":"` + strings.Repeat("x", 256) + `"}`,
		`{"name":"p","partitions":2}`, `{"name":"p","partitions":109}`, `{"name":"p","partitions":-1}`,
		`{"name":"p","visibility_timeout_ms":-1}`, `{"name":"p","retention_ms":-5}`,
		`{"name":"p","max_in_flight_per_partition":-1}`, `{"name":"p","max_acked_ahead_per_partition":-1}`,
		`not json`, `{"name":"p","partitions":"5"}`, ``,
	} {
		r := h.do("POST", "/v1/topics", []byte(body))
		if r.status != 400 {
			t.Errorf("%s: want 400, got %v", body, r)
			continue
		}
		wantErrorPrefix(t, r, 400, "")
	}
	if names := h.b.topicNames(); len(names) != 0 {
		t.Fatalf("invalid creates left topics: %v", names)
	}
}

func TestListTopics(t *testing.T) {
	h := start(t, Config{})
	wantBody(t, h.do("GET", "/v1/topics", nil), 200, `{"topics":[],"next_page_token":""}`+"\n")
	for _, n := range []string{"e", "c", "a", "d", "b"} {
		if err := h.b.CreateTopic(TopicSpec{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	path := "/v1/topics?limit=2"
	pages := 0
	for {
		r := h.do("GET", path, nil)
		var page struct {
			Topics []struct {
				Name       string `json:"name"`
				Partitions int    `json:"partitions"`
			} `json:"topics"`
			NextPageToken *string `json:"next_page_token"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil || page.NextPageToken == nil {
			t.Fatalf("list: %v", r)
		}
		pages++
		for _, tp := range page.Topics {
			all = append(all, tp.Name)
		}
		if *page.NextPageToken == "" {
			break
		}
		path = "/v1/topics?limit=2&page_token=" + *page.NextPageToken
	}
	if strings.Join(all, ",") != "a,b,c,d,e" || pages != 3 {
		t.Fatalf("paged list %v in %d pages", all, pages)
	}
	wantTopicBody(t, h.do("GET", "/v1/topics?limit=1", nil), 200, `{"topics":[`+topicInList("a")+`],"next_page_token":"a"}`+"\n")
	wantTopicBody(t, h.do("GET", "/v1/topics?limit=1&page_token=d", nil), 200, `{"topics":[`+topicInList("e")+`],"next_page_token":""}`+"\n")
	// The token is the last name of the page: one that names no topic still pages on.
	wantTopicBody(t, h.do("GET", "/v1/topics?limit=1&page_token=bb", nil), 200, `{"topics":[`+topicInList("c")+`],"next_page_token":"c"}`+"\n")
	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "page_token=%21%21"} {
		wantErrorPrefix(t, h.do("GET", "/v1/topics?"+q, nil), 400, "")
	}
	// A limit above 1000 is treated as 1000, as on a real node.
	if r := h.do("GET", "/v1/topics?limit=5000", nil); r.status != 200 || !strings.Contains(string(r.body), `"next_page_token":""`) {
		t.Fatalf("limit=5000: %v", r)
	}
}

// Point 1: info with partition_stats.
func TestTopicInfo(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "partition=1", "hello")
	h.mustProduce("orders", "partition=1", `{"a":1}`)
	h.mustProduce("orders", "partition=2&key=k1", "xyz")
	r := h.do("GET", "/v1/topics/orders", nil)
	wantTopicBody(t, r, 200, strings.TrimSuffix(topicInList("orders"), "}")+`,"schema_version":0,"partition_stats":[`+
		`{"index":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"size_bytes":0,"owner_node":"narad-0","status":"ok"},`+
		`{"index":1,"oldest_offset":0,"next_offset":2,"high_watermark":2,"size_bytes":12,"owner_node":"narad-0","status":"ok"},`+
		`{"index":2,"oldest_offset":0,"next_offset":1,"high_watermark":1,"size_bytes":5,"owner_node":"narad-0","status":"ok"}]}`+"\n")
	// ?partition= narrows the statistics to one partition.
	wantTopicBody(t, h.do("GET", "/v1/topics/orders?partition=2", nil), 200, strings.TrimSuffix(topicInList("orders"), "}")+
		`,"schema_version":0,"partition_stats":[`+
		`{"index":2,"oldest_offset":0,"next_offset":1,"high_watermark":1,"size_bytes":5,"owner_node":"narad-0","status":"ok"}]}`+"\n")
	wantError(t, h.do("GET", "/v1/topics/orders?partition=3", nil), 400, "partition must be an integer from 0 to 2")
	wantError(t, h.do("GET", "/v1/topics/nope", nil), 404, `topic "nope" not found`)
}

// Point 1: delete; a waiting consumer learns at once.
func TestDeleteTopic(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.mustProduce("orders", "", "x")
	start := time.Now()
	waiter := async(func() resp { return h.consume("orders", "wait=10s&partition=1") })
	h.waitForWaiters(1)
	wantEmpty(t, h.do("DELETE", "/v1/topics/orders", nil), 204)
	wantError(t, <-waiter, 404, `topic "orders" not found`)
	if el := time.Since(start); el > 8*time.Second {
		t.Fatalf("the waiter answered after %v, not at the delete", el)
	}
	wantError(t, h.do("GET", "/v1/topics/orders", nil), 404, `topic "orders" not found`)
	wantError(t, h.do("DELETE", "/v1/topics/orders", nil), 404, `topic "orders" not found`)
	wantError(t, h.produce("orders", "", "x"), 404, `topic "orders" not found`)
	// A topic created again under the name starts empty.
	if err := h.b.CreateTopic(TopicSpec{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	if n := h.stats("orders").Messages(); n != 0 {
		t.Fatalf("recreated topic holds %d messages", n)
	}
}

// Retention drops old messages: they leave partition_stats and replay answers 410.
// The broker's clock is moved by hand, so "old" is exactly past retention and "new"
// exactly within it.
func TestRetention(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := start(t, Config{Now: clock.Now, Topics: []TopicSpec{{Name: "orders", RetentionMs: 300}}})
	h.mustProduce("orders", "partition=0", "old")
	clock.Advance(301 * time.Millisecond)
	h.mustProduce("orders", "partition=0", "new")
	wantError(t, h.consume("orders", "partition=0&offset=0"), 410, "offset 0 is older than the partition's retention")
	if m := one(t, h.consume("orders", "partition=0&offset=1")); string(m.Payload) != `"new"` {
		t.Fatalf("replay of offset 1: %+v", m)
	}
	r := h.do("GET", "/v1/topics/orders", nil)
	if !strings.Contains(string(r.body), `{"index":0,"oldest_offset":1,"next_offset":2,"high_watermark":2,"size_bytes":3,`) {
		t.Fatalf("info after retention: %s", r.body)
	}
	// The dropped message is not handed out either.
	if m := one(t, h.consume("orders", "")); m.Offset != 1 {
		t.Fatalf("consumed %+v", m)
	}
}

func TestCreateTopicGoAPI(t *testing.T) {
	h := start(t, Config{Topics: []TopicSpec{{Name: "orders", Partitions: 5, VisibilityTimeout: 1500 * time.Millisecond}}})
	st := h.stats("orders")
	if len(st.Partitions) != 5 || st.Spec.VisibilityTimeout != 1500*time.Millisecond || st.Spec.MaxInFlightPerPartition != 1024 {
		t.Fatalf("spec %+v", st.Spec)
	}
	if err := h.b.CreateTopic(TopicSpec{Name: "orders"}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate: %v", err)
	}
	for _, spec := range []TopicSpec{{Name: ".."}, {Name: "x", Partitions: 1}, {Name: "x", VisibilityTimeout: time.Microsecond}} {
		if err := h.b.CreateTopic(spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	if _, err := New(Config{Topics: []TopicSpec{{Name: "a"}, {Name: "a"}}}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate in Config.Topics: %v", err)
	}
	if err := h.b.DeleteTopic("nope"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
	if _, err := h.b.Stats("nope"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("stats unknown: %v", err)
	}
}

func TestParseTopicFlag(t *testing.T) {
	for in, want := range map[string]TopicSpec{
		"orders":    {Name: "orders"},
		"orders:5":  {Name: "orders", Partitions: 5},
		"a.b:108":   {Name: "a.b", Partitions: 108},
		"x-y_z:003": {Name: "x-y_z", Partitions: 3},
	} {
		got, err := ParseTopicFlag(in)
		if err != nil || got != want {
			t.Errorf("ParseTopicFlag(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "orders:", "orders:x", "orders:2", "orders:109", "a b", "..", ":5", "a:5:6"} {
		if _, err := ParseTopicFlag(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTopicFlag(%q): want an error, got %v", in, err)
		}
	}
}

func TestRouterErrorsArePlainText(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	r := h.do("GET", "/v1/nothing", nil)
	if r.status != 404 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(r.body) != "404 page not found\n" {
		t.Fatalf("router 404: %v %v", r, r.header)
	}
	r = h.do("PUT", "/v1/topics/orders/ack", nil)
	if r.status != 405 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("router 405: %v", r)
	}
	// CORS preflights are never approved.
	if r := h.do("OPTIONS", "/v1/topics/orders/consume", nil); r.status != 405 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight: %v %v", r, r.header)
	}
}

// A retention too long for a time.Duration (say math.MaxInt64 ms, "forever") keeps
// messages; it must not wrap negative and drop every message as it is produced.
func TestRetentionHuge(t *testing.T) {
	h := start(t, Config{})
	r := h.do("POST", "/v1/topics", []byte(`{"name":"orders","retention_ms":9223372036854775807}`))
	if r.status != 201 || !strings.Contains(string(r.body), `"retention_ms":9223372036854775807,`) {
		t.Fatalf("create: %v", r)
	}
	if err := h.b.CreateTopic(TopicSpec{Name: "forever", RetentionMs: 10_000_000_000_000}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "forever"} {
		h.mustProduce(name, "partition=0", "m")
		if m := one(t, h.consume(name, "partition=0&offset=0")); string(m.Payload) != `"m"` {
			t.Fatalf("%s replay: %+v", name, m)
		}
		if m := one(t, h.consume(name, "")); m.Offset != 0 {
			t.Fatalf("%s consume: %+v", name, m)
		}
		if st := h.stats(name).Partitions[0]; st.OldestOffset != 0 || st.NextOffset != 1 {
			t.Fatalf("%s partition 0: %+v", name, st)
		}
	}
}

// A visibility_timeout_ms past what a Duration holds is refused as such; it must not wrap
// into a lease of a few milliseconds (18446744073719 ms wrapped to 9 ms).
func TestCreateTopicVisibilityOverflow(t *testing.T) {
	h := start(t, Config{})
	for _, v := range []string{"18446744073719", "9223372036854775807", "9223372036855"} {
		r := h.do("POST", "/v1/topics", []byte(`{"name":"orders","visibility_timeout_ms":`+v+`}`))
		wantError(t, r, 400, "visibility_timeout_ms "+v+": must be at most 9223372036854")
	}
	if names := h.b.topicNames(); len(names) != 0 {
		t.Fatalf("overflowing creates left topics: %v", names)
	}
	r := h.do("POST", "/v1/topics", []byte(`{"name":"orders","visibility_timeout_ms":9223372036854}`))
	if r.status != 201 || !strings.Contains(string(r.body), `"visibility_timeout_ms":9223372036854,`) {
		t.Fatalf("the longest visibility: %v", r)
	}
}

// A page is cut before the topics the caller cannot read are removed, so a page can be
// empty while next_page_token is set: a client must follow the token.
func TestListTopicsFollowsTokenPastUnreadablePages(t *testing.T) {
	h := start(t, Config{
		Topics: []TopicSpec{{Name: "a"}, {Name: "b"}, {Name: "z1"}, {Name: "z2"}},
		Users:  []User{mustUser(t, "app:pw:consume:z*")},
	})
	h.user, h.pass = "app", "pw"
	var pages []string
	token := ""
	for {
		r := h.do("GET", "/v1/topics?limit=1&page_token="+token, nil)
		var page struct {
			Topics []struct {
				Name string `json:"name"`
			} `json:"topics"`
			NextPageToken string `json:"next_page_token"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("list: %v", r)
		}
		names := []string{}
		for _, tp := range page.Topics {
			names = append(names, tp.Name)
		}
		pages = append(pages, "["+strings.Join(names, ",")+"]")
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if got := strings.Join(pages, " "); got != "[] [] [z1] [z2]" {
		t.Fatalf("pages %s", got)
	}
}
