package supervisor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv switches the test binary into the helper program the supervisor runs.
const helperEnv = "SUPERVISOR_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperRecord is what the "env" step writes.
type helperRecord struct {
	Stdin []byte            `json:"stdin"`
	Env   map[string]string `json:"env"`
}

// helperCommand is the supervisor's Command for the helper running steps.
func helperCommand(steps ...string) []string {
	return append([]string{os.Args[0]}, steps...)
}

// helperEnviron is the environment the helper needs to know it is one. Under -race,
// the race runtime would hold every exit for a second (atexit_sleep_ms), which would
// blur every timing the tests look at.
func helperEnviron() []string {
	return append(os.Environ(), helperEnv+"=1", "GORACE=atexit_sleep_ms=0")
}

// helper runs steps, each a word with arguments:
//
//	script            read more steps from stdin (so a message's payload says what to do)
//	env FILE          write stdin and the NARAD_* variables as JSON to FILE
//	attempt FILE      append "<handle> <NARAD_ATTEMPT>" to FILE
//	log FILE          append "start <unixnano> <handle> <pid>" now and "end ..." on a normal exit,
//	                  "term ..." on SIGTERM (then exit 143)
//	sleep D           sleep D
//	waitfile FILE     wait until FILE exists (a minute at most)
//	lines N TEXT      write N lines of TEXT to stdout, a byte per write
//	errline TEXT      write TEXT and a newline to stderr
//	partial TEXT      write TEXT to stdout without a newline
//	spawn FILE        start a grandchild that sleeps 30s and write its pid to FILE
//	exit N            exit with N
func helper(steps []string) int {
	var logFile string
	logLine := func(what string) {
		if logFile == "" {
			return
		}
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		// One write per line: O_APPEND keeps concurrent helpers' lines whole.
		_, _ = fmt.Fprintf(f, "%s %d %s %d\n", what, time.Now().UnixNano(), os.Getenv("NARAD_RECEIPT_HANDLE"), os.Getpid())
		_ = f.Close()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		logLine("term")
		os.Exit(143)
	}()
	for i := 0; i < len(steps); i++ {
		arg := func() string { i++; return steps[i] }
		switch steps[i] {
		case "script":
			in, _ := io.ReadAll(os.Stdin)
			steps = append(steps[:i+1], append(strings.Fields(string(in)), steps[i+1:]...)...)
		case "env":
			file := arg()
			in, _ := io.ReadAll(os.Stdin)
			vars := map[string]string{}
			for _, kv := range os.Environ() {
				if strings.HasPrefix(kv, "NARAD_") {
					k, v, _ := strings.Cut(kv, "=")
					vars[k] = v
				}
			}
			b, _ := json.Marshal(helperRecord{Stdin: in, Env: vars})
			if err := os.WriteFile(file, b, 0o644); err != nil {
				return 99
			}
		case "attempt":
			f, err := os.OpenFile(arg(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return 99
			}
			_, _ = fmt.Fprintf(f, "%s %s\n", os.Getenv("NARAD_RECEIPT_HANDLE"), os.Getenv("NARAD_ATTEMPT"))
			_ = f.Close()
		case "log":
			logFile = arg()
			logLine("start")
		case "sleep":
			d, _ := time.ParseDuration(arg())
			time.Sleep(d)
		case "waitfile":
			// Runs until the test creates FILE: "running" for as long as a test needs,
			// however slow the machine.
			file := arg()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(file); err == nil {
					break
				}
			}
		case "lines":
			n, _ := strconv.Atoi(arg())
			text := arg()
			for range n {
				for _, b := range []byte(text + "\n") {
					_, _ = os.Stdout.Write([]byte{b})
				}
			}
		case "errline":
			fmt.Fprintln(os.Stderr, arg())
		case "partial":
			fmt.Print(arg())
		case "spawn":
			file := arg()
			c := exec.Command(os.Args[0], "sleep", "30s")
			if err := c.Start(); err != nil {
				return 98
			}
			_ = os.WriteFile(file, []byte(strconv.Itoa(c.Process.Pid)), 0o644)
		case "exit":
			n, _ := strconv.Atoi(arg())
			logLine("end")
			return n
		default:
			fmt.Fprintf(os.Stderr, "helper: unknown step %q\n", steps[i])
			return 97
		}
	}
	logLine("end")
	return 0
}
