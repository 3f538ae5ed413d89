//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// metrics: a worker with --metrics-addr against the same worker without it, in exec
// mode (--count N -j 4 -- true) and draining into /dev/null. Nothing scrapes: the
// cost measured is counting (the client's hooks, the command histogram) and serving
// nothing, which is what a worker pays between scrapes.
func (b *bench) metrics() []row {
	k := b.startBroker("--topic", "e", "--topic", "d")
	defer k.stop()
	base, narad := b.alternate(b.execSub(k, "e"), b.execSub(k, "e", "--metrics-addr", "127.0.0.1:0"))
	rows := []row{cost("8 metrics",
		fmt.Sprintf("narad sub t --count %d -j 4 --metrics-addr 127.0.0.1:0 -- true", b.execN),
		"the same without --metrics-addr", base, narad, 0.95)}
	// Five times the drain goal's messages: a 20,000-message drain is over in a tenth of
	// a second, where a loaded machine's noise is larger than the 5% this looks for.
	dn := 5 * b.drainN
	b.logf("  a drain of %d", dn)
	drain := func(extra ...string) func() time.Duration { return b.subDrain(k, "d", dn, extra...)(runProc) }
	base, narad = b.alternate(drain(), drain("--metrics-addr", "127.0.0.1:0"))
	rows = append(rows, cost("8 metrics",
		fmt.Sprintf("narad sub t --drain -o raw --metrics-addr 127.0.0.1:0 > /dev/null (%d messages)", dn),
		"the same without --metrics-addr", base, narad, 0.95))
	// Instructions do not depend on the machine's load, which hides a 5% difference in
	// wall time here: drains of drainN under valgrind.
	if _, err := exec.LookPath("valgrind"); err == nil {
		count := func(extra ...string) float64 {
			k.fill("d", b.drainN)
			argv := append([]string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
				b.narad, "sub", "d", "--drain", "-o", "raw"}, extra...)
			cmd := exec.Command("valgrind", append(argv, "--stats=json")...)
			cmd.Env = append(append(os.Environ(), k.env()...), valgrindSafe)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), fmt.Sprintf(`{"received":%d,`, b.drainN)) {
				// A broken run counts what ran until it broke: no drain's count.
				fatalf("the drain under valgrind did not take all %d messages (%v): %s", b.drainN, err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if _, refs, ok := strings.Cut(line, "I   refs:"); ok {
					n, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(refs), ",", ""), 64)
					if err == nil {
						return n / 1e6
					}
				}
			}
			fatalf("valgrind counted nothing for the drain: %s", out)
			return 0
		}
		// How many requests a drain makes depends on timing even here: three of each,
		// taking turns, and the medians.
		var bs, ns []float64
		for i := range 3 {
			if i%2 == 0 {
				bs, ns = append(bs, count()), append(ns, count("--metrics-addr", "127.0.0.1:0"))
			} else {
				ns, bs = append(ns, count("--metrics-addr", "127.0.0.1:0")), append(bs, count())
			}
		}
		b.logf("  drain instructions (M): without %.1f, with %.1f", bs, ns)
		ib, in := median(bs), median(ns)
		r := row{goal: "8 metrics", command: fmt.Sprintf("the drain of %d, instructions (user space)", b.drainN),
			baseline: "the same without --metrics-addr", unit: "M instr", base: ib, narad: in, ratio: ib / in, target: "≥ 0.95×"}
		r.met = r.ratio >= 0.95
		rows = append(rows, r)
	}
	return rows
}

// cost is a speedRow whose target says its two decimals (speedRow shows one).
func cost(goal, command, baseline string, base, narad []float64, target float64) row {
	r := speedRow(goal, command, baseline, base, narad, target)
	r.target = fmt.Sprintf("≥ %.2f×", target)
	return r
}
