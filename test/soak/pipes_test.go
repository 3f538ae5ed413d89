//go:build unix

package soak

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
)

// pipeLimit bounds one pipe run: narad must notice its reader going away by itself.
const pipeLimit = 15 * time.Second

// headLease is the lease of the head topics: what a failed run left held comes back
// soon, for the checks that follow.
const headLease = 3 * time.Second

// slowLease is the lease of the slow-reader topics, shorter than the reader takes.
const slowLease = 2 * time.Second

// headReadSize is what GNU head reads from a pipe at a time (BUFSIZ): it can have taken
// this much past the last line it printed.
const headReadSize = 8192

// TestPipes: narad sub | head -n 1 and -n 2 with --max 1, 10, 100 and payloads of 10 B
// and 16 KiB, and a `while read` reader slower than the lease: what the reader took is
// acked (exactly, for the line-at-a-time reader), the rest available at once, no lease
// lapses, exit 0, no hang.
func TestPipes(t *testing.T) {
	skipShort(t)
	rp := &report{title: fmt.Sprintf("Pipes: narad sub -o raw | head, and | a while-read reader slower than a %v lease", slowLease)}
	defer rp.print(t)
	b := startBroker(t, false)
	reps := scale(1, 10)
	n := 0
	runCase := func(name string, fn func(v *verdict)) {
		t.Run(name, func(t *testing.T) { fn(newVerdict(t)) })
	}
	for _, size := range []int{10, 16 << 10} {
		for _, k := range []int{1, 2} {
			for _, maxN := range []int{1, 10, 100} {
				name := fmt.Sprintf("head -n %d, --max %d, %s", k, maxN, sizeName(size))
				r := rp.add(name)
				runCase(name, func(v *verdict) {
					for range reps {
						n++
						headRun(v.t, v, r, b, fmt.Sprintf("p%d", n), k, maxN, size)
						if v.t.Failed() {
							return
						}
					}
				})
			}
		}
	}
	type slow struct{ maxN, size, lines, reps int }
	slows := []slow{{10, 10, 6, 1}, {100, 10, 6, 1}}
	if long() {
		slows = nil
		for _, size := range []int{10, 16 << 10} {
			for _, maxN := range []int{1, 10, 100} {
				slows = append(slows, slow{maxN, size, 15, 3})
			}
		}
	}
	for _, c := range slows {
		name := fmt.Sprintf("while read, %d lines, --max %d, %s", c.lines, c.maxN, sizeName(c.size))
		r := rp.add(name)
		runCase(name, func(v *verdict) {
			for range c.reps {
				n++
				slowRun(v.t, v, r, b, fmt.Sprintf("q%d", n), c.maxN, c.size, c.lines)
				if v.t.Failed() {
					return
				}
			}
		})
	}
}

func sizeName(size int) string {
	if size >= 1<<10 {
		return fmt.Sprintf("%d KiB", size>>10)
	}
	return fmt.Sprintf("%d B", size)
}

// pipeResult is how a pipe run went: narad's outcome and stderr, what the reader
// printed, and whether the reader had to be killed.
type pipeResult struct {
	o          outcome
	stderr     []byte
	readOut    []byte
	readerHung bool
}

// pipeRun runs narad sub with args, its stdout a pipe into reader.
func pipeRun(t *testing.T, b *devbroker.Broker, reader *exec.Cmd, args ...string) pipeResult {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var readOut bytes.Buffer
	reader.Stdin, reader.Stdout = pr, &readOut
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone := make(chan struct{})
	go func() { reader.Wait(); close(readerDone) }()
	cmd := naradCmd(t, b.URL(), args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close() // the reader and narad hold the pipe's ends now
	pw.Close()
	o := waitBounded(cmd, start, pipeLimit)
	readerHung := false
	select {
	case <-readerDone:
	case <-time.After(pipeLimit):
		reader.Process.Kill()
		readerHung = true
		<-readerDone
	}
	return pipeResult{o, stderr.Bytes(), readOut.Bytes(), readerHung}
}

// checkEnded records a run of total messages and checks how it ended: the reader
// (named reader in the failures) and narad both ended, narad with exit 0, and narad
// left nothing held. It returns the topic's stats at that moment.
func (p pipeResult) checkEnded(t *testing.T, v *verdict, r *row, b *devbroker.Broker, tag, what, reader string, total int) devbroker.TopicStats {
	t.Helper()
	r.runs++
	r.messages += total
	r.exit(p.o)
	v.check(!p.readerHung, "%s: %s never ended", what, reader)
	v.check(!p.o.hung, "%s: narad still running %v after %s exited", what, pipeLimit, reader)
	v.check(p.o.hung || p.o.code == 0, "%s: exit %s, want 0; stderr: %s", what, p.o.exitName(), tail(p.stderr))
	st := stats(t, b, tag)
	r.count("left held at exit", st.InFlight())
	v.check(st.InFlight() == 0, "%s: %d messages still held after narad exited", what, st.InFlight())
	return st
}

// ackedOf takes what is left of tag's total messages, and returns how many were
// acked and which of those the reader got were not.
func ackedOf(t *testing.T, b *devbroker.Broker, tag string, total int, got []string) (acked int, unacked map[string]bool) {
	t.Helper()
	rest := setOf(takeRest(t, b, tag))
	unacked = map[string]bool{}
	for _, id := range got {
		if rest[id] {
			unacked[id] = true
		}
	}
	return total - len(rest), unacked
}

// headRun: a backlog bigger than any batch, narad sub --max M -o raw | head -n K.
func headRun(t *testing.T, v *verdict, r *row, b *devbroker.Broker, tag string, k, maxN, size int) {
	total := 250
	newTopic(t, b, tag, headLease)
	fill(t, b, tag, tag, total, size)
	head := exec.Command("head", "-n", strconv.Itoa(k))
	p := pipeRun(t, b, head, "sub", tag, "--max", strconv.Itoa(maxN), "-o", "raw", "--stats=json")
	what := fmt.Sprintf("head -n %d, --max %d, %s", k, maxN, sizeName(size))
	p.checkEnded(t, v, r, b, tag, what, "head", total)
	waitFor(3*headLease, func() bool { return stats(t, b, tag).InFlight() == 0 })
	st := stats(t, b, tag)

	shown := idsIn(p.readOut)
	acked, unacked := ackedOf(t, b, tag, total, shown)
	r.count("shown by head", len(shown))
	r.count("acked", acked)
	r.count("lapsed", st.Lapsed())
	v.check(len(shown) == k, "%s: head printed %d lines, want %d", what, len(shown), k)
	v.check(len(unacked) == 0, "%s: %d lines head printed were not acked: %s", what, len(unacked), sample(unacked))
	v.check(acked == st.Acked(), "%s: %d messages neither acked nor available", what, acked-st.Acked())
	// head reads up to 8 KiB at a time: it can have taken whole lines that far past the
	// last it printed, never more. Anything acked beyond sat unread in the pipe.
	readAhead := headReadSize/(size+1) + 1
	v.check(acked <= k+readAhead, "%s: acked %d; head printed %d and can have read %d more lines at most",
		what, acked, k, readAhead)
}

// slowRun: narad sub --max M -o raw into a reader that takes one line every 0.4 s, for
// longer than the lease, then stops: exactly its lines acked, the rest available, no
// lease ran out.
func slowRun(t *testing.T, v *verdict, r *row, b *devbroker.Broker, tag string, maxN, size, lines int) {
	total := 250
	newTopic(t, b, tag, slowLease)
	fill(t, b, tag, tag, total, size)
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ] && IFS= read -r l; do printf '%%s\n' "$l"; sleep 0.4; i=$((i+1)); done`, lines)
	reader := exec.Command("sh", "-c", script)
	p := pipeRun(t, b, reader, "sub", tag, "--max", strconv.Itoa(maxN), "-o", "raw", "--stats=json")
	what := fmt.Sprintf("while read %d lines, --max %d, %s", lines, maxN, sizeName(size))
	st := p.checkEnded(t, v, r, b, tag, what, "the reader", total)
	r.count("lapsed", st.Lapsed())
	v.check(st.Lapsed() == 0, "%s: %d leases ran out while the reader was slow", what, st.Lapsed())
	if s, ok := parseStats(p.stderr); ok {
		r.count("ack_gone", s.AckGone)
		v.check(s.AckGone == 0 && s.LeaseLost == 0, "%s: narad saw %d acks gone, %d leases lost", what, s.AckGone, s.LeaseLost)
	}
	waitFor(3*slowLease, func() bool { return stats(t, b, tag).InFlight() == 0 })

	taken := idsIn(p.readOut)
	seen := counted(taken)
	r.dup += duplicates(seen)
	v.check(duplicates(seen) == 0, "%s: the reader got %d lines twice", what, duplicates(seen))
	st = stats(t, b, tag)
	acked, unacked := ackedOf(t, b, tag, total, taken)
	r.count("taken by the reader", len(taken))
	r.count("acked", acked)
	v.check(len(taken) == lines, "%s: the reader took %d lines, want %d", what, len(taken), lines)
	v.check(len(unacked) == 0, "%s: %d lines the reader took were not acked: %s", what, len(unacked), sample(unacked))
	v.check(acked == len(taken), "%s: acked %d, the reader took %d", what, acked, len(taken))
	v.check(acked == st.Acked(), "%s: %d messages neither acked nor available", what, acked-st.Acked())
}
