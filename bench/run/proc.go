//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sample is one timed run of a program.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system, its waited-for children included
	maxRSS int64         // peak resident set, bytes
	stderr string
}

// runProc runs argv with stdin from the file in (or nothing) and its stdout on
// /dev/null, as the goals' commands say, and measures it. A failure is fatal: a
// figure from a run that did not do its work would be a lie.
func runProc(env []string, in string, argv ...string) sample {
	return runProcTo(nil, env, in, argv...)
}

// runPiped is runProc with stdout a pipe to `cat > /dev/null`, as a user types it:
// narad then acks a line only once cat took it. The wall time runs until both exited.
func runPiped(env []string, in string, argv ...string) sample {
	r, w, err := os.Pipe()
	if err != nil {
		fatalf("%v", err)
	}
	cat := exec.Command("cat")
	cat.Stdin = r
	if err := cat.Start(); err != nil {
		fatalf("cat: %v", err)
	}
	r.Close()
	s := runProcTo(w, env, in, argv...)
	w.Close()
	if err := cat.Wait(); err != nil {
		fatalf("cat: %v", err)
	}
	return s
}

func runProcTo(out io.Writer, env []string, in string, argv ...string) sample {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr strings.Builder
	// A nil Stdout is /dev/null; any other writer that is not a file is a pipe.
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{
		wall:   wall,
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		maxRSS: ru.Maxrss * 1024, // KiB on Linux
		stderr: stderr.String(),
	}
}

// broker is a `narad dev` this program started.
type broker struct {
	cmd   *exec.Cmd
	url   string
	loops string // the loop-baseline binary
}

// startBroker runs `narad dev -q` on a free loopback port with the flags given and
// waits until it answers.
func (b *bench) startBroker(flags ...string) *broker {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	args := append([]string{"dev", "-q", "--addr", addr}, flags...)
	cmd := exec.Command(b.narad, args...)
	out, err := cmd.StderrPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("narad dev: %v", err)
	}
	// The first line says it listens; the rest is drained so it never blocks.
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "listening") {
		_ = cmd.Process.Kill()
		fatalf("narad dev did not start: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	return &broker{cmd: cmd, url: "http://" + addr, loops: b.loops}
}

func (k *broker) stop() {
	_ = k.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = k.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-done
	}
}

// loop runs the loop-baseline program against the broker: see bench/loop-baseline.
func (k *broker) loop(mode, topic string, n int, j ...int) time.Duration {
	argv := []string{k.loops, mode, k.url, topic, strconv.Itoa(n)}
	for _, j := range j {
		argv = append(argv, strconv.Itoa(j))
	}
	return runProc(nil, "", argv...).wall
}

// fill produces "1".."n" to topic, 8 at a time, untimed.
func (k *broker) fill(topic string, n int) { k.loop("produce", topic, n, 8) }

// env points narad at the broker.
func (k *broker) env() []string { return []string{"NARAD_ADDR=" + k.url} }

// writeLines writes n lines "1".."n" to a file in the bench directory.
func (b *bench) writeLines(name string, n int) string {
	path := b.dir + "/" + name
	f, err := os.Create(path)
	if err != nil {
		fatalf("%v", err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "%d\n", i)
	}
	if err := w.Flush(); err != nil {
		fatalf("%v", err)
	}
	_ = f.Close()
	return path
}

// mustAck checks a `narad sub --stats=json` run's counts: it acked n messages.
func mustAck(s sample, n int) {
	if !strings.Contains(s.stderr, fmt.Sprintf(`"acked":%d,`, n)) {
		fatalf("narad did not ack %d messages: %s", n, s.stderr)
	}
}
