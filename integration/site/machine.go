package site

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where figures were taken: cores, CPU model, kernel, Go
// version and the date, for the reports of the benchmark and the soak run.
func Machine() string {
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "kernel " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d cores (%s), %s, %s, %s", runtime.NumCPU(), cpuModel(), kernel, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown cpu"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown cpu"
}
