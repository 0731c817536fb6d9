package daemon

import (
	"math/rand/v2"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/status"
)

// pollBudget keeps rhi's share of APISIX's control-API time under
// apisix_poll_budget. APISIX serves the control API in the nginx workers
// that carry its traffic; while a worker builds an answer for rhi, the
// requests it holds wait (a list of 10,000 checkers blocks one for ~0.4 s).
// The client measures each request (health.PollCost); the budget estimates
// what a regular poll and a fast poll cost (the least of the last few),
// and from it the intervals that keep
//
//	regular cost / regular interval + fast cost / fast interval ≤ budget
//
// (the fast term only while something moves). When the configured
// intervals fit, they are used as they are. When they do not, fast polls
// get what the regular polls leave, but at least half of the budget, and
// the regular interval is stretched to fit the rest: a moving upstream is
// what rhi must see soon. The loop alone uses it.
type pollBudget struct {
	// reg and fast are the estimates of one poll's cost: the least of
	// the last few measured (recent). A request's time as the client
	// sees it also holds the worker's queue (APISIX's traffic before it)
	// and the host's scheduling, which only add: the least of a few
	// polls is the closest to the worker's own work, and a first poll
	// on cold connections does not stretch the grid for minutes.
	reg, fast         time.Duration
	regRing, fastRing recent
	last              health.PollCost // the last regular poll's
	spreadUsed        time.Duration   // what the last regular poll's requests were spread over
	spent             time.Duration   // every measured request's time, ever
	// effective is the regular grid's interval now.
	effective time.Duration
	// stretchedSince is when the effective interval last became longer
	// than the configured one; zero while it is not.
	stretchedSince time.Time
	warned         bool // the stretch was logged since the last reload
}

// share is the budget as a fraction of one worker; 0: none.
func share(cfg *config.Config) float64 { return float64(cfg.PollBudget) / 100 }

// regCost files a regular poll's cost.
func (b *pollBudget) regCost(c health.PollCost) {
	b.spreadUsed = b.spread() // what the poll that cost c was spread over
	b.last = c
	b.spent += c.Busy
	b.reg = b.regRing.add(c.Busy)
}

// fastCost files a fast poll's cost.
func (b *pollBudget) fastCost(c health.PollCost) {
	b.spent += c.Busy
	b.fast = b.fastRing.add(c.Busy)
}

// recent keeps the last few measures of a cost.
type recent struct {
	d [4]time.Duration
	n int // measures so far
}

// add files d and returns the least of the last few measures.
func (r *recent) add(d time.Duration) time.Duration {
	r.d[r.n%len(r.d)] = d
	r.n++
	least := d
	for _, x := range r.d[:min(r.n, len(r.d))] {
		least = min(least, x)
	}
	return least
}

// intervals returns the regular and fast intervals the budget allows;
// fastOn says whether fast polls run.
func (b *pollBudget) intervals(cfg *config.Config, fastOn bool) (reg, fast time.Duration) {
	reg, fast = cfg.PollInterval, cfg.FastPollInterval
	B := share(cfg)
	if B <= 0 {
		return reg, fast
	}
	regShare := float64(b.reg) / (float64(reg) * (1 - earlyMean))
	fastShare := 0.0
	if fastOn && fast > 0 {
		fastShare = float64(b.fast) / float64(fast)
	}
	if regShare+fastShare <= B {
		return reg, fast
	}
	if fastShare > 0 {
		fastShare = min(fastShare, max(B/2, B-regShare))
		fast = max(fast, time.Duration(float64(b.fast)/fastShare))
	}
	reg = max(reg, time.Duration(float64(b.reg)/(B-fastShare)/(1-earlyMean)))
	return reg, fast
}

// Regular polls come early by a random 2 to 10 % of the interval, never
// late. APISIX's checker runs on a grid of its own, and a node it finds
// failing stays mostly_healthy for one check interval before unhealthy:
// that window is what tells rhi to poll the upstream fast. On a fixed grid
// at the check's own interval rhi's polls can lock to the checker's steps
// (a probe's failing request pulls them together) and read just before
// each step, missing the window every time. A gap that is always shorter
// than the interval lands a poll inside every window of that length, and
// a random one cannot lock. The mean gap is 6 % short, which the budget
// counts (earlyMean).
const (
	earlyMin  = 0.02
	earlySpan = 0.08
	earlyMean = earlyMin + earlySpan/2
)

// randomEarly is how much earlier than interval the next regular poll
// comes: a random 2 to 10 % of it.
func randomEarly(interval time.Duration) time.Duration {
	return time.Duration(float64(interval) * (earlyMin + earlySpan*rand.Float64()))
}

// nextPoll sets the regular ticker to the next poll: the effective
// interval, less the loop's early draw, after the tick at at. A poll that
// ran past that skips to the next gap, so a stalled control API is
// polled at the interval, not back to back.
//
// A poll spreads its one-upstream requests (spread), the last one going
// out nearly a whole spread after the poll starts. When the next poll's
// spread is longer, its last request would come that much later than the
// last one before, past the interval: the gap is shortened by the growth,
// so that every upstream, not only the first, is read at least once an
// interval.
func (d *Daemon) nextPoll(t ticker, at time.Time) {
	b := &d.polls.budget
	gap := b.effective
	gap -= d.env.early(gap) + max(0, b.spread()-b.spreadUsed)
	wait := gap - d.env.now().Sub(at)
	for gap > 0 && wait <= 0 {
		wait += gap
	}
	t.Reset(max(wait, time.Millisecond))
}

// fastInterval is the fast ticker's interval now; 0: fast polls are off.
func (b *pollBudget) fastInterval(cfg *config.Config) time.Duration {
	if cfg.FastPollInterval <= 0 {
		return 0
	}
	_, f := b.intervals(cfg, true)
	return f
}

// spread is how long a regular poll's one-upstream requests are spread
// over: enough that rhi keeps APISIX's workers busy a tenth of the time
// at most while they run (10 × their measured time), at most half the
// effective interval. A poll of a few upstreams is spread over a few ms.
func (b *pollBudget) spread() time.Duration {
	if b.last.OneRequests == 0 {
		return 0
	}
	return min(10*b.last.One, b.effective/2)
}

// regrid sets the regular grid to the interval the budget allows, logging
// once when it stretches the configured one.
func (d *Daemon) regrid() {
	reg := d.gridInterval()
	b := &d.polls.budget
	if reg == b.effective && (reg > d.cfg.PollInterval || b.stretchedSince.IsZero()) {
		// Unchanged. A reload sets the grid back to the configured
		// interval before its poll (Run): a stretch that ended there
		// still has to end here.
		return
	}
	b.effective = reg
	if reg <= d.cfg.PollInterval {
		if !b.stretchedSince.IsZero() {
			d.log.WithFields(logrus.Fields{"interval": reg}).Info("poll interval back to the configured one")
		}
		b.stretchedSince = time.Time{}
		return
	}
	if b.stretchedSince.IsZero() {
		b.stretchedSince = d.env.now()
	}
	// Stretches follow the measured cost, which moves a little every
	// poll: warn once, then say it at debug.
	e := d.log.WithFields(logrus.Fields{
		"configured": d.cfg.PollInterval, "effective": reg.Round(time.Millisecond),
		"poll_cost": b.reg.Round(10 * time.Microsecond), "budget": d.cfg.PollBudget,
		"list_entries": b.last.ListEntries,
	})
	if !b.warned {
		b.warned = true
		e.Warn("apisix_poll_interval stretched: polling at the configured interval would take more of APISIX's workers than apisix_poll_budget")
		return
	}
	e.Debug("apisix_poll_interval stretched")
}

// gridInterval is the regular grid's interval the budget allows now. A
// stretched one is rounded up to 10 ms: the estimate moves a little every
// poll, the grid need not, and rounding down would take more than the
// budget.
func (d *Daemon) gridInterval() time.Duration {
	reg, _ := d.polls.budget.intervals(d.cfg, d.polls.fast.n > 0)
	if reg > d.cfg.PollInterval {
		const step = 10 * time.Millisecond
		if r := reg.Truncate(step); r < reg {
			reg = r + step
		}
	}
	return reg
}

// notePolling files the pace of the polls for /status and /metrics: the
// intervals the budget allows now, what the polls cost, what moves.
func (d *Daemon) notePolling() {
	b := &d.polls.budget
	reg := d.gridInterval()
	_, fast := b.intervals(d.cfg, d.polls.fast.n > 0)
	if d.cfg.FastPollInterval <= 0 {
		fast = 0
	}
	entries := 0
	if b.last.ListRead {
		entries = b.last.ListEntries
	}
	d.polls.stats.polling = status.PollingStatus{
		EffectiveInterval: reg, StretchedSince: b.stretchedSince, FastInterval: fast,
		Moving: d.polls.fast.n, FastPolls: d.polls.fast.polls, BudgetPercent: float64(d.cfg.PollBudget),
		PollCost: b.last.Busy, CostTotal: b.spent, ListEntries: entries,
	}
}
