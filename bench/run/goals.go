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

// alternate runs a and b runs times each, a first in even runs and b first in odd
// ones, and returns their samples in seconds.
func (b *bench) alternate(a, c func() time.Duration) (as, cs []float64) {
	for i := range b.runs {
		first, second := a, c
		if i%2 == 1 {
			first, second = c, a
		}
		x := first().Seconds()
		y := second().Seconds()
		if i%2 == 1 {
			x, y = y, x
		}
		b.logf("  run %d: baseline %.3fs, narad %.3fs", i+1, x, y)
		as, cs = append(as, x), append(cs, y)
	}
	return as, cs
}

// ceilingRow is an informational throughput row for the pipe taken as a file (see
// bench.pipeAsFile): what the exact pipe's row would read if exactness cost nothing.
func ceilingRow(goal, command, baseline string, base, ceiling []float64, target float64) row {
	r := speedRow(goal, command, baseline, base, ceiling, target)
	r.informational = true
	r.target = fmt.Sprintf("none: the most an exact pipe could reach (its target %s)", r.target)
	return r
}

// speedRow is a throughput row: the baseline's median time over narad's.
func speedRow(goal, command, baseline string, base, narad []float64, target float64) row {
	r := row{goal: goal, command: command, baseline: baseline, unit: "s",
		base: median(base), narad: median(narad), target: fmt.Sprintf("≥ %.1f×", target)}
	r.ratio = r.base / r.narad
	r.met = r.ratio >= target
	return r
}

// produce: `narad produce --lines` against single POSTs at the same concurrency.
func (b *bench) produce() []row {
	lines := b.writeLines("produce.txt", b.produceN)
	j := strconv.Itoa(b.produceJ)
	base, narad := b.alternate(
		func() time.Duration {
			k := b.startBroker("--topic", "p")
			defer k.stop()
			return k.loop("produce", "p", b.produceN, b.produceJ)
		},
		func() time.Duration {
			k := b.startBroker("--topic", "p")
			defer k.stop()
			return runProc(k.env(), lines, b.narad, "produce", "p", "--lines", "-j", j).wall
		})
	return []row{speedRow("1 batch produce",
		fmt.Sprintf("narad produce t --lines -j %d < %d lines", b.produceJ, b.produceN),
		fmt.Sprintf("Go loop of single POSTs, %d in flight", b.produceJ), base, narad, 5)}
}

// drain: `narad sub --drain -o raw` against a loop of batch consume + batch ack, to
// /dev/null and through `| cat > /dev/null`, where a line goes into the pipe only once
// cat took the one before and is acked only once taken; and through the pipe against
// four such loops at once, which is what the node itself allows here.
func (b *bench) drain() []row {
	k := b.startBroker("--topic", "d")
	defer k.stop()
	raw := func(j int) func() time.Duration {
		return func() time.Duration {
			k.fill("d", b.drainN)
			return k.loop("batch-drain", "d", b.drainN, j)
		}
	}
	sub := b.subDrain(k, "d", b.drainN)
	ceiling := b.subDrainOf(b.pipeAsFile, k, "d", b.drainN)
	base, narad := b.alternate(raw(1), sub(runProc))
	rows := []row{speedRow("2 pipelined drain",
		fmt.Sprintf("narad sub t --drain -o raw > /dev/null (%d messages)", b.drainN),
		"Go loop: consume max=100, then batch ack, one at a time", base, narad, 1.2)}
	b.logf("  through a pipe")
	base, narad = b.alternate(raw(1), sub(runPiped))
	rows = append(rows, speedRow("2 pipelined drain",
		fmt.Sprintf("narad sub t --drain -o raw | cat > /dev/null (%d messages)", b.drainN),
		"the same", base, narad, 1.2))
	b.logf("  through a pipe, against four loops")
	base, narad = b.alternate(raw(4), sub(runPiped))
	rows = append(rows, speedRow("2 pipelined drain",
		fmt.Sprintf("narad sub t --drain -o raw | cat > /dev/null (%d messages)", b.drainN),
		"4 such Go loops at once", base, narad, 0.9))
	b.logf("  through a pipe taken for a file (not exact), against one loop and four")
	base, narad = b.alternate(raw(1), ceiling(runPiped))
	rows = append(rows, ceilingRow("2 pipelined drain",
		fmt.Sprintf("the same, a pipe taken for a file (not exact) (%d messages)", b.drainN),
		"Go loop: consume max=100, then batch ack, one at a time", base, narad, 1.2))
	base, narad = b.alternate(raw(4), ceiling(runPiped))
	return append(rows, ceilingRow("2 pipelined drain",
		fmt.Sprintf("the same, a pipe taken for a file (not exact) (%d messages)", b.drainN),
		"4 such Go loops at once", base, narad, 0.9))
}

// subDrain is a timed `narad sub TOPIC --drain -o raw` of n messages, run by run
// (runProc: stdout on /dev/null; runPiped: through cat), checked to have acked all n.
// Extra flags go after the others.
func (b *bench) subDrain(k *broker, topic string, n int, extra ...string) func(run func([]string, string, ...string) sample) func() time.Duration {
	return b.subDrainOf(b.narad, k, topic, n, extra...)
}

// subDrainOf is subDrain with the narad binary bin.
func (b *bench) subDrainOf(bin string, k *broker, topic string, n int, extra ...string) func(run func([]string, string, ...string) sample) func() time.Duration {
	return func(run func([]string, string, ...string) sample) func() time.Duration {
		return func() time.Duration {
			k.fill(topic, n)
			argv := append([]string{bin, "sub", topic, "--drain", "-o", "raw", "--stats=json"}, extra...)
			s := run(k.env(), "", argv...)
			mustAck(s, n)
			return s.wall
		}
	}
}

// legacy: the same drain against an older node, into /dev/null and through cat,
// against 8 loops of single consume + ack, and the pipe against the file.
func (b *bench) legacy() []row {
	k := b.startBroker("--legacy", "--topic", "l")
	defer k.stop()
	loops := func() time.Duration {
		k.fill("l", b.legacyN)
		return k.loop("single-drain", "l", b.legacyN, 8)
	}
	sub := b.subDrain(k, "l", b.legacyN)
	base, file := b.alternate(loops, sub(runProc))
	rows := []row{speedRow("3 older nodes",
		fmt.Sprintf("narad sub t --drain -o raw > /dev/null on narad dev --legacy (%d messages)", b.legacyN),
		"8 Go loops of single consume + ack", base, file, 0.9)}
	b.logf("  through a pipe")
	base, piped := b.alternate(loops, sub(runPiped))
	rows = append(rows, speedRow("3 older nodes",
		fmt.Sprintf("narad sub t --drain -o raw | cat > /dev/null on narad dev --legacy (%d messages)", b.legacyN),
		"the same", base, piped, 0.9))
	b.logf("  through a pipe, against the same into /dev/null")
	file, piped = b.alternate(sub(runProc), sub(runPiped))
	rows = append(rows, speedRow("3 older nodes",
		fmt.Sprintf("the same through | cat against > /dev/null (%d messages)", b.legacyN),
		"narad into /dev/null", file, piped, 0.9))
	ceiling := b.subDrainOf(b.pipeAsFile, k, "l", b.legacyN)
	b.logf("  through a pipe taken for a file (not exact), against the loops and /dev/null")
	base, piped = b.alternate(loops, ceiling(runPiped))
	rows = append(rows, ceilingRow("3 older nodes",
		fmt.Sprintf("the same through | cat, a pipe taken for a file (not exact) (%d messages)", b.legacyN),
		"8 Go loops of single consume + ack", base, piped, 0.9))
	file, piped = b.alternate(sub(runProc), ceiling(runPiped))
	return append(rows, ceilingRow("3 older nodes",
		fmt.Sprintf("the same through | cat, a pipe taken for a file (not exact), against > /dev/null (%d messages)", b.legacyN),
		"narad into /dev/null", file, piped, 0.9))
}

// exec: a command per message against xargs running the same command per line.
func (b *bench) exec() []row {
	lines := b.writeLines("exec.txt", b.execN)
	k := b.startBroker("--topic", "e")
	defer k.stop()
	base, narad := b.alternate(
		func() time.Duration {
			return runProc(nil, lines, "xargs", "-P4", "-n1", "true").wall
		},
		b.execSub(k, "e"))
	return []row{speedRow("4 exec",
		fmt.Sprintf("narad sub t --count %d -j 4 -- true", b.execN),
		fmt.Sprintf("xargs -P4 -n1 true < %d lines", b.execN), base, narad, 0.9)}
}

// execSub is a timed exec-mode run, `narad sub TOPIC --count N -j 4 [extra] -- true`
// over execN messages put there first, checked to have acked them all.
func (b *bench) execSub(k *broker, topic string, extra ...string) func() time.Duration {
	return func() time.Duration {
		k.fill(topic, b.execN)
		argv := append([]string{b.narad, "sub", topic, "--count", strconv.Itoa(b.execN), "-j", "4", "--stats=json"}, extra...)
		s := runProc(k.env(), "", append(argv, "--", "true")...)
		mustAck(s, b.execN)
		return s.wall
	}
}

// startup: process starts of narad and of a minimal program linking the same
// libraries, one of each in turn so that both see the same load.
func (b *bench) startup() []row {
	var rows []row
	for _, args := range [][]string{{"version"}, {"sub", "--help"}} {
		var base, narad []float64
		for i := range b.starts {
			x := func() {
				base = append(base, runProc(nil, "", append([]string{b.baseline}, args...)...).wall.Seconds()*1000)
			}
			y := func() {
				narad = append(narad, runProc(nil, "", append([]string{b.narad}, args...)...).wall.Seconds()*1000)
			}
			if i%2 == 0 {
				x()
				y()
			} else {
				y()
				x()
			}
		}
		cmd := "narad " + args[0]
		if len(args) > 1 {
			cmd += " " + args[1]
		}
		r := row{goal: "5 start-up", command: cmd, baseline: "cobra + viper + lipgloss minimal binary (bench/startup-baseline)",
			unit: "ms", base: median(base), narad: median(narad), target: "≤ 1.2×"}
		r.ratio = r.narad / r.base
		r.met = r.ratio <= 1.2
		b.logf("  %s: baseline %.2f ms, narad %.2f ms (medians of %d starts)", cmd, r.base, r.narad, b.starts)
		rows = append(rows, r)
		// Instructions do not depend on the machine's load; valgrind counts them (in
		// user space only: exec and page faults are not in it).
		if _, err := exec.LookPath("valgrind"); err == nil {
			ib, in := instructions(b.baseline, args), instructions(b.narad, args)
			if ib == 0 || in == 0 {
				continue
			}
			r := row{goal: "5 start-up", command: cmd + " (instructions, user space)", baseline: "the same minimal binary",
				unit: "M instr", base: ib / 1e6, narad: in / 1e6, ratio: in / ib, target: "≤ 1.2×"}
			r.met = r.ratio <= 1.2
			rows = append(rows, r)
		}
	}
	return rows
}

// valgrindSafe keeps the Go runtime off RDTSCP, an instruction valgrind does not
// know: runtime.cputicks uses it where the CPU has it, and valgrind then kills the
// program with SIGILL, counting only what ran until then (a 20,000-message drain
// counted 6 M instructions instead of 400 M). RDTSC, taken instead, counts the same.
const valgrindSafe = "GODEBUG=cpu.rdtscp=off"

// instructions is the median of the instruction counts of countRuns runs of argv
// (with valgrind): the runtime's background threads make a count vary by a tenth
// from run to run, and now and then by more. 0 when valgrind could not tell.
func instructions(bin string, args []string) float64 {
	const countRuns = 7
	var counts []float64
	for range countRuns {
		if n := instructionsOnce(bin, args); n > 0 {
			counts = append(counts, n)
		}
	}
	return median(counts)
}

// instructionsOnce counts the instructions one run of argv executes; 0 when valgrind
// could not tell. A run valgrind broke (it does not know every instruction the Go
// runtime may use, RDTSCP) is tried again.
func instructionsOnce(bin string, args []string) float64 {
	argv := append([]string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", bin}, args...)
	for range 5 {
		cmd := exec.Command("valgrind", argv...)
		cmd.Env = append(os.Environ(), valgrindSafe)
		out, err := cmd.CombinedOutput()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if _, refs, ok := strings.Cut(line, "I   refs:"); ok {
				n, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(refs), ",", ""), 64)
				if err == nil {
					return n
				}
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench: valgrind counted nothing for %s %s\n", bin, strings.Join(args, " "))
	return 0
}

// memory: narad's peak RSS draining memN messages against draining 1% of that.
func (b *bench) memory() []row {
	small := max(b.memN/100, 1)
	k := b.startBroker("--topic", "m")
	defer k.stop()
	rss := func(n int) float64 {
		k.fill("m", n)
		s := runProc(k.env(), "", b.narad, "sub", "m", "--drain", "-o", "json", "--stats=json")
		mustAck(s, n)
		b.logf("  %d messages: peak RSS %.1f MiB", n, float64(s.maxRSS)/(1<<20))
		return float64(s.maxRSS) / (1 << 20)
	}
	var base, narad []float64
	for range max(b.runs/2, 1) {
		base = append(base, rss(small))
		narad = append(narad, rss(b.memN))
	}
	r := row{goal: "6 memory", command: fmt.Sprintf("narad sub t --drain -o json > /dev/null (%d messages): peak RSS", b.memN),
		baseline: fmt.Sprintf("the same, %d messages", small), unit: "MiB",
		base: median(base), narad: median(narad), target: "≤ 1.2× and ≤ 40 MiB"}
	r.ratio = r.narad / r.base
	r.met = r.ratio <= 1.2 && r.narad <= 40
	return []row{r}
}
