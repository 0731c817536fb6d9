package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
)

// The budget keeps regular and fast polls within apisix_poll_budget of
// one worker, by their measured costs, and leaves the configured intervals
// alone when they fit.
func TestBudgetIntervals(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name          string
		interval      time.Duration
		fast          time.Duration
		budget        config.Percent
		reg, fastCost time.Duration
		fastOn        bool
		wantReg       time.Duration
		wantFast      time.Duration
	}{
		{"fits", time.Second, 100 * ms, 1, 2 * ms, ms / 10, true, time.Second, 100 * ms},
		{"no budget", 200 * ms, 100 * ms, 0, 400 * ms, ms, true, 200 * ms, 100 * ms},
		// A list of 3,000 checkers (~100 ms) at 200 ms: 50% of a worker.
		{"list of 3,000 at 200ms", 200 * ms, 100 * ms, 1, 100 * ms, ms, false, 10 * time.Second, 100 * ms},
		// Fast polls run: they take what they need (0.3%), the regular
		// polls the rest (0.7%).
		{"fast polls share it", 200 * ms, 100 * ms, 1, 100 * ms, 300 * time.Microsecond, true, time.Duration(float64(100*ms) / 0.007), 100 * ms},
		// Fast polls that would take more than half: held to half.
		{"fast polls held to half", time.Second, 20 * ms, 1, 5 * ms, ms, true, time.Second, 200 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{PollInterval: tt.interval, FastPollInterval: tt.fast, PollBudget: tt.budget}
			b := pollBudget{reg: tt.reg, fast: tt.fastCost}
			reg, fast := b.intervals(cfg, tt.fastOn)
			if d := reg - tt.wantReg; d > ms || d < -ms || fast != tt.wantFast {
				t.Errorf("intervals = %v, %v; want %v, %v", reg, fast, tt.wantReg, tt.wantFast)
			}
			if tt.budget > 0 {
				used := float64(tt.reg) / float64(reg)
				if tt.fastOn {
					used += float64(tt.fastCost) / float64(fast)
				}
				if used > float64(tt.budget)/100*1.001 {
					t.Errorf("share %.4f over the budget %.4f", used, float64(tt.budget)/100)
				}
			}
		})
	}
}

// A poll that costs more than the budget allows at the configured
// interval stretches the grid (the ticker is reset to the effective
// interval), says so once with a warning, shows it in /status; when the
// cost falls the configured interval comes back.
func TestBudgetStretchesTheGrid(t *testing.T) {
	cfg := fastSeed()
	cfg.PollInterval, cfg.PollBudget = 200*time.Millisecond, 1
	r := newFastRig(t, cfg, newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.h.each = 2 * time.Millisecond // 5 resources: 10 ms a poll, 5% at 200 ms
	grid := &resetTicker{fakeTicker: newFakeTicker()}
	for range 3 {
		r.d.tick(context.Background())
		r.d.regrid(grid)
	}
	if want := time.Second; grid.last != want {
		t.Errorf("grid reset to %v, want %v (10 ms a poll at 1%%)", grid.last, want)
	}
	warns := 0
	for _, e := range r.logs.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Message == "apisix_poll_interval stretched: polling at the configured interval would take more of APISIX's workers than apisix_poll_budget" {
			warns++
		}
	}
	if warns != 1 {
		t.Errorf("%d warnings, want 1", warns)
	}
	r.d.tick(context.Background())
	p := r.d.Status().ControlAPI.Polling
	if p.EffectiveInterval != time.Second || p.StretchedSince.IsZero() || p.PollCost != 10*time.Millisecond || p.BudgetPercent != 1 {
		t.Errorf("status polling %+v", p)
	}
	r.h.each = 0
	for range 4 { // the estimate is the least of the last 4 polls
		r.d.tick(context.Background())
		r.d.regrid(grid)
	}
	if grid.last != 200*time.Millisecond || !r.d.polls.budget.stretchedSince.IsZero() {
		t.Errorf("cost gone: grid at %v, stretched since %v; want the configured 200ms", grid.last, r.d.polls.budget.stretchedSince)
	}
}

// resetTicker is a fakeTicker that remembers its last Reset.
type resetTicker struct {
	*fakeTicker
	last time.Duration
}

func (r *resetTicker) Reset(d time.Duration) { r.last = d }

// The cost estimate is the least of the last 4 polls: a slow first poll
// (cold connections, a busy host) is forgotten at the next one, and a
// cost that really grew is taken after 4 polls.
func TestBudgetEstimate(t *testing.T) {
	ms := time.Millisecond
	var r recent
	for i, tt := range []struct{ in, want time.Duration }{
		{100 * ms, 100 * ms}, // the first measure
		{10 * ms, 10 * ms},   // a cold first poll forgotten
		{12 * ms, 10 * ms},
		{40 * ms, 10 * ms}, // a noisy poll
		{40 * ms, 10 * ms},
		{40 * ms, 12 * ms},
		{40 * ms, 40 * ms}, // the cost grew: taken at the 4th poll
	} {
		if got := r.add(tt.in); got != tt.want {
			t.Errorf("poll %d: add(%v) = %v, want %v", i, tt.in, got, tt.want)
		}
	}
}
