package main

import (
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGOGC is the collector's GOGC that `rhi run` sets when its
// environment has none. Go's default, 100, lets the heap grow to twice
// what a collection found live before the next one. rhi keeps ~7.5 MiB at
// 10,000 VIPs and a steady poll throws away ~2 MB, so a goal 25 % above
// what is live costs little CPU and keeps RSS where the 30 MB target wants
// it: in the lab at 10,000 VIPs (`auto`), 36.5 MiB and 2.2 % of a core at
// 100, 29 MiB and 2.4 % at 50, 27 MiB and 2.55 % at 25 (BENCHMARKS.md).
// GOGC in the environment (e.g. a systemd drop-in)
// overrides it, as for any Go program; GOGC=100 restores Go's default.
const defaultGOGC = 25

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
