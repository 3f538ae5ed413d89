package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/zalando/go-keyring"

	"github.com/narad/narad/internal/cli"
	"github.com/narad/narad/internal/devbroker"
)

var update = flag.Bool("update", false, "rewrite testscript golden files from actual output")

// TestMain registers the real narad entry point and small helper programs that stand
// in for the supervisor's children; testscript runs them as separate processes.
func TestMain(m *testing.M) {
	// No test writes to the keyring of the machine it runs on: by default there is
	// none, as on a headless server (passwords go to the config file); a test of the
	// keyring swaps in the library's in-memory one. Also in every narad the scripts run.
	keyring.MockInitWithError(errors.New("none in tests"))
	testscript.Main(m, map[string]func(){
		"narad":    func() { os.Exit(cli.Main(os.Args[1:])) },
		"exitcode": helperExitCode,
		"sleeper":  helperSleeper,
		"envdump":  helperEnvDump,

		"failon":        helperFailOn,
		"waitfile":      helperWaitFile,
		"maxconcurrent": helperMaxConcurrent,
		"timed":         helperTimed,
		"pidsgone":      helperPidsGone,
		"fullpipe":      helperFullPipe,
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("TZ", "UTC")
			env.Setenv("NO_COLOR", "")
			// Bytes a script cannot type, for tests that terminal controls never get through:
			// ESC, the C1 CSI (U+009B, two bytes in UTF-8) and a byte that is not UTF-8.
			env.Setenv("ESC", "\x1b")
			env.Setenv("CSI8", "\u009b")
			env.Setenv("BADUTF8", "\xff")
			// The race runtime otherwise holds every exit of the narad under test for 1 s.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"narad-dev":  cmdNaradDev,
			"broker":     cmdBroker,
			"http":       cmdHTTP,
			"exits":      cmdExits,
			"freeport":   cmdFreePort,
			"waitready":  cmdWaitReady,
			"faultnode":  cmdFaultNode,
			"slowproxy":  cmdSlowProxy,
			"now":        cmdNow,
			"scrape":     cmdScrape,
			"statsmatch": cmdStatsMatch,
		},
	})
}

// brokers maps a script's NARAD_ADDR to the in-process broker it started, so that
// `broker` can reach it. Scripts run in parallel, each with its own broker.
var brokers = struct {
	sync.Mutex
	m      map[string]*devbroker.Broker
	clocks map[string]*scriptClock
}{m: map[string]*devbroker.Broker{}, clocks: map[string]*scriptClock{}}

// scriptClock is a script broker's clock: the real one until `broker clock` sets
// it, then standing where it was set, so messages get the stamps a script chose.
type scriptClock struct {
	mu    sync.Mutex
	at    time.Time
	fixed bool
}

func (c *scriptClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed {
		return time.Now()
	}
	return c.at
}

// set stands the clock at s: an RFC 3339 time, or +D/-D from where it stands.
func (c *scriptClock) set(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == "real" {
		c.fixed = false
		return nil
	}
	at := c.at
	if !c.fixed {
		at = time.Now()
	}
	if s != "" && (s[0] == '+' || s[0] == '-') {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		c.at, c.fixed = at.Add(d), true
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	c.at, c.fixed = t, true
	return nil
}

func lookupBroker(ts *testscript.TestScript) *devbroker.Broker {
	brokers.Lock()
	defer brokers.Unlock()
	b := brokers.m[ts.Getenv("BROKER_URL")]
	if b == nil {
		ts.Fatalf("no broker: run narad-dev first")
	}
	return b
}

// narad-dev [--topic NAME[:PARTITIONS]]... [--visibility D] [--max-consume-wait D]
//
//	[--user NAME:PASS:GRANTS]... [--fault SPEC]... [--legacy]
//
// starts internal/devbroker on 127.0.0.1:0 inside the test process, sets NARAD_ADDR
// and BROKER_URL, and stops it when the script ends.
func cmdNaradDev(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! narad-dev")
	}
	cfg := devbroker.Config{Addr: "127.0.0.1:0"}
	fs := flag.NewFlagSet("narad-dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("topic", "", func(s string) error {
		spec, err := devbroker.ParseTopicFlag(s)
		cfg.Topics = append(cfg.Topics, spec)
		return err
	})
	fs.Func("user", "", func(s string) error {
		u, err := devbroker.ParseUser(s)
		cfg.Users = append(cfg.Users, u)
		return err
	})
	fs.Func("fault", "", func(s string) error {
		r, err := devbroker.ParseFault(s)
		cfg.Faults = append(cfg.Faults, r)
		return err
	})
	fs.DurationVar(&cfg.DefaultVisibility, "visibility", 0, "")
	fs.DurationVar(&cfg.MaxConsumeWait, "max-consume-wait", 0, "")
	fs.BoolVar(&cfg.Legacy, "legacy", false, "")
	ts.Check(fs.Parse(args))
	clock := &scriptClock{}
	cfg.Now = clock.Now
	b, err := devbroker.Start(cfg)
	ts.Check(err)
	ts.Defer(func() { b.Close() })
	brokers.Lock()
	brokers.m[b.URL()] = b
	brokers.clocks[b.URL()] = clock
	brokers.Unlock()
	ts.Defer(func() {
		brokers.Lock()
		delete(brokers.m, b.URL())
		delete(brokers.clocks, b.URL())
		brokers.Unlock()
	})
	ts.Setenv("NARAD_ADDR", b.URL())
	ts.Setenv("BROKER_URL", b.URL())
	ts.Setenv("BROKER_HOSTPORT", b.Addr())
}

// broker inspects or steers the script's broker:
//
//	broker requests OP            prints how many OP requests reached it
//	broker fail OP N STATUS       the next N OP requests answer STATUS
//	broker stats TOPIC            prints available=N inflight=N acked=N
//	broker legacy on|off          switches the older-node behaviour
//	broker waitinflight TOPIC N   waits until N messages are leased
//	broker clock T|+D|-D|real     stands the broker's clock (message stamps) at an
//	                              RFC 3339 time, or moves it from where it stands
//	                              (the real time until set); real: the real clock again
func cmdBroker(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: broker requests|fail|stats|legacy ...")
	}
	b := lookupBroker(ts)
	var got string
	switch args[0] {
	case "requests":
		got = strconv.Itoa(b.Requests(args[1]))
	case "fail":
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		status, err := strconv.Atoi(args[3])
		ts.Check(err)
		b.FailNext(args[1], n, status)
		return
	case "legacy":
		b.SetLegacy(args[1] == "on")
		return
	case "clock":
		brokers.Lock()
		c := brokers.clocks[ts.Getenv("BROKER_URL")]
		brokers.Unlock()
		ts.Check(c.set(args[1]))
		return
	case "waitinflight":
		// broker waitinflight TOPIC N: until N messages are leased (up to 10 s).
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			st, err := b.Stats(args[1])
			ts.Check(err)
			if st.InFlight() == want {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("broker: %d in flight after 10s, want %d", st.InFlight(), want)
			}
		}
	case "stats":
		st, err := b.Stats(args[1])
		if err != nil {
			if neg {
				return
			}
			ts.Fatalf("%v", err)
		}
		got = fmt.Sprintf("available=%d inflight=%d acked=%d", st.Available(), st.InFlight(), st.Acked())
	default:
		ts.Fatalf("unknown broker subcommand %q", args[0])
	}
	fmt.Fprintln(ts.Stdout(), got)
}

// now VAR [+D|-D] sets VAR to the real time (moved by D) in RFC 3339, whole seconds
// in UTC: a TIME flag a moment ahead of the narad under test.
func cmdNow(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: now VAR [+D|-D]")
	}
	at := time.Now()
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		at = at.Add(d)
	}
	ts.Setenv(args[0], at.UTC().Format(time.RFC3339))
}

// http METHOD PATH [-H NAME:VALUE]... [-d BODY | -f FILE]
//
// sends one request to the script's broker and prints the status line, the headers
// a test may assert on, a blank line and the body: the curl -i of the seed guide.
func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: http METHOD PATH [-H K:V]... [-d BODY]")
	}
	method, path := args[0], args[1]
	var body io.Reader
	headers := http.Header{}
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "-H":
			i++
			k, v, _ := strings.Cut(args[i], ":")
			headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d":
			i++
			body = strings.NewReader(args[i])
		case "-f":
			i++
			body = bytes.NewReader([]byte(ts.ReadFile(args[i])))
		default:
			ts.Fatalf("http: unknown argument %q", args[i])
		}
	}
	req, err := http.NewRequest(method, ts.Getenv("BROKER_URL")+path, body)
	ts.Check(err)
	req.Header = headers
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	ts.Check(err)
	out := ts.Stdout()
	fmt.Fprintf(out, "HTTP %d\n", resp.StatusCode)
	var names []string
	for k := range resp.Header {
		if k == "Date" || k == "Content-Length" {
			continue
		}
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(out, "%s: %s\n", k, strings.Join(resp.Header[k], ", "))
	}
	fmt.Fprintln(out)
	out.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(out)
	}
	// A handle from a consume is saved so later lines can use $HANDLE, as in the guide.
	// A batch's handles become $HANDLE1, $HANDLE2, ...
	var m struct {
		ReceiptHandle string `json:"receipt_handle"`
		Messages      []struct {
			ReceiptHandle string `json:"receipt_handle"`
		} `json:"messages"`
	}
	if json.Unmarshal(data, &m) == nil {
		if m.ReceiptHandle != "" {
			ts.Setenv("HANDLE", m.ReceiptHandle)
		}
		for i, msg := range m.Messages {
			ts.Setenv(fmt.Sprintf("HANDLE%d", i+1), msg.ReceiptHandle)
		}
	}
	if neg != (resp.StatusCode >= 400) {
		if neg {
			ts.Fatalf("http: status %d, want an error", resp.StatusCode)
		}
		ts.Fatalf("http: status %d", resp.StatusCode)
	}
}

// slowproxy DELAY puts a TCP proxy on 127.0.0.1 in front of the script's broker that
// passes on every byte the broker sends DELAY after it arrived: an answer is on the
// wire that long. NARAD_ADDR points at the proxy; BROKER_URL still at the broker.
func cmdSlowProxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: slowproxy DELAY")
	}
	delay, err := time.ParseDuration(args[0])
	ts.Check(err)
	target := ts.Getenv("BROKER_HOSTPORT")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	done := make(chan struct{})
	ts.Defer(func() {
		close(done)
		l.Close()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go slowRelay(c, target, delay, done)
		}
	}()
	ts.Setenv("NARAD_ADDR", "http://"+l.Addr().String())
}

func slowRelay(c net.Conn, target string, delay time.Duration, done <-chan struct{}) {
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	go func() {
		<-done
		c.Close()
		up.Close()
	}()
	go func() {
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	type chunk struct {
		b  []byte
		at time.Time
	}
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				chunks <- chunk{bytes.Clone(buf[:n]), time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for k := range chunks {
		time.Sleep(time.Until(k.at.Add(delay)))
		if _, err := c.Write(k.b); err != nil {
			break
		}
	}
	c.Close()
	up.Close()
}

// freeport sets NARAD_ADDR, BROKER_URL and BROKER_HOSTPORT to a loopback port that
// was free a moment ago, for scripts that start `narad dev` as a real process.
// freeport VAR sets VAR alone, to 127.0.0.1:PORT (a --metrics-addr).
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	addr := l.Addr().String()
	ts.Check(l.Close())
	if len(args) == 1 {
		ts.Setenv(args[0], addr)
		return
	}
	ts.Setenv("BROKER_HOSTPORT", addr)
	ts.Setenv("BROKER_URL", "http://"+addr)
	ts.Setenv("NARAD_ADDR", "http://"+addr)
}

// waitready polls $BROKER_URL/readyz until it answers 200, for up to 10 s.
func cmdWaitReady(ts *testscript.TestScript, neg bool, args []string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(ts.Getenv("BROKER_URL") + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("broker at %s not ready after 10s", ts.Getenv("BROKER_URL"))
}

// exits CODE PROGRAM [ARG...] runs a program like exec and asserts its exit code,
// since scripts depend on the documented codes, not just on failure.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

// exitcode N [MESSAGE] exits with N after printing MESSAGE, standing in for a handler.
func helperExitCode() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[1])
	if len(os.Args) > 2 {
		fmt.Println(strings.Join(os.Args[2:], " "))
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(n)
}

// sleeper D [LOG] sleeps for D, appending "start" and "end" lines with the time and
// NARAD_OFFSET to LOG, so a script can check how many ran at once.
func helperSleeper() {
	d, _ := time.ParseDuration(os.Args[1])
	logf := func(what string) {
		if len(os.Args) < 3 {
			return
		}
		f, err := os.OpenFile(os.Args[2], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		fmt.Fprintf(f, "%s %d p%s@%s\n", what, time.Now().UnixNano(), os.Getenv("NARAD_PARTITION"), os.Getenv("NARAD_OFFSET"))
		f.Close()
	}
	logf("start")
	time.Sleep(d)
	logf("end")
}

// envdump prints stdin and then the NARAD_* environment, sorted.
func helperEnvDump() {
	data, _ := io.ReadAll(os.Stdin)
	fmt.Printf("stdin=%s\n", data)
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NARAD_") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		fmt.Println(kv)
	}
}

// failon WORD [D [LOG]] reads its stdin and exits 1 at once if the payload is WORD;
// otherwise it sleeps D and exits 0. With LOG it appends "start", then "fail" or
// "end" lines (the sleeper's format), so a script can wait for each stage.
func helperFailOn() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	data, _ := io.ReadAll(os.Stdin)
	var d time.Duration
	if len(os.Args) > 2 {
		d, _ = time.ParseDuration(os.Args[2])
	}
	logf := func(what string) {
		if len(os.Args) > 3 {
			appendLog(os.Args[3], what)
		}
	}
	logf("start")
	if string(data) == os.Args[1] {
		logf("fail")
		os.Exit(1)
	}
	time.Sleep(d)
	logf("end")
}

// appendLog appends "WHAT <unixnano> pP@O" to file, as sleeper does.
func appendLog(file, what string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %d p%s@%s\n", what, time.Now().UnixNano(), os.Getenv("NARAD_PARTITION"), os.Getenv("NARAD_OFFSET"))
	f.Close()
}

// waitfile FILE [WORD [N]] waits (up to 30 s, else exit 1) until FILE exists and is
// not empty, or, with WORD, until N (default 1) of its lines start with WORD: the
// ordering point of a script that must act while a command runs.
func helperWaitFile() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	file, word, n := os.Args[1], "", 1
	if len(os.Args) > 2 {
		word = os.Args[2]
	}
	if len(os.Args) > 3 {
		n, _ = strconv.Atoi(os.Args[3])
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil && len(data) > 0 {
			if word == "" {
				return
			}
			got := 0
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, word) {
					got++
				}
			}
			if got >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "waitfile: %s: no %d lines of %q after 30s:\n%s", file, n, word, data)
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// maxconcurrent LOG reads sleeper/failon "start" and "end" lines and prints
// "runs=N ended=N max=N span=Ss": how many started and ended, the most running at
// once, and the time from the first start to the last end, in whole seconds rounded up.
func helperMaxConcurrent() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	type event struct {
		t     int64
		delta int
	}
	var events []event
	runs, ended := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		t, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "start":
			runs++
			events = append(events, event{t, +1})
		case "end", "fail":
			ended++
			events = append(events, event{t, -1})
		}
	}
	// At equal times an end comes first: one command ending as the next starts is
	// not two at once.
	sort.Slice(events, func(i, j int) bool {
		if events[i].t != events[j].t {
			return events[i].t < events[j].t
		}
		return events[i].delta < events[j].delta
	})
	cur, most := 0, 0
	for _, e := range events {
		cur += e.delta
		most = max(most, cur)
	}
	span := time.Duration(0)
	if len(events) > 0 {
		span = time.Duration(events[len(events)-1].t - events[0].t)
	}
	secs := int64((span + time.Second - 1) / time.Second)
	fmt.Printf("runs=%d ended=%d max=%d span=%ds\n", runs, ended, most, secs)
}

// timed [-pidfile F] MAX PROGRAM [ARG...] runs PROGRAM with this process's stdio,
// writing its pid to F first (whole, by a rename) so a script can signal it. It
// then prints "exit=N" and exits 0, or exits 1 if PROGRAM took longer than MAX
// (stopping it at MAX): a bound on a whole run that `exits` cannot give, also usable
// in the background.
func helperTimed() {
	args := os.Args[1:]
	pidfile := ""
	if len(args) > 1 && args[0] == "-pidfile" {
		pidfile, args = args[1], args[2:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: timed [-pidfile F] MAX PROGRAM [ARG...]")
		os.Exit(2)
	}
	limit, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "timed:", err)
		os.Exit(2)
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "timed:", err)
		os.Exit(1)
	}
	if pidfile != "" {
		tmp := pidfile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err == nil {
			err = os.Rename(tmp, pidfile)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "timed:", err)
		}
	}
	// Past the limit the program is stopped rather than waited for: SIGQUIT first, so
	// that a Go program (narad) dumps its goroutines on stderr for the failure report.
	overdue := time.AfterFunc(limit, func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		time.Sleep(2 * time.Second)
		_ = cmd.Process.Kill()
	})
	_ = cmd.Wait()
	took := time.Since(start)
	overdue.Stop()
	fmt.Printf("exit=%d\n", cmd.ProcessState.ExitCode())
	if took > limit {
		fmt.Fprintf(os.Stderr, "timed: %s took %s, more than %s\n", args[1], took.Round(time.Millisecond), limit)
		os.Exit(1)
	}
}
