package apisixtest

import (
	"testing"
	"time"
)

// TestLatencyReservoir: past latencySamples the record keeps a uniform
// sample of every latency, not the first ones, and its count and max stay
// exact. The latencies 1…200,000 µs arrive in increasing order, so a
// record that kept the first 65,536 would put the p50 near 33 ms.
func TestLatencyReservoir(t *testing.T) {
	var l latencyLog
	const n = 200000
	for i := 1; i <= n; i++ {
		l.add(time.Duration(i) * time.Microsecond)
	}
	got := l.summary()
	if got.Count != n || got.Sampled != latencySamples || got.Max != n*time.Microsecond {
		t.Errorf("count %d, sampled %d, max %v; want %d, %d, %v", got.Count, got.Sampled, got.Max, n, latencySamples, n*time.Microsecond)
	}
	// The sampling error of a quantile q over m samples is about
	// √(q(1−q)/m): 0.2 % at the median, 0.04 % at the p99; allow 5×.
	within := func(name string, d, want time.Duration, rel float64) {
		if diff := float64(d-want) / float64(n*time.Microsecond); diff > rel || diff < -rel {
			t.Errorf("%s %v, want %v ± %.1f %% of the range", name, d, want, rel*100)
		}
	}
	within("p50", got.P50, n/2*time.Microsecond, 0.01)
	within("p99", got.P99, n*99/100*time.Microsecond, 0.002)
}

// TestNearestRank: the pct-th percentile is the value at rank
// ⌈pct/100 × n⌉.
func TestNearestRank(t *testing.T) {
	tests := []struct {
		n, pct int
		want   time.Duration // of the values 1…n
	}{
		{0, 99, 0}, {1, 99, 1}, {1, 50, 1}, {2, 50, 1}, {3, 50, 2},
		{100, 99, 99}, {101, 99, 100}, {1000, 99, 990}, {1001, 99, 991},
	}
	for _, tt := range tests {
		var s []time.Duration
		for i := 1; i <= tt.n; i++ {
			s = append(s, time.Duration(i))
		}
		if got := nearestRank(s, tt.pct); got != tt.want {
			t.Errorf("p%d of 1…%d: %d, want %d", tt.pct, tt.n, got, tt.want)
		}
	}
}
