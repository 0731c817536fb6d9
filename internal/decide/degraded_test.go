package decide

import (
	"net/netip"
	"testing"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

func nodes(v health.Verdict, healthy, total int) health.Result {
	r := res(v)
	r.Healthy, r.Total = int32(healthy), int32(total)
	return r
}

func tierVIP(cond config.Condition, below config.Percent, rise, fall int, keys ...string) *config.VIP {
	return &config.VIP{
		Address:   netip.MustParsePrefix("10.0.0.1/32"),
		Upstreams: health.Upstreams(keys...),
		Condition: cond, Rise: rise, Fall: fall,
		Degraded: config.Degraded{Below: below},
	}
}

func TestShareTable(t *testing.T) {
	a, b := "/upstreams/a", "/upstreams/b"
	tests := []struct {
		name           string
		cond           config.Condition
		snap           health.Snapshot
		healthy, total int
		known          bool
	}{
		{"all sums every upstream", config.All, health.Snapshot{a: nodes(health.Up, 3, 4), b: nodes(health.Up, 1, 4)}, 4, 8, true},
		{"all counts a down upstream", config.All, health.Snapshot{a: nodes(health.Up, 4, 4), b: nodes(health.Down, 0, 4)}, 4, 8, true},
		{"all: a failed upstream makes it unknown", config.All, health.Snapshot{a: nodes(health.Up, 4, 4), b: res(health.Failed)}, 0, 0, false},
		{"all: a missing upstream makes it unknown", config.All, health.Snapshot{a: nodes(health.Up, 4, 4)}, 0, 0, false},
		{"all: no checker adds nothing", config.All, health.Snapshot{a: nodes(health.Up, 1, 2), b: res(health.NoChecker)}, 1, 2, true},
		{"all: only no checker is unknown", config.All, health.Snapshot{a: res(health.NoChecker), b: res(health.NoChecker)}, 0, 0, false},
		{"any counts only up upstreams", config.Any, health.Snapshot{a: nodes(health.Up, 1, 4), b: nodes(health.Down, 0, 4)}, 1, 4, true},
		{"any ignores failed upstreams", config.Any, health.Snapshot{a: nodes(health.Up, 2, 2), b: res(health.Failed)}, 2, 2, true},
		{"any with nothing up is unknown", config.Any, health.Snapshot{a: nodes(health.Down, 0, 2), b: res(health.NotFound)}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tierVIP(tt.cond, 50, 1, 1, a, b)
			h, n, ok := Share(v, tt.snap, config.CountHealthy)
			if h != tt.healthy || n != tt.total || ok != tt.known {
				t.Errorf("Share = %d/%d known %v, want %d/%d known %v", h, n, ok, tt.healthy, tt.total, tt.known)
			}
		})
	}
}

func TestBelowness(t *testing.T) {
	a := "/upstreams/a"
	for _, tt := range []struct {
		below          config.Percent
		healthy, total int
		want           Below
	}{
		{50, 1, 4, BelowYes},
		{50, 2, 4, BelowNo}, // exactly at the threshold is not below
		{50, 3, 4, BelowNo},
		{100, 3, 4, BelowYes},
		{100, 4, 4, BelowNo},
		{0, 0, 4, BelowNo}, // tier off
		{33.4, 1, 3, BelowYes},
		{33.3, 1, 3, BelowNo},
	} {
		v := tierVIP(config.All, tt.below, 1, 1, a)
		verdict := health.Up
		if tt.healthy == 0 {
			verdict = health.Down
		}
		if got := Belowness(v, health.Snapshot{a: nodes(verdict, tt.healthy, tt.total)}, config.CountHealthy); got != tt.want {
			t.Errorf("below %v%%, %d/%d: got %v, want %v", tt.below, tt.healthy, tt.total, got, tt.want)
		}
	}
	v := tierVIP(config.All, 50, 1, 1, a)
	if got := Belowness(v, health.Snapshot{a: res(health.Failed)}, config.CountHealthy); got != BelowUnknown {
		t.Errorf("failed upstream: %v, want unknown", got)
	}
}

// TestTierSequences runs Tick over sequences of polls: each poll gives the
// healthy nodes of 4 ("F" a failed read); the tiers expected after each.
func TestTierSequences(t *testing.T) {
	const key = "/upstreams/a"
	tests := []struct {
		name       string
		rise, fall int
		start      State
		polls      []int // healthy nodes of 4; -1 failed read
		want       []Tier
	}{
		{"announce degraded at once", 1, 1, State{}, []int{1, 1}, []Tier{TierDegraded, TierDegraded}},
		{"announce at full weight", 1, 1, State{}, []int{4}, []Tier{TierAnnounced}},
		{"degrade after fall polls below", 2, 3, State{Announced: true}, []int{1, 1, 1, 1}, []Tier{TierAnnounced, TierAnnounced, TierDegraded, TierDegraded}},
		{"recover after rise polls above", 2, 1, State{Announced: true, Degraded: true}, []int{3, 4, 4}, []Tier{TierDegraded, TierAnnounced, TierAnnounced}},
		{"a poll back above breaks the run", 1, 2, State{Announced: true}, []int{1, 2, 1, 1}, []Tier{TierAnnounced, TierAnnounced, TierAnnounced, TierDegraded}},
		{"never flaps on alternation", 2, 2, State{Announced: true}, []int{1, 3, 1, 3, 1, 3}, []Tier{TierAnnounced, TierAnnounced, TierAnnounced, TierAnnounced, TierAnnounced, TierAnnounced}},
		{"a failed poll neither counts nor breaks", 1, 2, State{Announced: true}, []int{1, -1, 1}, []Tier{TierAnnounced, TierAnnounced, TierDegraded}},
		{"all down withdraws, degraded or not", 1, 1, State{Announced: true, Degraded: true}, []int{0, 4}, []Tier{TierWithdrawn, TierAnnounced}},
		{"degraded is announced: rise counts from withdrawn", 2, 1, State{}, []int{1, 1, 4}, []Tier{TierWithdrawn, TierDegraded, TierDegraded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{FailurePolicy: config.FailurePolicy{MaxFailedPolls: 10, ControlAPIUnreachable: config.Withdraw, NoChecker: config.CountHealthy}}
			cfg.VIPs = []config.VIP{*tierVIP(config.All, 50, tt.rise, tt.fall, key)}
			p := cfg.VIPs[0].Address
			states := map[netip.Prefix]State{p: tt.start}
			for i, h := range tt.polls {
				r := res(health.Failed)
				switch {
				case h == 0:
					r = nodes(health.Down, 0, 4)
				case h > 0:
					r = nodes(health.Up, h, 4)
				}
				changes := Tick(cfg, health.Snapshot{key: r}, states)
				got := states[p].Tier()
				if got != tt.want[i] {
					t.Fatalf("poll %d (%d/4): tier %s, want %s (state %+v)", i, h, got, tt.want[i], states[p])
				}
				if got == TierDegraded && states[p].Reason != ReasonDegraded && h >= 0 {
					t.Errorf("poll %d: reason %q, want %q", i, states[p].Reason, ReasonDegraded)
				}
				prevTier := tt.start.Tier()
				if i > 0 {
					prevTier = tt.want[i-1]
				}
				if (prevTier != got) != (len(changes) == 1 && changes[0].From.Tier() != changes[0].To.Tier()) {
					t.Errorf("poll %d: changes %+v do not report the move %s → %s", i, changes, prevTier, got)
				}
			}
		})
	}
}

// TestTierNeverFlapsRandom: over random share sequences, the tier never
// changes without a run of rise (up) or fall (down) polls agreeing with it.
func TestTierNeverFlapsRandom(t *testing.T) {
	v := tierVIP(config.All, 50, 3, 2, "/upstreams/a")
	s := State{Announced: true}
	run := []Below{}
	seed := uint32(7)
	for i := 0; i < 5000; i++ {
		seed = seed*1664525 + 1013904223
		b := []Below{BelowYes, BelowNo, BelowUnknown}[seed>>30%3]
		next := StepTier(v, s, s, b)
		if b != BelowUnknown {
			run = append(run, b)
		}
		if next.Degraded != s.Degraded {
			need, want := v.Rise, BelowNo
			if next.Degraded {
				need, want = v.Fall, BelowYes
			}
			if len(run) < need {
				t.Fatalf("poll %d: moved after %d settled polls", i, len(run))
			}
			for _, r := range run[len(run)-need:] {
				if r != want {
					t.Fatalf("poll %d: moved to degraded=%v without %d agreeing polls: %v", i, next.Degraded, need, run[len(run)-need:])
				}
			}
		}
		s = next
	}
}
