package site

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "4242 (rhi) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 130 0 0 20 0 9 0 100 0 0", 3800 * time.Millisecond, false},
		// The command name may hold spaces and ')': fields count from the last ')'.
		{"odd command name", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0", 30 * time.Millisecond, false},
		{"no name", "4242 rhi S 1", 0, true},
		{"short", "4242 (rhi) S 1 2 3", 0, true},
		{"not a number", "4242 (rhi) S 1 4242 4242 0 -1 4194560 1500 0 0 0 x 130 0 0", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("cpu = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	const status = "Name:\trhi\nVmPeak:\t 1262400 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   12288 kB\nThreads:\t9\n"
	rss, hwm, threads, err := parseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := []int64{rss, hwm, int64(threads)}, []int64{12 << 20, 20 << 20, 9}; !cmp.Equal(got, want) {
		t.Errorf("rss, hwm, threads = %v, want %v", got, want)
	}
	// A zombie's status has no memory lines.
	if _, _, _, err := parseStatus([]byte("Name:\trhi\nState:\tZ (zombie)\nThreads:\t1\n")); err == nil {
		t.Error("zombie status: no error")
	}
}

// TestReadProc reads this test process, which certainly has memory, a
// thread and open descriptors, and spends CPU when asked to.
func TestReadProc(t *testing.T) {
	a, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a.RSS <= 0 || a.HWM < a.RSS || a.Threads < 1 || a.FDs < 3 {
		t.Errorf("implausible reading %+v", a)
	}
	// Busy until the kernel has charged this process 50 ms more CPU (a
	// wall-clock loop may get no CPU at all on a loaded machine); the
	// deadline only bounds a failure.
	start, deadline := cpuTime(t), time.Now().Add(10*time.Second)
	for cpuTime(t)-start < 50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("10 s without 50 ms of CPU")
		}
	}
	b, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if b.CPU <= a.CPU || CPUShare(a, b) <= 0 {
		t.Errorf("cpu %v then %v after a busy loop", a.CPU, b.CPU)
	}
	if _, err := ReadProc(-1); err == nil {
		t.Error("pid -1: no error")
	}
}

func TestFindPid(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's own path is its argv[0] under go test.
	pid, err := FindPid(os.Args[0])
	if err != nil {
		t.Fatalf("%v (executable %q)", err, self)
	}
	if pid != os.Getpid() {
		t.Errorf("FindPid(argv[0]) = %d, want %d", pid, os.Getpid())
	}
	if _, err := FindPid("/no/such/argument/" + t.Name()); err == nil {
		t.Error("missing argument: no error")
	}
}

func TestMetric(t *testing.T) {
	const text = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 17
go_goroutines_extra 3
rhi_poll_duration_seconds_bucket{le="0.001"} 4
rhi_poll_duration_seconds_sum 0.0123
rhi_poll_duration_seconds_count 12
process_cpu_seconds_total 1.5e-01
`
	tests := []struct {
		name    string
		want    float64
		wantErr bool
	}{
		{"go_goroutines", 17, false},
		{"rhi_poll_duration_seconds_sum", 0.0123, false},
		{"rhi_poll_duration_seconds_count", 12, false},
		{"process_cpu_seconds_total", 0.15, false},
		{"rhi_poll_duration_seconds_bucket", 0, true}, // labelled only
		{"go_gc", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Metric(text, tc.name)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want Summary
	}{
		{"none", nil, Summary{}},
		{"odd", []time.Duration{30 * ms, 10 * ms, 20 * ms}, Summary{N: 3, Median: 20 * ms, Worst: 30 * ms}},
		{"even", []time.Duration{40 * ms, 10 * ms, 20 * ms, 30 * ms}, Summary{N: 4, Median: 25 * ms, Worst: 40 * ms}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := (Summary{N: 2, Median: 1500 * time.Microsecond, Worst: 40 * ms}).String(); got != "1.5 / 40.0 ms" {
		t.Errorf("String = %q", got)
	}
}

// cpuTime is the CPU this process has used, user and system, by getrusage.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
