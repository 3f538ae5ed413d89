//go:build unix

package soak

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// scaleOutFaults: some consumes, acks and extends answered 503, every request a little
// late: what a worker of a cluster under load sees.
var scaleOutFaults = []string{"consume=503:0.05", "ack=503:0.1", "extend=503:0.1", "latency=1ms"}

// scaleOutWorkers is how many exec workers share the topic, as one would run them on
// as many machines.
const scaleOutWorkers = 4

// TestScaleOut: four exec workers at once on one topic, faults on. Nothing is lost,
// nothing is handled twice unless a lease lapsed, and what the workers' /metrics say
// adds up to what the node counted: received to its deliveries, acked to its acks,
// each worker's last scrape equal to its own --stats.
func TestScaleOut(t *testing.T) {
	skipShort(t)
	n := scale(2000, 20000)
	rp := &report{title: fmt.Sprintf("Scale-out: %d exec workers, -j 4, broker %v", scaleOutWorkers, scaleOutFaults)}
	defer rp.print(t)
	b := startBroker(t, false, scaleOutFaults...)
	r := rp.add(fmt.Sprintf("%d workers", scaleOutWorkers))
	v := newVerdict(t)
	newTopic(t, b, "so", 10*time.Second)
	ids := fill(t, b, "so", "so", n, 0)
	r.messages = n

	type worker struct {
		cmd            *exec.Cmd
		addr           string
		stdout, stderr bytes.Buffer
		scrape         map[string]int
		done           chan outcome
	}
	ws := make([]*worker, scaleOutWorkers)
	start := time.Now()
	for i := range ws {
		w := &worker{addr: freeAddr(t), done: make(chan outcome, 1)}
		cmd := naradCmd(t, b.URL(), "sub", "so", "-j", "4", "--prefix", "--stats=json", "--metrics-addr", w.addr, "--", "cat")
		cmd.Stdout, cmd.Stderr = &w.stdout, &w.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.cmd = cmd
		ws[i] = w
		go func() { w.done <- waitBounded(cmd, start, time.Duration(scale(120, 900))*time.Second) }()
	}
	// All acked and nothing held: the workers are idle, their counters final.
	settled := waitFor(time.Duration(scale(90, 800))*time.Second, func() bool {
		st := stats(t, b, "so")
		return st.Acked() == n && st.InFlight() == 0
	})
	v.check(settled, "not all acked in time: %+v", stats(t, b, "so"))
	for _, w := range ws {
		m, err := scrapeMessages(w.addr)
		v.check(err == nil, "scrape %s: %v", w.addr, err)
		w.scrape = m
		_ = syscall.Kill(w.cmd.Process.Pid, syscall.SIGTERM)
	}
	var sum runStats
	seen := map[string]int{}
	for i, w := range ws {
		o := <-w.done
		r.runs++
		r.exit(o)
		s, ok := parseStats(w.stderr.Bytes())
		v.check(ok, "worker %d: no --stats=json line: %s", i, tail(w.stderr.Bytes()))
		v.check(o.code == 143 && !o.hung, "worker %d: exit %s, want 143 (SIGTERM); stderr: %s", i, o.exitName(), tail(w.stderr.Bytes()))
		for name, got := range map[string]int{"received": s.Received, "acked": s.Acked, "nacked": s.Nacked,
			"failed": s.Failed, "timed_out": s.TimedOut, "lease_lost": s.LeaseLost, "ack_gone": s.AckGone} {
			v.check(w.scrape[name] == got, "worker %d: /metrics says %s %d, --stats %d", i, name, w.scrape[name], got)
		}
		sum.Received += w.scrape["received"]
		sum.Acked += w.scrape["acked"]
		sum.Retries += s.Retries
		for id, k := range counted(idsIn(w.stdout.Bytes())) {
			seen[id] += k
		}
	}
	st := stats(t, b, "so")
	missing := map[string]bool{}
	for _, id := range ids {
		if seen[id] == 0 {
			missing[id] = true
		}
	}
	r.lost, r.dup = len(missing), duplicates(seen)
	r.why = fmt.Sprintf("lapsed %d", st.Lapsed())
	r.note = fmt.Sprintf("%v; metrics: received %d (node delivered %d), acked %d (node %d); retries %d",
		time.Since(start).Round(100*time.Millisecond), sum.Received, st.Delivered(), sum.Acked, st.Acked(), sum.Retries)
	v.check(len(missing) == 0, "%d of %d messages never handled: %s", len(missing), n, sample(missing))
	v.check(r.dup <= st.Lapsed(), "%d handled twice, but only %d leases lapsed", r.dup, st.Lapsed())
	v.check(sum.Acked == st.Acked() && st.Acked() == n, "the workers' acked add up to %d, the node acked %d of %d", sum.Acked, st.Acked(), n)
	v.check(sum.Received == st.Delivered(), "the workers' received add up to %d, the node delivered %d", sum.Received, st.Delivered())
}

// freeAddr is a loopback address that was free a moment ago, for a --metrics-addr.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var messagesSeries = regexp.MustCompile(`^narad_worker_messages_total\{outcome="([a-z_]+)",topic="[^"]*"\} (\d+)$`)

// scrapeMessages reads narad_worker_messages_total by outcome from a worker's /metrics.
func scrapeMessages(addr string) (map[string]int, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%d: %s", resp.StatusCode, body)
	}
	m := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if g := messagesSeries.FindStringSubmatch(sc.Text()); g != nil {
			n, _ := strconv.Atoi(g[2])
			m[g[1]] = n
		}
	}
	return m, sc.Err()
}
