//go:build unix

package soak

import (
	"fmt"
	"testing"
	"time"
)

// outageFaults: six acks in ten answered 503, a long outage for every ack batch.
var outageFaults = []string{"ack=503:0.6"}

// outageLease is shorter than the retries of an ack through that outage take (backoff
// doubles to 5 s), so a lease kept only until the ack was sent would run out.
const outageLease = 3 * time.Second

// TestAckOutage: N messages through plain `sub` and exec `-j 8` while most acks answer
// 503: the leases of messages whose acks are being retried are kept, so the node
// delivers nothing twice: no lapsed lease, no duplicate, no ack_gone, exit 0.
func TestAckOutage(t *testing.T) {
	skipShort(t)
	rp := &report{title: fmt.Sprintf("Ack outage: broker %v, lease %s", outageFaults, outageLease)}
	defer rp.print(t)
	b := startBroker(t, false, outageFaults...)
	for i, c := range []struct {
		name string
		exec bool
		n    int
	}{
		{"sub", false, scale(100, 1000)},
		{"exec-j8", true, scale(40, 1000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rp.add(c.name)
			v := newVerdict(t)
			tag := fmt.Sprintf("o%d", i)
			newTopic(t, b, tag, outageLease)
			ids := fill(t, b, tag, tag, c.n, 0)
			r.messages = c.n
			args := []string{"sub", tag, "--drain", "--stats=json"}
			if c.exec {
				args = append(args, "-j", "8", "--prefix", "--", "cat")
			} else {
				args = append(args, "-o", "raw")
			}
			o, stdout, stderr := runNarad(t, b.URL(), time.Duration(scale(180, 1800))*time.Second, nil, args...)
			r.runs++
			r.exit(o)
			s, ok := parseStats(stderr)
			v.check(o.code == 0 && !o.hung, "exit %s after %v, want 0; stderr: %s", o.exitName(), o.elapsed, tail(stderr))
			v.check(ok, "no --stats=json line on stderr: %s", tail(stderr))
			seen := counted(idsIn(stdout))
			missing := map[string]bool{}
			for _, id := range ids {
				if seen[id] == 0 {
					missing[id] = true
				}
			}
			st := stats(t, b, tag)
			r.lost, r.dup = len(missing), duplicates(seen)
			r.why = fmt.Sprintf("lapsed %d", st.Lapsed())
			r.note = fmt.Sprintf("%v; narad retries %d, ack_gone %d, lease_lost %d; broker redeliveries %d",
				o.elapsed.Round(100*time.Millisecond), s.Retries, s.AckGone, s.LeaseLost, st.Delivered()-c.n)
			v.check(len(missing) == 0, "%d of %d messages never printed or handled: %s", len(missing), c.n, sample(missing))
			v.check(st.Lapsed() == 0 && r.dup == 0 && s.AckGone == 0 && s.LeaseLost == 0,
				"%d leases lapsed, %d duplicates, ack_gone %d, lease_lost %d: want none while acks are retried",
				st.Lapsed(), r.dup, s.AckGone, s.LeaseLost)
			v.check(st.Available() == 0 && st.InFlight() == 0 && st.Acked() == c.n,
				"not all settled: broker has %d available, %d in flight, %d of %d acked", st.Available(), st.InFlight(), st.Acked(), c.n)
		})
	}
}
