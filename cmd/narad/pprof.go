//go:build pprof

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// With -tags pprof, NARAD_CPUPROFILE=FILE writes a CPU profile of the run and
// NARAD_MEMPROFILE=FILE a heap profile at its end (go tool pprof reads both).
func init() {
	profile = func() func() {
		var cpu *os.File
		if path := os.Getenv("NARAD_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "narad: cannot profile (%v)\n", err)
			} else {
				cpu = f
			}
		}
		return func() {
			if cpu != nil {
				pprof.StopCPUProfile()
				_ = cpu.Close()
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
