//go:build integration

package vip

import (
	"context"
	"syscall"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// BenchmarkSetNetlinkCPU is BenchmarkSetNetlink's "noop" (one read of
// 10,000 addresses, nothing to write: the daemon's tick at rest), reporting
// the whole process's CPU per call as well as the wall time: a read that
// blocks in the kernel also costs the runtime's threads (sysmon retakes the
// P, another thread starts), which ns/op does not show.
func BenchmarkSetNetlinkCPU(b *testing.B) {
	const n = 10000
	_, h := labNS(b)
	log, _ := logtest.NewNullLogger()
	a := New(h, iface, log)
	owned := DesiredOf(benchOwned(n))
	if _, err := a.Set(context.Background(), owned); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := a.Set(context.Background(), owned); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// processCPU is the user and system CPU the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
