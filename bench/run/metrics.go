package main

import (
	"fmt"
	"strconv"
	"time"
)

// metrics: a worker with --metrics-addr against the same worker without it, in exec
// mode (--count N -j 4 -- true) and draining into /dev/null. Nothing scrapes: the
// cost measured is counting (the client's hooks, the command histogram) and serving
// nothing, which is what a worker pays between scrapes.
func (b *bench) metrics() []row {
	k := b.startBroker("--topic", "e", "--topic", "d")
	defer k.stop()
	n := strconv.Itoa(b.execN)
	exec := func(extra ...string) func() time.Duration {
		return func() time.Duration {
			k.fill("e", b.execN)
			args := append([]string{b.narad, "sub", "e", "--count", n, "-j", "4", "--stats=json"}, extra...)
			s := runProc(k.env(), "", append(args, "--", "true")...)
			mustAck(s, b.execN)
			return s.wall
		}
	}
	base, narad := b.alternate(exec(), exec("--metrics-addr", "127.0.0.1:0"))
	rows := []row{cost("6 metrics",
		fmt.Sprintf("narad sub t --count %d -j 4 --metrics-addr 127.0.0.1:0 -- true", b.execN),
		"the same without --metrics-addr", base, narad, 0.95)}
	// Five times the drain goal's messages: a 20,000-message drain is over in a tenth of
	// a second, where a loaded machine's noise is larger than the 5% this looks for.
	dn := 5 * b.drainN
	b.logf("  a drain of %d", dn)
	drain := func(extra ...string) func() time.Duration {
		return func() time.Duration {
			k.fill("d", dn)
			args := append([]string{b.narad, "sub", "d", "--drain", "-o", "raw", "--stats=json"}, extra...)
			s := runProc(k.env(), "", args...)
			mustAck(s, dn)
			return s.wall
		}
	}
	base, narad = b.alternate(drain(), drain("--metrics-addr", "127.0.0.1:0"))
	return append(rows, cost("6 metrics",
		fmt.Sprintf("narad sub t --drain -o raw --metrics-addr 127.0.0.1:0 > /dev/null (%d messages)", dn),
		"the same without --metrics-addr", base, narad, 0.95))
}

// cost is a speedRow whose target says its two decimals (speedRow shows one).
func cost(goal, command, baseline string, base, narad []float64, target float64) row {
	r := speedRow(goal, command, baseline, base, narad, target)
	r.target = fmt.Sprintf("≥ %.2f×", target)
	return r
}
