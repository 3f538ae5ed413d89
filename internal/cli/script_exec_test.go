package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// pidsgone FILE reads "pid N" lines from FILE and exits 0 once every such process is
// gone (a zombie counts as gone: it runs nothing), or 1 after 5 s, killing what is
// left so that a failing test leaves nothing running behind it.
func helperPidsGone() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "pid "); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) == 0 {
		fmt.Fprintln(os.Stderr, "pidsgone: no pids")
		os.Exit(2)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []int
		for _, pid := range pids {
			if !processGone(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range alive {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
			fmt.Fprintf(os.Stderr, "pidsgone: still running: %v\n", alive)
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processGone reports whether pid no longer runs: no such process, or a zombie
// waiting for whoever adopted it to reap it (Linux: it reads /proc).
func processGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}
