//go:build pprof

package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// With -tags pprof, NARAD_CPUPROFILE=FILE writes a CPU profile of the run,
// NARAD_TRACE=FILE an execution trace (go tool trace -pprof=syscall|sched|net FILE
// says where the run's goroutines waited),
// NARAD_MEMPROFILE=FILE a heap profile at its end (go tool pprof reads both), and
// NARAD_MEMSTATS=FILE the runtime's memory figures on stderr and the
// process's memory map (/proc/self/smaps) in FILE at the end.
func init() {
	profile = func() func() {
		cpu := startFile("NARAD_CPUPROFILE", "profile", pprof.StartCPUProfile)
		tr := startFile("NARAD_TRACE", "trace", trace.Start)
		return func() {
			if tr != nil {
				trace.Stop()
				_ = tr.Close()
			}
			if cpu != nil {
				pprof.StopCPUProfile()
				_ = cpu.Close()
			}
			if os.Getenv("NARAD_MEMSTATS") != "" {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				fmt.Fprintf(os.Stderr, "memstats: sys %d KiB: heap sys %d inuse %d idle %d released %d; stacks %d; mspan %d; gc %d; other %d; %d GCs, %d MiB allocated\n",
					m.Sys>>10, m.HeapSys>>10, m.HeapInuse>>10, m.HeapIdle>>10, m.HeapReleased>>10, m.StackSys>>10,
					m.MSpanSys>>10, m.GCSys>>10, m.OtherSys>>10, m.NumGC, m.TotalAlloc>>20)
				if b, err := os.ReadFile("/proc/self/smaps"); err == nil {
					_ = os.WriteFile(os.Getenv("NARAD_MEMSTATS"), b, 0o600)
				}
			}
			if path := os.Getenv("NARAD_MEMPROFILE"); path != "" {
				f, err := os.Create(path)
				if err == nil {
					runtime.GC()
					err = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "narad: cannot write the heap profile (%v)\n", err)
				}
			}
		}
	}
}

// startFile creates the file the variable env names and starts what writes to it;
// nil when env is not set, or when that failed (said on stderr).
func startFile(env, what string, start func(io.Writer) error) *os.File {
	path := os.Getenv(env)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "narad: cannot %s (%v)\n", what, err)
		return nil
	}
	return f
}
