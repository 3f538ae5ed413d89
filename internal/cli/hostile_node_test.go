package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A node that answers wrong, one loopback handler per case: what the user sees (stdout,
// stderr, exit code) and what was settled.

// hostileNode answers the first consume with first and every later one with 204, and
// settles whatever it is sent, recording the handles by action.
type hostileNode struct {
	*httptest.Server
	mu      sync.Mutex
	consume int
	settled map[string][]string // "ack" or "nack": handles
}

func newHostileNode(t *testing.T, first string) *hostileNode {
	n := &hostileNode{settled: map[string][]string{}}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/consume"):
			n.consume++
			if n.consume > 1 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, first)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"name":"t","partitions":3,"visibility_timeout_ms":30000,"partition_stats":[]}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ack"):
			action := "ack"
			if r.URL.Query().Get("extend") == "0" {
				action = "nack"
			}
			if h := r.URL.Query().Get("receipt_handle"); h != "" {
				n.settled[action] = append(n.settled[action], h)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			var body struct {
				Handles []string `json:"receipt_handles"`
			}
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &body)
			n.settled[action] = append(n.settled[action], body.Handles...)
			res := strings.Repeat(`{"status":204},`, len(body.Handles))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"results":[%s]}`, strings.TrimSuffix(res, ","))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(n.Close)
	return n
}

func (n *hostileNode) handles(action string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.settled[action]...)
}

func batchOf(msgs ...string) string { return `{"messages":[` + strings.Join(msgs, ",") + `]}` }

func textMsg(p, o int) string {
	return fmt.Sprintf(`{"topic":"t","partition":%d,"offset":%d,"payload":"m%d","timestamp":1,"receipt_handle":"%d:%d:1"}`, p, o, o, p, o)
}

// 150 messages to a consume for one: --count 1 prints one and acks one, the 149 go
// back at once, and stderr says so.
func TestHostileNodeAnswersMoreThanMax(t *testing.T) {
	var msgs []string
	for i := range 150 {
		msgs = append(msgs, textMsg(0, i))
	}
	for _, args := range [][]string{{"sub", "t", "--count", "1", "-o", "raw"}, {"sub", "t", "--count", "1", "-j", "1", "--", "cat"}} {
		n := newHostileNode(t, batchOf(msgs...))
		r := runCLI(t, nil, false, append([]string{"-s", n.URL}, args...)...)
		if r.code != 0 || r.stdout != "m0" && r.stdout != "m0\n" {
			t.Errorf("%v: exit %d, stdout %q; want m0 alone", args, r.code, r.stdout)
		}
		if !strings.Contains(r.stderr, "the node answered 150 messages to a consume for 1; the 149 over were given back") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
		if a, nk := n.handles("ack"), n.handles("nack"); len(a) != 1 || len(nk) != 149 {
			t.Errorf("%v: acked %d, given back %d; want 1 and 149", args, len(a), len(nk))
		}
	}
}

// One message that cannot be decoded in a batch: it is reported and given back, the
// others are printed and acked, and the exit is 1.
func TestHostileNodeSendsAnUndecodableMessage(t *testing.T) {
	bad := `{"topic":"t","partition":1,"offset":8,"payload":"!!!","payload_encoding":"base64","timestamp":1,"receipt_handle":"1:8:1"}`
	n := newHostileNode(t, batchOf(textMsg(1, 7), bad, textMsg(1, 9)))
	r := runCLI(t, nil, false, "-s", n.URL, "sub", "t", "--drain", "-o", "raw")
	if r.code != ExitFailed || r.stdout != "m7\nm9\n" && r.stdout != "m7m9" {
		t.Errorf("exit %d, stdout %q; want 1, m7 and m9", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "narad: message p1 @8 cannot be decoded (payload is not valid base64: ") ||
		!strings.Contains(r.stderr, "given back; the others go on") {
		t.Errorf("stderr %q", r.stderr)
	}
	if a, nk := n.handles("ack"), n.handles("nack"); len(a) != 2 || !bytes.Equal([]byte(strings.Join(nk, ",")), []byte("1:8:1")) {
		t.Errorf("acked %v, given back %v", a, nk)
	}
}

// A NUL byte in the receipt handle or topic name of a message cannot go into the
// command's environment: that message is not run and is given back, said as the
// node's doing in one line, and the others are run and acked (exit 1). The canary
// says the same and takes nothing.
func TestHostileNodeSendsANULInAHandleOrTopic(t *testing.T) {
	badHandle := `{"topic":"t","partition":1,"offset":8,"payload":"m8","timestamp":1,"receipt_handle":"1:8\u00001"}`
	badTopic := `{"topic":"t\u0000x","partition":1,"offset":9,"payload":"m9","timestamp":1,"receipt_handle":"1:9:1"}`
	n := newHostileNode(t, batchOf(textMsg(1, 7), badHandle, badTopic))
	r := runCLI(t, nil, false, "-s", n.URL, "sub", "t", "--drain", "-j", "3", "--", "cat")
	if r.code != ExitFailed || r.stdout != "m7" {
		t.Errorf("exit %d, stdout %q; want 1 and m7", r.code, r.stdout)
	}
	for _, want := range []string{
		"[p1 @8] not run: the receipt handle the node sent holds a NUL byte, which no environment variable can pass: nacked at the end of the drain (attempt 1)\n",
		"[p1 @9] not run: the topic name the node sent holds a NUL byte, which no environment variable can pass: nacked at the end of the drain (attempt 1)\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q: want %q", r.stderr, want)
		}
	}
	nk := n.handles("nack")
	slices.Sort(nk)
	if a := n.handles("ack"); !slices.Equal(a, []string{"1:7:1"}) || !slices.Equal(nk, []string{"1:8\x001", "1:9:1"}) {
		t.Errorf("acked %q, given back %q; want the good one acked, the other two given back", a, nk)
	}
	if strings.Contains(r.stderr, "\x00") {
		t.Errorf("stderr %q carries a NUL", r.stderr)
	}
}

// A node's error text is shown on the line for each handle that failed, and a bidi
// override or zero-width character in it reaches the terminal only as a visible escape:
// raw, it would reorder or hide what the operator reads on that line.
func TestHostileNodeErrorTextKeepsNoInvisibleCharacters(t *testing.T) {
	n := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[{"status":410,"error":"gone \u202eevil\u200b"},{"status":500,"error":"boom \u2066x"}]}`)
	}))
	t.Cleanup(n.Close)
	r := runCLI(t, nil, true, "-s", n.URL, "ack", "t", "h1", "h2")
	for _, c := range []string{"\u202e", "\u200b", "\u2066"} {
		if strings.Contains(r.stderr, c) {
			t.Errorf("stderr %q carries a raw %U", r.stderr, []rune(c)[0])
		}
	}
	if !strings.Contains(r.stderr, `narad: ack h1: lease gone (410 gone \u202eevil\u200b)`) ||
		!strings.Contains(r.stderr, `narad: ack h2: failed (500 boom \u2066x)`) {
		t.Errorf("stderr %q: want each error with its escapes shown", r.stderr)
	}
}

// A partition count no node gives is a bad answer, said in one line: a negative one
// panicked every reader of all partitions (replay, --peek), and 2^31 would have run the
// machine out of memory before the first request.
func TestHostileNodeGivesAnImpossiblePartitionCount(t *testing.T) {
	for _, n := range []int{-1, 2147483647} {
		topic := fmt.Sprintf(`{"name":"t","partitions":%d,"visibility_timeout_ms":30000,"partition_stats":[]}`, n)
		node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/v1/topics" {
				io.WriteString(w, `{"topics":[`+topic+`]}`)
				return
			}
			io.WriteString(w, topic)
		}))
		t.Cleanup(node.Close)
		for _, args := range [][]string{{"replay", "t", "--count", "1"}, {"sub", "t", "--peek", "--count", "1"}, {"topic", "ls"}} {
			r := runCLI(t, nil, false, append([]string{"-s", node.URL}, args...)...)
			want := fmt.Sprintf(`bad answer: topic "t" has %d partitions (a node gives 0 to 100000)`, n)
			if r.code != ExitFailed || strings.Contains(r.stderr, "internal error") || !strings.Contains(r.stderr, want) {
				t.Errorf("%d partitions, %v: exit %d, stderr %q; want 1 and %q", n, args, r.code, r.stderr, want)
			}
		}
	}
}

// A cluster with a partition's owner down answers topic info partial, that partition a
// placeholder of zeros (v3.1). sub --peek took those zeros for its tail and showed the
// partition's whole history as new; it now waits for a real tail, says so, and shows
// only what comes after it.
func TestPeekWaitsForATailAPlaceholderDoesNotGive(t *testing.T) {
	var mu sync.Mutex
	infos, history := 0, []string{"old1", "old2"}
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/topics/t" && infos == 0:
			infos++
			io.WriteString(w, `{"name":"t","partitions":2,"visibility_timeout_ms":30000,"partial":true,"partition_stats":[`+
				`{"index":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"status":"ok"},`+
				`{"index":1,"oldest_offset":0,"next_offset":0,"high_watermark":0,"status":"owner_unavailable"}]}`)
		case r.URL.Path == "/v1/topics/t":
			infos++
			io.WriteString(w, `{"name":"t","partitions":2,"visibility_timeout_ms":30000,"partition_stats":[`+
				`{"index":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"status":"ok"},`+
				fmt.Sprintf(`{"index":1,"oldest_offset":0,"next_offset":%d,"high_watermark":%d,"status":"ok"}]}`, len(history), len(history)))
			history = append(history, "new") // written after the tail it was just told
		case r.URL.Path == "/v1/topics/t/consume" && r.URL.Query().Get("partition") == "1":
			off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			if off >= len(history) {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			fmt.Fprintf(w, `{"topic":"t","partition":1,"offset":%d,"payload":%q,"timestamp":1790623277}`, off, history[off])
		case r.URL.Path == "/v1/topics/t/consume":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(node.Close)
	r := runCLI(t, nil, false, "-s", node.URL, "sub", "t", "--peek", "--count", "1", "-o", "raw", "--timeout", "60s")
	if r.code != 0 || r.stdout != "new\n" {
		t.Errorf("exit %d, stdout %q, stderr %q: want 0 and only the message after the tail", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"narad: note: partition 1: the node gives no tail for it (its owner is down?): watched from its tail once it does\n",
		"narad: note: partition 1: watched from offset 2, its tail now\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q: want %q", r.stderr, want)
		}
	}
}
