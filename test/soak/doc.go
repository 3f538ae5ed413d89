// Package soak proves at scale what the unit tests show once: under faults, signals and
// closed or slow pipes the real narad binary loses nothing, doubles nothing beyond what a
// fault can cause, leaves nothing held and never hangs.
//
// The suites are tests: TestFaults, TestSignals, TestPipes, TestAckOutage and
// TestScaleOut. Each builds narad once, starts an in-process dev broker on 127.0.0.1:0, runs the binary
// many times and ends with a table of figures (runs, messages, lost, duplicated and
// why, hangs, exit codes).
// By default they run a small fast variant, part of `go test ./...`; NARAD_SOAK=1 runs
// the long one (10,000 messages, 50 signalled runs per case). README.md ("Proving it:
// soak suites") gives the command of each.
//
// Environment:
//
//	NARAD_SOAK=1         the long variant, its table on stdout
//	NARAD_SOAK_BIN=PATH  run this narad binary instead of building ./cmd/narad
//	NARAD_SOAK_SEED=N    the seed of every random choice (printed by each suite)
package soak
