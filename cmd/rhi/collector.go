package main

import (
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGOGC is the collector's GOGC that `rhi run` sets when its
// environment has none. Go's default, 100, lets the heap grow to twice
// what a collection found live before the next one; rhi keeps little and
// throws away little a poll, so a tighter goal costs little CPU and keeps
// RSS down where it matters, at thousands of VIPs (BENCHMARKS.md, "Issue
// 15: the result"). GOGC in the environment (e.g. a systemd drop-in)
// overrides it, as it does for any Go program; so does GOGC=off.
const defaultGOGC = 50

// tuneCollector applies defaultGOGC unless getenv says GOGC is set, and
// returns the GOGC in force for the log: the environment's, or the default.
func tuneCollector(getenv func(string) string, setGCPercent func(int) int) string {
	if v := getenv("GOGC"); v != "" {
		return v + " (environment)"
	}
	setGCPercent(defaultGOGC)
	return strconv.Itoa(defaultGOGC) + " (rhi's default)"
}

// collector is what cmdRun calls.
func collector() string { return tuneCollector(os.Getenv, debug.SetGCPercent) }
