//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// find: `narad replay --jq` and `--filter` against the same replay with -o json, over
// findN JSON messages read once into the broker: the jq path (the message's value
// built, its payload decoded once, the expression run) must not cost a replay more
// than it states.
func (b *bench) find() []row {
	k := b.startBroker("--topic", "f")
	defer k.stop()
	lines := b.dir + "/find.jsonl"
	f, err := os.Create(lines)
	if err != nil {
		fatalf("%v", err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= b.findN; i++ {
		fmt.Fprintf(w, `{"order_id":"ord_%d","amount":%d,"status":"paid","customer":{"id":"c-%d"}}`+"\n", i, i%5000, i%97)
	}
	if err := w.Flush(); err != nil {
		fatalf("%v", err)
	}
	_ = f.Close()
	runProc(k.env(), lines, b.narad, "produce", "f", "--lines", "-j", "8")

	replay := func(args ...string) func() time.Duration {
		return func() time.Duration {
			return runProc(k.env(), "", append([]string{b.narad, "replay", "f"}, args...)...).wall
		}
	}
	var rows []row
	for _, c := range []struct {
		args   []string
		target float64
	}{
		{[]string{"--jq", ".payload.order_id"}, 0.5},
		{[]string{"--filter", ".payload.amount < 0"}, 0.7},
	} {
		b.logf("  %s %s", c.args[0], c.args[1])
		base, narad := b.alternate(replay("-o", "json"), replay(c.args...))
		rows = append(rows, speedRow("find", fmt.Sprintf("narad replay t %s '%s' > /dev/null (%d JSON messages)", c.args[0], c.args[1], b.findN),
			"the same replay, -o json", base, narad, c.target))
	}
	return rows
}
