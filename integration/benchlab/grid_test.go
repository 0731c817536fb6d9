package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

func TestGrid(t *testing.T) {
	base := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	g := grid{anchor: base, interval: 200 * time.Millisecond}
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name string
		at   time.Time
		next time.Time
		off  time.Duration
	}{
		{"on the anchor", ms(0), ms(0), 0},
		{"just after", ms(1), ms(200), time.Millisecond},
		{"middle", ms(100), ms(200), 100 * time.Millisecond},
		{"just before a tick", ms(599), ms(600), -time.Millisecond},
		{"on a later tick", ms(800), ms(800), 0},
		{"before the anchor", ms(-150), ms(0), 50 * time.Millisecond},
		{"late in an interval", ms(130), ms(200), -70 * time.Millisecond},
		{"on an earlier tick", ms(-400), ms(-400), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := g.next(tc.at); !got.Equal(tc.next) {
				t.Errorf("next(%s) = %s, want %s", tc.at.Sub(base), got.Sub(base), tc.next.Sub(base))
			}
			if got := g.off(tc.at); got != tc.off {
				t.Errorf("off(%s) = %s, want %s", tc.at.Sub(base), got, tc.off)
			}
		})
	}
}

func TestPick(t *testing.T) {
	got, err := pick("poll1000,flip1-1s")
	if err != nil {
		t.Fatal(err)
	}
	// Standard order, whatever the order asked.
	if len(got) != 2 || got[0].name != "flip1-1s" || got[1].name != "poll1000" {
		t.Errorf("pick = %v", got)
	}
	if all, err := pick(""); err != nil || len(all) != len(scenarios()) {
		t.Errorf("pick(\"\") = %d scenarios, %v; want all %d", len(all), err, len(scenarios()))
	}
	if _, err := pick("flip1-1s,nonsense"); err == nil {
		t.Error("unknown scenario: no error")
	}
}

// TestCostGoals: the goal allows 10 % or 1 ms over the p99 without rhi,
// whichever is more, and is judged per number of upstreams at the
// defaults only.
func TestCostGoals(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	row := func(n int, setting string, p99 time.Duration) costResult {
		return costResult{upstreams: n, setting: setting, loop: apisixtest.Latency{P99: p99}}
	}
	costs := []costResult{
		row(100, "no rhi", ms(0.05)), row(100, "defaults", ms(1.05)), row(100, "1s configured", ms(50)),
		row(1000, "no rhi", ms(0.05)), row(1000, "defaults", ms(1.051)),
		row(3000, "no rhi", ms(20)), row(3000, "defaults", ms(22)),
		row(10000, "no rhi", ms(20)), row(10000, "defaults", ms(22.001)),
		row(30000, "no rhi", ms(1)),
	}
	want := []string{
		"  100 upstreams: holds (loop p99 1.050 ms with rhi, 0.050 ms without, limit 1.050 ms)",
		"  1000 upstreams: FAILS (loop p99 1.051 ms with rhi, 0.050 ms without, limit 1.050 ms)",
		"  3000 upstreams: holds (loop p99 22.000 ms with rhi, 20.000 ms without, limit 22.000 ms)",
		"  10000 upstreams: FAILS (loop p99 22.001 ms with rhi, 20.000 ms without, limit 22.000 ms)",
	}
	if diff := cmp.Diff(want, costGoals(costs)); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
}
