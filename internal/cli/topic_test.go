package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/iostreams"
)

func TestParseDurationDays(t *testing.T) {
	good := map[string]time.Duration{
		"500ms": 500 * time.Millisecond, "30s": 30 * time.Second, "1h30m": 90 * time.Minute,
		"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0d30s": 30 * time.Second,
	}
	for s, want := range good {
		if got, err := parseDurationDays(s); err != nil || got != want {
			t.Errorf("parseDurationDays(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "7", "d", "1d-1h", "1.5d", "soon", "99999999999999d"} {
		if d, err := parseDurationDays(s); err == nil {
			t.Errorf("parseDurationDays(%q) = %v, want an error", s, d)
		}
	}
}

func TestParseMillisFlag(t *testing.T) {
	if ms, err := parseMillisFlag("retention", "3d"); err != nil || ms != 259200000 {
		t.Errorf("3d = %d, %v; want 259200000", ms, err)
	}
	for s, msg := range map[string]string{"0s": "at least 1ms", "-5s": "at least 1ms", "1500us": "whole milliseconds", "x": "a duration such as"} {
		_, err := parseMillisFlag("visibility", s)
		if exitCodeFor(err) != ExitUsage || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "--visibility") {
			t.Errorf("parseMillisFlag(%q) = %v, want a usage error with %q", s, err, msg)
		}
	}
}

func TestFormatMillis(t *testing.T) {
	for ms, want := range map[int64]string{500: "500ms", 1500: "1.5s", 30000: "30s", 90000: "1m30s", 600000: "10m",
		3600000: "1h", 5400000: "1h30m", 86400000: "1d", 604800000: "7d", 129600000: "1d12h", 86401000: "1d1s", 0: "0ms"} {
		got := formatMillis(ms)
		if got != want {
			t.Errorf("formatMillis(%d) = %q, want %q", ms, got, want)
		}
		// What info shows, create takes back.
		if ms > 0 {
			if back, err := parseMillisFlag("x", got); err != nil || back != ms {
				t.Errorf("parseMillisFlag(%q) = %d, %v; want %d", got, back, err, ms)
			}
		}
	}
}

func TestTopicCreateFlags(t *testing.T) {
	run := func(args ...string) (*TopicCreateOptions, error) {
		ios, _, _, _ := iostreams.Test()
		var got *TopicCreateOptions
		cmd := topicCreateCmd(&Factory{IO: ios}, func(o *TopicCreateOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return got, cmd.Execute()
	}
	got, err := run("orders", "--partitions", "12", "--visibility", "1m", "--retention", "3d", "--max-in-flight", "5", "--max-acked-ahead", "6")
	if err != nil {
		t.Fatal(err)
	}
	want := client.TopicSpec{Name: "orders", Partitions: 12, VisibilityTimeoutMs: 60000, RetentionMs: 259200000,
		MaxInFlightPerPartition: 5, MaxAckedAheadPerPartition: 6}
	if got.Spec != want {
		t.Errorf("spec %+v, want %+v", got.Spec, want)
	}
	// Nothing given: zero fields, left to the node's defaults (omitted from the body).
	got, _ = run("orders")
	if b, _ := json.Marshal(got.Spec); string(b) != `{"name":"orders"}` {
		t.Errorf("body %s, want only the name", b)
	}
	for _, args := range [][]string{
		{"x", "--partitions", "0"}, {"x", "--visibility", "0"}, {"x", "--retention", "forever"},
		{"x", "--max-in-flight", "0"}, {"x", "--max-acked-ahead", "-1"}, {"a/b"}, {"."}, {".."},
		{strings.Repeat("a", 256)}, {"x", "-o", "yaml"}, {}, {"a", "b"},
	} {
		if _, err := run(args...); exitCodeFor(err) != ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// topicServer is a fake node for topic commands; it records the methods and paths asked.
type topicServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
}

func newTopicServer(t *testing.T) *topicServer {
	s := &topicServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/topics/orders":
			io.WriteString(w, `{"name":"orders","partitions":3,"retention_ms":259200000,"visibility_timeout_ms":1500,
				"max_in_flight_per_partition":10,"max_acked_ahead_per_partition":20,"partition_stats":[
				{"index":0,"oldest_offset":4,"next_offset":9,"high_watermark":9,"size_bytes":2048},
				{"index":1,"oldest_offset":0,"next_offset":0,"high_watermark":0,"size_bytes":0},
				{"index":2,"oldest_offset":0,"next_offset":1,"high_watermark":1,"size_bytes":5}]}`)
		case "GET /v1/topics":
			io.WriteString(w, `{"topics":[{"name":"orders","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000},
				{"name":"evil\u001b[2J","partitions":5,"retention_ms":3600000,"visibility_timeout_ms":500}],"next_page_token":""}`)
		case "DELETE /v1/topics/orders":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not found"}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *topicServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func TestTopicInfoText(t *testing.T) {
	s := newTopicServer(t)
	r := runCLI(t, nil, false, "topic", "info", "orders", "-s", s.URL)
	want := `name:             orders
partitions:       3
visibility:       1.5s
retention:        3d
max in flight:    10 per partition
max acked ahead:  20 per partition

PARTITION  OLDEST  NEXT  HIGH WATERMARK  SIZE
0          4       9     9               2.0 KiB
1          0       0     0               0 B
2          0       1     1               5 B
`
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("exit %d stderr %q stdout:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want)
	}
	r = runCLI(t, nil, false, "topic", "info", "orders", "-s", s.URL, "-o", "json")
	var got client.Topic
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.PartitionStats) != 3 || got.PartitionStats[0].SizeBytes != 2048 {
		t.Errorf("json %q: %v", r.stdout, err)
	}
}

func TestTopicLsEscapesNames(t *testing.T) {
	s := newTopicServer(t)
	r := runCLI(t, nil, false, "topic", "ls", "-s", s.URL)
	want := "NAME         PARTITIONS  VISIBILITY  RETENTION\n" +
		"orders       3           30s         7d\n" +
		"evil\\x1b[2J  5           500ms       1h\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d stderr %q stdout:\n%q\nwant:\n%q", r.code, r.stderr, r.stdout, want)
	}
	r = runCLI(t, nil, false, "topic", "ls", "-s", s.URL, "-o", "json")
	if !strings.HasPrefix(r.stdout, `{"topics":[{"name":"orders","partitions":3,`) {
		t.Errorf("json %q", r.stdout)
	}
}

func TestTopicDeleteConfirmation(t *testing.T) {
	s := newTopicServer(t)
	deleted := func() bool {
		for _, r := range s.requests() {
			if r == "DELETE /v1/topics/orders" {
				return true
			}
		}
		return false
	}

	// Off a terminal: refused without --yes, exit 2, nothing sent.
	r := runCLI(t, strings.NewReader("orders\n"), false, "topic", "delete", "orders", "-s", s.URL)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "pass --yes") || deleted() {
		t.Fatalf("exit %d stderr %q deleted %v", r.code, r.stderr, deleted())
	}
	// On a terminal, a name that does not match: not deleted.
	r = runCLI(t, strings.NewReader("order\n"), true, "topic", "delete", "orders", "-s", s.URL)
	if r.code != ExitFailed || !strings.Contains(r.stderr, "Type its name to confirm: ") ||
		!strings.Contains(r.stderr, "narad: did not delete topic orders (the name typed did not match)") || deleted() {
		t.Fatalf("exit %d stderr %q deleted %v", r.code, r.stderr, deleted())
	}
	// End of input at the prompt: not deleted either.
	r = runCLI(t, strings.NewReader(""), true, "topic", "delete", "orders", "-s", s.URL)
	if r.code != ExitFailed || deleted() {
		t.Fatalf("exit %d stderr %q deleted %v", r.code, r.stderr, deleted())
	}
	// The name typed: deleted.
	r = runCLI(t, strings.NewReader("orders\n"), true, "topic", "delete", "orders", "-s", s.URL)
	if r.code != 0 || !deleted() || !strings.HasSuffix(r.stderr, "deleted topic orders\n") {
		t.Fatalf("exit %d stderr %q deleted %v", r.code, r.stderr, deleted())
	}
}

// answerServer is a fake node answering each "METHOD /path" with a fixed status and
// body, recording what was asked; anything else is a 404.
func answerServer(t *testing.T, answers map[string]string, statuses map[string]int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var asked []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		mu.Lock()
		asked = append(asked, key)
		mu.Unlock()
		body, ok := answers[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not found"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if code := statuses[key]; code != 0 {
			w.WriteHeader(code)
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// What create, edit and attach say they did is what the node answered, not what was
// asked: a node that changed a field is reported as it left it, one whose answer does
// not carry the field is asked once more (GET the topic), and one that ignored the
// parent is a failure, since the topic is not the child the script asked for.
func TestTopicChangesReportTheNodesAnswer(t *testing.T) {
	const child = `"name":"tier-run","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000`
	for _, tc := range []struct {
		name     string
		args     []string
		answers  map[string]string
		code     int
		stderr   string
		readBack bool // a GET of the topic after the change
	}{
		{
			name: "create: the node set another delay",
			args: []string{"topic", "create", "tier-run", "--parent", "tier", "--delay", "1s"},
			answers: map[string]string{
				"POST /v1/topics": `{` + child + `,"parent":"tier","fanout_delay_ms":2000}`,
			},
			stderr: "created topic tier-run (3 partitions, visibility 30s, retention 7d, child of tier delayed 2s)\n",
		},
		{
			name: "create: the answer leaves out the parent, the topic has it",
			args: []string{"topic", "create", "tier-run", "--parent", "tier", "--delay", "1s"},
			answers: map[string]string{
				"POST /v1/topics":         `{` + child + `}`,
				"GET /v1/topics/tier-run": `{` + child + `,"parent":"tier","fanout_delay_ms":1000,"partition_stats":[]}`,
			},
			stderr:   "created topic tier-run (3 partitions, visibility 30s, retention 7d, child of tier delayed 1s)\n",
			readBack: true,
		},
		{
			name: "create: the node ignored the parent",
			args: []string{"topic", "create", "tier-run", "--parent", "tier"},
			answers: map[string]string{
				"POST /v1/topics":         `{` + child + `}`,
				"GET /v1/topics/tier-run": `{` + child + `}`,
			},
			code: ExitFailed,
			stderr: "created topic tier-run (3 partitions, visibility 30s, retention 7d)\n" +
				"narad: the node made tier-run a topic of its own, not a child of tier (it ignored the parent; narad topic attach tier tier-run makes it one)\n",
			readBack: true,
		},
		{
			name: "create: an empty answer",
			args: []string{"topic", "create", "tier-run", "--partitions", "5"},
			answers: map[string]string{
				"POST /v1/topics":         ``,
				"GET /v1/topics/tier-run": `{"name":"tier-run","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000}`,
			},
			stderr:   "created topic tier-run (3 partitions, visibility 30s, retention 7d)\n",
			readBack: true,
		},
		{
			name: "edit: the answer carries no schema version, the topic does",
			args: []string{"topic", "edit", "tier-run", "--schema", "-"},
			answers: map[string]string{
				"PATCH /v1/topics/tier-run": `{` + child + `}`,
				"GET /v1/topics/tier-run":   `{` + child + `,"schema_version":4}`,
			},
			stderr:   "edited topic tier-run: schema version 4\n",
			readBack: true,
		},
		{
			name: "edit: no version anywhere",
			args: []string{"topic", "edit", "tier-run", "--schema", "-"},
			answers: map[string]string{
				"PATCH /v1/topics/tier-run": `{` + child + `}`,
				"GET /v1/topics/tier-run":   `{` + child + `}`,
			},
			stderr:   "edited topic tier-run: schema (the node gave no version; see narad topic schema tier-run)\n",
			readBack: true,
		},
		{
			name: "attach: the child's delay is the one the node set",
			args: []string{"topic", "attach", "tier", "tier-run", "--delay", "30s"},
			answers: map[string]string{
				"POST /v1/topics/tier/children": `{"name":"tier","partitions":3,"children":["tier-run"]}`,
				"GET /v1/topics/tier-run":       `{` + child + `,"parent":"tier","fanout_delay_ms":60000}`,
			},
			stderr:   "attached tier-run to tier: it now gets a copy of every new message, each 1m after its commit\n",
			readBack: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses := map[string]int{"POST /v1/topics": http.StatusCreated}
			s, asked := answerServer(t, tc.answers, statuses)
			r := runCLI(t, strings.NewReader(`{"type":"object"}`), false, append(tc.args, "-s", s.URL)...)
			if r.code != tc.code || r.stderr != tc.stderr || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", r.code, r.stdout, r.stderr, tc.code, tc.stderr)
			}
			reads := 0
			for _, a := range asked() {
				if strings.HasPrefix(a, "GET ") {
					reads++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[tc.readBack]; reads != want {
				t.Errorf("asked %q: %d reads, want %d", asked(), reads, want)
			}
		})
	}
}
