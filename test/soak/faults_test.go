//go:build unix

package soak

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
)

// brokerFaults are the faults of the soak: a fifth of acks and a tenth of consumes answered
// 503, one request in fifty reset, 2 ms on every request.
var brokerFaults = []string{"ack=503:0.2", "consume=503:0.1", "reset=0.02", "latency=2ms"}

// proxyCut is the flaky proxy's probability of each cut (before, after, mid-answer).
const proxyCut = 0.02

// proxyLease is the topics' lease behind the proxy: messages hidden by a cut consume
// answer come back after it, so it is short.
const proxyLease = 3 * time.Second

type faultCase struct {
	name   string
	legacy bool // the broker behaves like an older node: no batches
	exec   bool // exec mode -j 8 instead of plain sub
	proxy  bool // through the flaky proxy instead of the broker's own faults
	n      int
}

// TestFaults: N messages through plain `sub` and exec `-j 8`, against a broker that
// fails acks and consumes, resets connections and answers late, also as an older node,
// and through a proxy that cuts connections: every message settled, none lost,
// duplicates no more than the lapsed leases and nacks that alone can cause one, exit 0.
func TestFaults(t *testing.T) {
	skipShort(t)
	rnd := newRand(t)
	rp := &report{title: "Faults: broker " + strings.Join(brokerFaults, " ") +
		fmt.Sprintf("; proxy cuts %.0f%% before, %.0f%% after, %.0f%% mid-answer", proxyCut*100, proxyCut*100, proxyCut*100)}
	defer rp.print(t)

	plainN, execN := scale(300, 10_000), scale(150, 10_000)
	cases := []faultCase{
		{name: "sub", n: plainN},
		{name: "exec-j8", exec: true, n: execN},
		{name: "legacy/sub", legacy: true, n: scale(150, 10_000)},
		{name: "legacy/exec-j8", legacy: true, exec: true, n: scale(100, 10_000)},
		{name: "proxy/sub", proxy: true, n: plainN},
		{name: "proxy/exec-j8", proxy: true, exec: true, n: execN},
	}
	// One faulty broker per mode, shared by its cases (a topic each); the proxy cases get
	// a clean broker of their own.
	brokers := map[bool]*devbroker.Broker{
		false: startBroker(t, false, brokerFaults...),
		true:  startBroker(t, true, brokerFaults...),
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b *devbroker.Broker
			server := ""
			var fp *flakyProxy
			if c.proxy {
				b = startBroker(t, false)
				fp = startProxy(t, b.Addr(), proxyCut, rnd)
				server = fp.URL()
			} else {
				b = brokers[c.legacy]
				server = b.URL()
			}
			runFaultCase(t, rp.add(c.name), b, server, fp, c, fmt.Sprintf("f%d", i))
		})
	}
}

func runFaultCase(t *testing.T, r *row, b *devbroker.Broker, server string, fp *flakyProxy, c faultCase, tag string) {
	v := newVerdict(t)
	lease := time.Duration(0)
	if c.proxy {
		lease = proxyLease
	}
	newTopic(t, b, tag, lease)
	ids := fill(t, b, tag, tag, c.n, 0)
	r.messages = c.n

	args := []string{"sub", tag, "--drain", "--stats=json"}
	if c.proxy {
		// Small batches, so that the proxy sees enough requests to cut.
		args = append(args, "--max", "10")
	}
	if c.exec {
		args = append(args, "-j", "8", "--prefix", "--", "cat")
	} else {
		args = append(args, "-o", "raw")
	}
	// Generous: 10,000 messages with 2 ms a request on a busy machine take minutes.
	limit := time.Duration(scale(120, 1800)) * time.Second

	var printed []string
	var totals runStats
	passes := 0
	// Behind the proxy, messages of a cut consume answer stay leased until their lease
	// runs out, after narad's --drain ended: later passes collect them. Against the
	// broker's own faults one pass must do it all.
	maxPasses := 1
	if c.proxy {
		maxPasses = 12
	}
	for passes < maxPasses {
		passes++
		lapsedBefore := stats(t, b, tag).Lapsed()
		o, stdout, stderr := runNarad(t, server, limit, nil, args...)
		r.runs++
		r.exit(o)
		printed = append(printed, idsIn(stdout)...)
		s, ok := parseStats(stderr)
		// Behind the proxy an ack whose answer was cut is sent again and answered 410
		// (it had landed): narad cannot tell that from a lapsed lease and exits 4.
		exitOK := o.code == 0 || (c.proxy && o.code == 4 && s.AckGone > 0)
		v.check(exitOK && !o.hung, "pass %d: exit %s after %v, want 0; stderr: %s", passes, o.exitName(), o.elapsed, tail(stderr))
		v.check(ok || o.hung, "pass %d: no --stats=json line on stderr: %s", passes, tail(stderr))
		totals.add(s)
		if o.hung || !exitOK {
			break
		}
		st := stats(t, b, tag)
		t.Logf("pass %d: exit %s after %v, received %d, acked %d, ack_gone %d; the node has %d available, %d held",
			passes, o.exitName(), o.elapsed.Round(time.Millisecond), s.Received, s.Acked, s.AckGone, st.Available(), st.InFlight())
		// --drain ends when the node has nothing ready for it: what is available now must
		// have come back (a lease ran out) since its last empty answer, or sit behind flow
		// control. Behind the proxy that happens: the messages of a cut consume answer are
		// leased to nobody, and once 1024 acks pile up past them their partition hands out
		// nothing until their lease runs out (API.md, flow control).
		lapsed := st.Lapsed() - lapsedBefore
		ready, blocked := readiness(st)
		if blocked > 0 {
			r.count("passes ended at a full acked-ahead window", 1)
		}
		v.check(ready <= lapsed,
			"pass %d: --drain exited with %d messages ready (and %d behind flow control), only %d of them back from a lapsed lease meanwhile",
			passes, ready, blocked, lapsed)
		if st.Available() == 0 && st.InFlight() == 0 {
			break
		}
		if !c.proxy {
			break
		}
		// What is still held was hidden by a cut: wait for its leases to run out.
		waitFor(3*proxyLease, func() bool { return stats(t, b, tag).InFlight() == 0 })
	}

	st := stats(t, b, tag)
	seen := counted(printed)
	lost := 0
	missing := map[string]bool{}
	for _, id := range ids {
		if seen[id] == 0 {
			lost++
			missing[id] = true
		}
	}
	r.lost = lost
	r.dup = duplicates(seen)
	redelivered := st.Delivered() - c.n
	r.why = fmt.Sprintf("lapsed %d, nacked %d", st.Lapsed(), totals.Nacked)
	r.note = fmt.Sprintf("passes %d; narad retries %d, ack_gone %d, lease_lost %d; broker redeliveries %d",
		passes, totals.Retries, totals.AckGone, totals.LeaseLost, redelivered)
	if fp != nil {
		cuts, hidden := fp.summary()
		r.note += fmt.Sprintf("; cuts: %s; messages hidden by cut consume answers %d", cuts, hidden)
		// A 410 on an ack is either a retry of one that had landed, or an ack too late for
		// a lease narad held (not one hidden by a cut answer: narad never saw those).
		landed := fp.handlesLanded("ack")
		heldLapsed := max(st.Lapsed()-hidden, 0)
		v.check(totals.AckGone <= landed+heldLapsed,
			"ack_gone %d, more than the %d acked handles whose answer the proxy cut after they landed and the %d leases narad held that ran out",
			totals.AckGone, landed, heldLapsed)
	}

	v.check(lost == 0, "%d of %d messages never printed or handled: %s", lost, c.n, sample(missing))
	v.check(st.Available() == 0 && st.InFlight() == 0 && st.Acked() == c.n,
		"not all settled: broker has %d available, %d in flight, %d of %d acked", st.Available(), st.InFlight(), st.Acked(), c.n)
	// A message is printed twice only if it was delivered twice, which only a lease
	// that ran out or a nack makes the node do.
	v.check(r.dup <= st.Lapsed()+totals.Nacked,
		"%d duplicates, more than the %d lapsed leases and %d nacks that can cause one", r.dup, st.Lapsed(), totals.Nacked)
	v.check(totals.Bugs == 0, "narad counted %d second settlements", totals.Bugs)
}

// readiness splits a topic's available messages into those a consume can get now and
// those behind a partition's flow control (max in flight or max acked ahead reached).
func readiness(st devbroker.TopicStats) (ready, blocked int) {
	for _, p := range st.Partitions {
		if p.InFlight >= st.Spec.MaxInFlightPerPartition || p.AckedAhead >= st.Spec.MaxAckedAheadPerPartition {
			blocked += p.Available
		} else {
			ready += p.Available
		}
	}
	return ready, blocked
}

func (s *runStats) add(o runStats) {
	s.Received += o.Received
	s.Acked += o.Acked
	s.Nacked += o.Nacked
	s.Failed += o.Failed
	s.TimedOut += o.TimedOut
	s.LeaseLost += o.LeaseLost
	s.AckGone += o.AckGone
	s.Retries += o.Retries
	s.Bugs += o.Bugs
}

// tail is the end of a process's stderr, for a failure message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
