//go:build unix

// Command bench measures narad against a baseline for each performance goal, in one
// run on one machine, and prints the results as the README's Performance table.
//
//	go run ./bench/run                       # every goal
//	go run ./bench/run -goals exec,startup   # some of them
//	go run ./bench/run -runs 7 -v            # more samples, and each sample on stderr
//
// Every figure is a median of -runs samples, baseline and narad alternating (which
// one goes first alternates too), so that a machine whose load changes during the
// run tilts neither side. Ratios are what the goals state: for throughput, the
// baseline's time over narad's (above 1: narad is faster); for start-up, narad's time
// over the baseline's; for memory, peak RSS. Everything runs against `narad dev`
// brokers on 127.0.0.1 started by this program, and every side of a comparison is a
// whole process timed from start to exit: narad, and the baselines (bench/loop-baseline
// for throughput, bench/startup-baseline for start-up). Unix only: it reads each
// process's rusage, pipes through cat and counts instructions with valgrind.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// A goal measures one row (or a few) of the table.
type goal struct {
	name string
	run  func(*bench) []row
}

// row is one line of the table.
type row struct {
	goal, command, baseline string
	base, narad             float64 // medians, in unit
	unit                    string  // "s", "ms", "MiB"
	ratio                   float64
	target                  string // "≥ 5×", "≤ 1.2×", ...
	met                     bool
	informational           bool // no goal of its own: the target column says why it is shown
}

var goals = []goal{
	{"produce", (*bench).produce},
	{"drain", (*bench).drain},
	{"legacy", (*bench).legacy},
	{"exec", (*bench).exec},
	{"startup", (*bench).startup},
	{"memory", (*bench).memory},
	{"find", (*bench).find},
	{"metrics", (*bench).metrics},
	{"canary", (*bench).canary},
}

func main() {
	names := make([]string, len(goals))
	for i, g := range goals {
		names[i] = g.name
	}
	var b bench
	which := flag.String("goals", strings.Join(names, ","), "comma-separated goals to measure: "+strings.Join(names, ", "))
	flag.IntVar(&b.runs, "runs", 5, "samples per side and measurement (the median is reported)")
	flag.IntVar(&b.starts, "starts", 100, "process starts per start-up sample")
	flag.IntVar(&b.execN, "exec-n", 2000, "messages (commands) for the exec goal")
	flag.IntVar(&b.produceN, "produce-n", 100000, "lines for the produce goal")
	flag.IntVar(&b.produceJ, "produce-j", 8, "requests in flight for the produce goal (narad -j and the raw loop alike)")
	flag.IntVar(&b.drainN, "drain-n", 20000, "messages for the drain goal")
	flag.IntVar(&b.legacyN, "legacy-n", 5000, "messages for the older-node goal")
	flag.IntVar(&b.memN, "mem-n", 100000, "messages for the memory goal's large drain (the small one is 1% of it)")
	flag.IntVar(&b.findN, "find-n", 100000, "JSON messages for the find goal (replay --jq and --filter)")
	flag.BoolVar(&b.verbose, "v", false, "print every sample on stderr")
	flag.StringVar(&b.prebuilt, "narad", "", "measure this narad binary instead of building ./cmd/narad (to compare a commit with another)")
	flag.Parse()

	var run []goal
	for _, name := range strings.Split(*which, ",") {
		i := slices.Index(names, strings.TrimSpace(name))
		if i < 0 {
			fatalf("unknown goal %q (one of %s)", name, strings.Join(names, ", "))
		}
		run = append(run, goals[i])
		// Only the drain and older-node goals run the pipe taken for a file.
		b.wantPipeAsFile = b.wantPipeAsFile || goals[i].name == "drain" || goals[i].name == "legacy"
	}
	if err := b.setup(); err != nil {
		fatalf("%v", err)
	}
	defer b.cleanup()

	machine := describeMachine()
	b.logf("machine: %s", machine)
	var rows []row
	for _, g := range run {
		b.logf("goal %s", g.name)
		rows = append(rows, g.run(&b)...)
	}
	printTable(rows, machine)
}

// bench holds the built programs and the settings.
type bench struct {
	dir   string // temporary: the binaries and inputs
	narad string
	// pipeAsFile is ./cmd/narad built with -tags narad_pipe_as_file: a pipe taken for a
	// file, so no line waits for the reader. Not exact (`| head` takes what it does not
	// print), so not a product: the ceiling any exact pipe is measured against.
	pipeAsFile     string
	wantPipeAsFile bool   // a goal to run measures it: build it
	baseline       string // bench/startup-baseline
	loops          string // bench/loop-baseline

	prebuilt string

	runs, starts                                     int
	execN, produceN, produceJ, drainN, legacyN, memN int
	findN                                            int
	verbose                                          bool
}

func (b *bench) setup() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	b.dir, err = os.MkdirTemp("", "narad-bench-")
	if err != nil {
		return err
	}
	b.narad = filepath.Join(b.dir, "narad")
	b.baseline = filepath.Join(b.dir, "startup-baseline")
	b.loops = filepath.Join(b.dir, "loop-baseline")
	type build struct{ pkg, tags string }
	builds := map[string]build{
		b.narad: {pkg: "./cmd/narad"}, b.baseline: {pkg: "./bench/startup-baseline"},
		b.loops: {pkg: "./bench/loop-baseline"},
	}
	if b.wantPipeAsFile {
		b.pipeAsFile = filepath.Join(b.dir, "narad-pipe-as-file")
		builds[b.pipeAsFile] = build{pkg: "./cmd/narad", tags: "narad_pipe_as_file"}
	}
	if b.prebuilt != "" {
		if b.narad, err = filepath.Abs(b.prebuilt); err != nil {
			return err
		}
		delete(builds, filepath.Join(b.dir, "narad"))
	}
	for out, bl := range builds {
		cmd := exec.Command("go", "build", "-tags", bl.tags, "-o", out, bl.pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %v", bl.pkg, err)
		}
	}
	return nil
}

func (b *bench) cleanup() { _ = os.RemoveAll(b.dir) }

func (b *bench) logf(format string, args ...any) {
	if b.verbose {
		fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run this from inside the narad module")
	}
	return filepath.Dir(mod), nil
}

// describeMachine is the table's machine column: cores, load, OS, Go.
func describeMachine() string {
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			load = f[0]
		}
	}
	return fmt.Sprintf("%d cores, load %s at start, %s/%s, %s", runtime.NumCPU(), load, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func printTable(rows []row, machine string) {
	fmt.Printf("Measured %s by `go run ./bench/run` (%s).\n\n", time.Now().UTC().Format("2006-01-02"), machine)
	fmt.Println("| goal | command | baseline | baseline | narad | ratio | target |")
	fmt.Println("|---|---|---|---:|---:|---:|---|")
	for _, r := range rows {
		verdict := " (met)"
		switch {
		case r.informational:
			verdict = ""
		case !r.met:
			verdict = " (NOT met)"
		}
		fmt.Printf("| %s | `%s` | %s | %s | %s | %.2f× | %s%s |\n", r.goal, r.command, r.baseline,
			formatValue(r.base, r.unit), formatValue(r.narad, r.unit), r.ratio, r.target, verdict)
	}
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "ms":
		return fmt.Sprintf("%.2f ms", v)
	case "M instr":
		return fmt.Sprintf("%.2f M", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
