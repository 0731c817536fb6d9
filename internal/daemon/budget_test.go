package daemon

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// The budget keeps regular and fast polls within apisix_poll_budget of
// one worker, by their measured costs, and leaves the configured intervals
// alone when they fit.
func TestBudgetIntervals(t *testing.T) {
	ms := time.Millisecond
	// Regular polls come 6 % early on average (randomEarly): a stretched
	// interval is that much longer than cost / budget.
	early := func(d time.Duration) time.Duration { return time.Duration(float64(d) / (1 - earlyMean)) }
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
		{"list of 3,000 at 200ms", 200 * ms, 100 * ms, 1, 100 * ms, ms, false, early(10 * time.Second), 100 * ms},
		// Fast polls run: they take what they need (0.3%), the regular
		// polls the rest (0.7%).
		{"fast polls share it", 200 * ms, 100 * ms, 1, 100 * ms, 300 * time.Microsecond, true, early(time.Duration(float64(100*ms) / 0.007)), 100 * ms},
		// Fast polls that would take more than half: held to half, and
		// the regular polls (0.53 %) stretched into the other half.
		{"fast polls held to half", time.Second, 20 * ms, 1, 5 * ms, ms, true, early(time.Second), 200 * ms},
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
				used := float64(tt.reg) / (float64(reg) * (1 - earlyMean))
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
	r.d.env.early = func(time.Duration) time.Duration { return 0 }
	for range 3 {
		r.d.tick(context.Background())
		r.d.regrid()
		r.d.nextPoll(grid, r.d.env.now())
	}
	// 10 ms a poll at 1 %, polls 6 % early on average: 1.064 s, rounded
	// up to the 10 ms grid.
	if want := 1070 * time.Millisecond; grid.last != want {
		t.Errorf("grid reset to %v, want %v", grid.last, want)
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
	if p.EffectiveInterval != 1070*time.Millisecond || p.StretchedSince.IsZero() || p.PollCost != 10*time.Millisecond || p.BudgetPercent != 1 {
		t.Errorf("status polling %+v", p)
	}
	r.h.each = 0
	for range 4 { // the estimate is the least of the last 4 polls
		r.d.tick(context.Background())
		r.d.regrid()
		r.d.nextPoll(grid, r.d.env.now())
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

// The next regular poll is the interval less the early draw after the
// tick; a poll that ran past it skips to the gap after.
func TestNextPoll(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name         string
		early, spent time.Duration
		want         time.Duration
	}{
		{"on time", 0, 300 * time.Millisecond, 700 * time.Millisecond},
		{"early", 50 * time.Millisecond, 300 * time.Millisecond, 650 * time.Millisecond},
		{"ran past the next", 50 * time.Millisecond, 1200 * time.Millisecond, 700 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &Daemon{}
			d.polls.budget.effective = time.Second
			d.env.now = func() time.Time { return at.Add(tt.spent) }
			d.env.early = func(time.Duration) time.Duration { return tt.early }
			grid := &resetTicker{fakeTicker: newFakeTicker()}
			d.nextPoll(grid, at)
			if grid.last != tt.want {
				t.Errorf("next poll in %v, want %v", grid.last, tt.want)
			}
		})
	}
}

// Polls that come a random 2 to 10 % early land a read in every stretch
// as long as the interval, wherever it starts, though each read lands up
// to 15 ms after its tick (the request's own time): APISIX keeps a failing
// node mostly_healthy for one check interval, and a read inside that
// window starts the fast polls. A fixed grid at the same interval
// straddles some windows (checked too, so the test can tell).
func TestEarlyPollsLandInEveryWindow(t *testing.T) {
	const interval = time.Second
	noise := rand.New(rand.NewPCG(1, 2))
	reads := func(next func() time.Duration) []time.Duration {
		var r []time.Duration
		for at := time.Duration(0); at < 1000*interval; at += next() {
			r = append(r, at+time.Duration(noise.Int64N(int64(15*time.Millisecond))))
		}
		return r
	}
	missed := func(reads []time.Duration) (time.Duration, bool) {
		for s := time.Duration(0); s < reads[len(reads)-1]-interval; s += time.Millisecond {
			i, _ := slices.BinarySearch(reads, s)
			if reads[i] >= s+interval {
				return s, true
			}
		}
		return 0, false
	}
	if s, ok := missed(reads(func() time.Duration { return interval - randomEarly(interval) })); ok {
		t.Errorf("early polls: no read in [%v, %v)", s, s+interval)
	}
	if _, ok := missed(reads(func() time.Duration { return interval })); !ok {
		t.Error("a fixed grid read in every window: the check cannot tell")
	}
	for range 1000 {
		if e := randomEarly(interval); e < interval*2/100 || e > interval*10/100 {
			t.Fatalf("randomEarly(%v) = %v, want 2-10 %%", interval, e)
		}
	}
}

// A reload sets the grid back to the configured interval before its poll
// (Run). When the cost that stretched it is gone by then, the interval is
// not stretched any more: /status must not keep a stretched_since, and the
// log says the configured interval is back.
func TestReloadEndsAStretch(t *testing.T) {
	cfg := fastSeed()
	cfg.PollInterval, cfg.PollBudget = 200*time.Millisecond, 1
	r := newFastRig(t, cfg, newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.d.env.early = func(time.Duration) time.Duration { return 0 }
	grid := &resetTicker{fakeTicker: newFakeTicker()}
	poll := func() {
		r.d.tick(context.Background())
		r.d.regrid()
		r.d.nextPoll(grid, r.d.env.now())
	}
	r.h.each = 2 * time.Millisecond // 10 ms a poll: stretched at 1 %
	for range 4 {
		poll()
	}
	if r.d.polls.budget.stretchedSince.IsZero() {
		t.Fatal("the grid did not stretch")
	}
	// What Run does on a reload, then its poll, which costs nothing: the
	// estimate (the least of the last few) is 0 from it on.
	r.h.each = 0
	next := fastSeed()
	next.PollInterval, next.PollBudget = cfg.PollInterval, cfg.PollBudget
	r.d.applyReload(next)
	r.d.polls.budget.effective = r.d.cfg.PollInterval
	poll()
	if r.d.polls.budget.effective != cfg.PollInterval {
		t.Fatalf("effective %v, want the configured %v", r.d.polls.budget.effective, cfg.PollInterval)
	}
	r.d.tick(context.Background())
	if p := r.d.Status().ControlAPI.Polling; !p.StretchedSince.IsZero() || p.EffectiveInterval != cfg.PollInterval {
		t.Errorf("status: effective %v, stretched since %v; want %v and not stretched", p.EffectiveInterval, p.StretchedSince, cfg.PollInterval)
	}
	back := 0
	for _, e := range r.logs.AllEntries() {
		if e.Message == "poll interval back to the configured one" {
			back++
		}
	}
	if back != 1 {
		t.Errorf("%d logs of the interval back, want 1", back)
	}
}

// A stretched interval is rounded to 10 ms for a steady grid; rounding it
// down would take more than the budget. Cost 9.8 ms at 10 %: the mean gap
// must be at least 98 ms, so the interval at least 104.3 ms.
func TestStretchRoundsUp(t *testing.T) {
	cfg := fastSeed()
	cfg.PollInterval, cfg.PollBudget, cfg.FastPollInterval = 100*time.Millisecond, 10, 0
	r := newFastRig(t, cfg, newFakeLink())
	r.d.polls.budget.reg = 9800 * time.Microsecond
	r.d.regrid()
	eff := r.d.polls.budget.effective
	if used := float64(r.d.polls.budget.reg) / (float64(eff) * (1 - earlyMean)); used > share(cfg) {
		t.Errorf("effective %v: %.2f %% of a worker, over the %v %% budget", eff, 100*used, float64(cfg.PollBudget))
	}
	r.d.notePolling()
	if got := r.d.polls.stats.polling.EffectiveInterval; got != eff {
		t.Errorf("/status says %v, the grid runs at %v", got, eff)
	}
}

// The early polls promise a read of every upstream inside every window as
// long as the interval (TestEarlyPollsLandInEveryWindow). A regular poll
// spreads its one-upstream requests over spread() (10 × the last poll's
// request time), the client sending upstream i of n at start + i·spread/n.
// When one poll's requests take a little longer than the one before (1 ms
// each, then 1.25 ms: APISIX a little busier), the last upstream's request
// moves later by more than the 2 % the poll came early, and its reads are
// more than an interval apart even at the earliest draw.
func TestSpreadKeepsEveryUpstreamWithinTheInterval(t *testing.T) {
	const n = 20
	d := &Daemon{}
	d.polls.budget.effective = time.Second
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	d.env.now = func() time.Time { return at }
	d.env.early = func(g time.Duration) time.Duration { return time.Duration(float64(g) * earlyMin) }
	last := func(spread time.Duration) time.Duration { return time.Duration(n-1) * (spread / n) }

	d.polls.budget.last = health.PollCost{One: n * time.Millisecond, OneRequests: n}
	first := last(d.polls.budget.spread()) // the poll at `at`
	d.polls.budget.regCost(health.PollCost{One: n * 1250 * time.Microsecond, OneRequests: n})
	grid := &resetTicker{fakeTicker: newFakeTicker()}
	d.nextPoll(grid, at)
	second := grid.last + last(d.polls.budget.spread()) // the next poll, from `at`
	if gap := second - first; gap >= d.polls.budget.effective {
		t.Errorf("upstream %d read %v after its last read, at the earliest draw: a window of %v can fall between", n, gap, d.polls.budget.effective)
	}
}
