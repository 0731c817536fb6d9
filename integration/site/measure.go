package site

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Metric returns the value of the unlabelled sample name in Prometheus text
// format, e.g. go_goroutines or rhi_poll_duration_seconds_sum.
func Metric(text, name string) (float64, error) {
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || !strings.HasPrefix(rest, " ") {
			continue // another metric, a longer name, or a labelled sample
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %q: value %q: %w", name, f[0], err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("metric %q: not in the exposition", name)
}

// VIPAddr is the i-th benchmark VIP, 10.1.0.1 onwards (250 per /24, so up
// to 62,500 addresses), away from the lab's links and the seed's 10.0.0.x.
func VIPAddr(i int) string { return fmt.Sprintf("10.1.%d.%d", i/250, i%250+1) }

// Summary is the median and the worst of repeated timings.
type Summary struct {
	N      int
	Median time.Duration
	Worst  time.Duration
}

// Summarize returns the median (the mean of the two middle values for an
// even count) and the maximum of ds; zero for no timings.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{N: n, Median: med, Worst: s[n-1]}
}

// String is "median / worst" in milliseconds, e.g. "12.3 / 40.1 ms".
func (s Summary) String() string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s ms", Ms(s.Median), Ms(s.Worst))
}

// Ms formats d in milliseconds with one decimal.
func Ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// MiB formats a byte count in MiB with one decimal.
func MiB(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}
