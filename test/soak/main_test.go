//go:build unix

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/narad/narad/internal/devbroker"
)

// naradBin is the binary under test, built once by TestMain (or NARAD_SOAK_BIN).
var naradBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if p := os.Getenv("NARAD_SOAK_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 1
		}
		naradBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "narad-soak-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	naradBin = filepath.Join(dir, "narad")
	// The real binary, built from this checkout: the suites test what users run.
	// go test puts its own toolchain's bin first on PATH, so "go" is the one running us.
	build := exec.Command("go", "build", "-o", naradBin, "github.com/narad/narad/cmd/narad")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: building narad:", err)
		return 1
	}
	return m.Run()
}

// long reports whether NARAD_SOAK=1 asked for the long variant.
func long() bool { return os.Getenv("NARAD_SOAK") == "1" }

// scale is fast in CI and long under NARAD_SOAK=1.
func scale(fast, slow int) int {
	if long() {
		return slow
	}
	return fast
}

// skipShort keeps `go test -short` quick: the suites run real processes.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("soak suites run the real binary; not in -short")
	}
}

// newRand gives a suite its random source, seeded by NARAD_SOAK_SEED or the clock, and
// logs the seed so that a failing run can be repeated.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NARAD_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NARAD_SOAK_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (NARAD_SOAK_SEED=%d repeats it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x5eed))
}

// startBroker runs a dev broker on a loopback port for the test's lifetime.
func startBroker(t *testing.T, legacy bool, faults ...string) *devbroker.Broker {
	t.Helper()
	cfg := devbroker.Config{Addr: "127.0.0.1:0", Legacy: legacy}
	for _, f := range faults {
		r, err := devbroker.ParseFault(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = append(cfg.Faults, r)
	}
	b, err := devbroker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newTopic creates a topic with 3 partitions and the given lease (0: the default 30s).
func newTopic(t *testing.T, b *devbroker.Broker, name string, visibility time.Duration) {
	t.Helper()
	if err := b.CreateTopic(devbroker.TopicSpec{Name: name, Partitions: 3, VisibilityTimeout: visibility}); err != nil {
		t.Fatal(err)
	}
}

// payloadID names message i of a run; ids are what every check matches on.
func payloadID(tag string, i int) string { return fmt.Sprintf("%s-%06d", tag, i) }

// idPattern finds payload ids in anything narad or a reader printed.
var idPattern = regexp.MustCompile(`\b[a-z][a-z0-9]*-[0-9]{6}\b`)

// fill produces n messages straight into the broker (no faults on this path) and returns
// their ids. size pads each payload to that many bytes (0: the id alone).
func fill(t *testing.T, b *devbroker.Broker, topic, tag string, n, size int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = payloadID(tag, i)
		if _, _, err := b.Produce(topic, "", []byte(pad(ids[i], size))); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// pad makes a payload of size bytes starting with id: text, so it prints as one line.
func pad(id string, size int) string {
	if size <= len(id) {
		return id
	}
	return id + "." + strings.Repeat("x", size-len(id)-1)
}

// stats reads a topic's state; a test that cannot read it cannot judge anything.
func stats(t *testing.T, b *devbroker.Broker, topic string) devbroker.TopicStats {
	t.Helper()
	st, err := b.Stats(topic)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// takeRest consumes and acks everything available on topic over HTTP and returns the
// ids: what narad left. It acks as it goes, since the node hands out no more than
// max_in_flight_per_partition unacked messages. It is the suites' own reader,
// independent of narad's client, and speaks both the batch and the older single shape.
func takeRest(t *testing.T, b *devbroker.Broker, topic string) []string {
	t.Helper()
	var ids []string
	base := b.URL() + "/v1/topics/" + topic
	for range 100_000 {
		status, body := soakRequest(t, "GET", base+"/consume?max=100", nil)
		switch status {
		case http.StatusNoContent:
			return ids
		case http.StatusOK:
		default:
			t.Fatalf("consume of what is left: %d %s", status, body)
		}
		type message struct {
			Payload       json.RawMessage `json:"payload"`
			ReceiptHandle string          `json:"receipt_handle"`
		}
		var batch struct {
			Messages []message `json:"messages"`
			message
		}
		if err := json.Unmarshal(body, &batch); err != nil {
			t.Fatalf("consume of what is left: %v in %.200s", err, body)
		}
		if batch.Payload != nil {
			batch.Messages = append(batch.Messages, batch.message)
		}
		var handles []string
		for _, m := range batch.Messages {
			ids = append(ids, idPattern.FindString(string(m.Payload)))
			handles = append(handles, m.ReceiptHandle)
		}
		ackBody, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
		status, body = soakRequest(t, "POST", base+"/ack", ackBody)
		if status == http.StatusOK {
			var res struct {
				Results []struct{ Status int } `json:"results"`
			}
			json.Unmarshal(body, &res)
			for _, r := range res.Results {
				if r.Status != http.StatusNoContent {
					t.Fatalf("ack of what is left: %s", body)
				}
			}
		} else {
			// An older node takes one handle at a time.
			for _, h := range handles {
				if status, body = soakRequest(t, "POST", base+"/ack?receipt_handle="+url.QueryEscape(h), nil); status != http.StatusNoContent {
					t.Fatalf("ack of what is left: %d %s", status, body)
				}
			}
		}
	}
	t.Fatal("consume of what is left never ended")
	return nil
}

// soakRequest is one HTTP request of the suites' own reader.
func soakRequest(t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Narad-Client", "soak")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// naradCmd is narad with args against server, isolated from the user's config and
// environment. It runs in its own process group, so that a timeout can end it and
// anything it started.
func naradCmd(t *testing.T, server string, args ...string) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(naradBin, args...)
	env := []string{
		"NARAD_ADDR=" + server,
		"NARAD_CONFIG=" + filepath.Join(home, "config.yaml"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"NO_COLOR=1",
		"LC_ALL=C",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// outcome is how one process ended.
type outcome struct {
	code    int // exit code; -1 when killed by a signal
	signal  string
	hung    bool // still running at the run's bound: killed with its group
	elapsed time.Duration
}

// exitName is the exit as the tables show it.
func (o outcome) exitName() string {
	switch {
	case o.hung:
		return "hung"
	case o.signal != "":
		return "killed by " + o.signal
	}
	return strconv.Itoa(o.code)
}

// waitBounded waits for a started cmd at most limit, then kills its whole process group
// and reports a hang.
func waitBounded(cmd *exec.Cmd, start time.Time, limit time.Duration) outcome {
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	var err error
	hung := false
	select {
	case err = <-errc:
	case <-time.After(limit):
		hung = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-errc
	}
	o := outcome{hung: hung, elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.signal = ws.Signal().String()
		}
	default:
		o.code = -1
		o.signal = err.Error()
	}
	return o
}

// runNarad runs narad to its end (bounded by limit) and returns its output.
func runNarad(t *testing.T, server string, limit time.Duration, stdin io.Reader, args ...string) (outcome, []byte, []byte) {
	t.Helper()
	cmd := naradCmd(t, server, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := waitBounded(cmd, start, limit)
	return o, stdout.Bytes(), stderr.Bytes()
}

// runStats is narad's --stats=json line.
type runStats struct {
	Received  int `json:"received"`
	Acked     int `json:"acked"`
	Nacked    int `json:"nacked"`
	Failed    int `json:"failed"`
	TimedOut  int `json:"timed_out"`
	LeaseLost int `json:"lease_lost"`
	AckGone   int `json:"ack_gone"`
	Retries   int `json:"retries"`
	Bugs      int `json:"bugs"`
}

// parseStats finds the --stats=json line in stderr; ok is false when there is none.
func parseStats(stderr []byte) (runStats, bool) {
	lines := strings.Split(string(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, `{"received"`) {
			var s runStats
			if json.Unmarshal([]byte(l), &s) == nil {
				return s, true
			}
		}
	}
	return runStats{}, false
}

// idsIn is every payload id printed in out, in order, duplicates kept.
func idsIn(out []byte) []string { return idPattern.FindAllString(string(out), -1) }

// counted is how often each id was seen.
func counted(ids []string) map[string]int {
	m := make(map[string]int, len(ids))
	for _, id := range ids {
		m[id]++
	}
	return m
}

// duplicates is how many sightings beyond the first there were.
func duplicates(seen map[string]int) int {
	n := 0
	for _, c := range seen {
		n += c - 1
	}
	return n
}

// setOf is ids as a set.
func setOf(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// sample names up to 5 members of a set, sorted, for a failure message.
func sample(set map[string]bool) string {
	var s []string
	for id := range set {
		s = append(s, id)
	}
	sort.Strings(s)
	if len(s) > 5 {
		s = append(s[:5], fmt.Sprintf("... (%d in all)", len(s)))
	}
	return strings.Join(s, " ")
}

// row is one line of a suite's table.
type row struct {
	name     string
	runs     int
	messages int // produced into the run
	lost     int
	dup      int // extra sightings
	why      string
	hangs    int
	exits    map[string]int
	note     string
	// counts are figures a case adds up over its runs, shown in the note as "name N".
	counts map[string]int
	// slowest is the longest time from a last signal to the exit, when a case measures it.
	slowest time.Duration
}

func (r *row) count(name string, n int) {
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[name] += n
}

// noteText is the note with the counts and the slowest exit.
func (r *row) noteText() string {
	parts := []string{}
	if r.note != "" {
		parts = append(parts, r.note)
	}
	names := make([]string, 0, len(r.counts))
	for k := range r.counts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.counts[k]))
	}
	if r.slowest > 0 {
		parts = append(parts, "slowest exit after the last signal "+r.slowest.Round(time.Millisecond).String())
	}
	return strings.Join(parts, "; ")
}

func (r *row) exit(o outcome) {
	if r.exits == nil {
		r.exits = map[string]int{}
	}
	r.exits[o.exitName()]++
	if o.hung {
		r.hangs++
	}
}

// report is a suite's table.
type report struct {
	title string
	rows  []*row
}

func (rp *report) add(name string) *row {
	r := &row{name: name}
	rp.rows = append(rp.rows, r)
	return r
}

// print writes the table: on stdout in the long variant (run with -v to see it as it
// ends), as the test's log otherwise.
func (rp *report) print(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s variant)\n", rp.title, map[bool]string{false: "fast", true: "long"}[long()])
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRUNS\tMESSAGES\tLOST\tDUPLICATED\tWHY\tHANGS\tEXIT CODES\tNOTE")
	for _, r := range rp.rows {
		if r.runs == 0 {
			continue // not run (-run chose others)
		}
		var codes []string
		for c, n := range r.exits {
			codes = append(codes, fmt.Sprintf("%s×%d", c, n))
		}
		sort.Strings(codes)
		why := r.why
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\n", r.name, r.runs, r.messages, r.lost, r.dup,
			why, r.hangs, strings.Join(codes, " "), r.noteText())
	}
	tw.Flush()
	if long() {
		fmt.Print("\n" + b.String())
		return
	}
	t.Log("\n" + b.String())
}

// waitFor polls cond every 5ms until it holds or limit passes.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

// ctxSleep sleeps d or until ctx ends.
func ctxSleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
