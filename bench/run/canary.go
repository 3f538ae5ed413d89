//go:build unix

package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// canary: `sub --peek -- COMMAND` against exec mode on the same messages: the same
// command, -j and count, read by replay instead of consumed, leased and acked. The
// canary reads a topic filled once (it takes nothing, so the messages stay); exec
// mode gets its topic filled afresh each run.
func (b *bench) canary() []row {
	k := b.startBroker("--topic", "e", "--topic", "c")
	defer k.stop()
	k.fill("c", b.execN)
	n := strconv.Itoa(b.execN)
	exec := b.execSub(k, "e")
	canary := func() time.Duration {
		s := runProc(k.env(), "", b.narad, "sub", "c", "--peek", "--from-beginning", "--count", n, "-j", "4", "--stats=json", "--", "true")
		if want := fmt.Sprintf(`"ran":%d,"succeeded":%d,`, b.execN, b.execN); !strings.Contains(s.stderr, want) {
			fatalf("the canary did not run %d commands: %s", b.execN, s.stderr)
		}
		return s.wall
	}
	base, narad := b.alternate(exec, canary)
	return []row{speedRow("7 canary",
		fmt.Sprintf("narad sub t --peek --from-beginning --count %d -j 4 -- true", b.execN),
		fmt.Sprintf("narad sub t --count %d -j 4 -- true (exec mode)", b.execN), base, narad, 0.9)}
}
