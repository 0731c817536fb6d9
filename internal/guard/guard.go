// Package guard is the fail-open guard's pure logic (issue 14): from what
// health decided for a VIP, whether it is drained, and which other sites
// BIRD sees announcing it, it says whether rhi announces the VIP anyway. It
// does no I/O and reads no clock; the daemon asks BIRD and passes the time.
//
// The rules (docs/semantics.md, "Fail-open guard"):
//   - The guard engages when health would withdraw the VIP, it is not
//     drained, and BIRD has answered, without a break, for at least Hold,
//     that fewer than MinOtherSites other sites announce it. The run may
//     have started before health withdrew the VIP: a site that is the last
//     one announcing then never withdraws it at all.
//   - Once engaged it holds until the VIP's health recovers, the VIP is
//     drained, the guard is turned off, or at least MinOtherSites other
//     sites have announced the VIP without a break for the release time.
//   - The release time is Release, or twice Release for a site that is
//     "kept": one of the MinOtherSites highest origin ASes among itself and
//     the sites it sees. When every site failed at once, every site
//     engages, and each then sees the others: without this, all would
//     release together and the VIP would vanish again, then come back
//     after Hold, for ever. With it, the sites that are not kept release
//     first, the kept ones see fewer than MinOtherSites, their run breaks,
//     and they hold: the fleet settles with MinOtherSites sites announcing.
//   - When BIRD cannot be asked, the guard does not engage (and the run
//     towards engaging starts again when BIRD answers); an engaged guard
//     stays engaged, its run towards release broken. Letting go without
//     knowing would withdraw what may be the last announcement of the VIP,
//     the outage the guard exists to prevent; the VIP's own health, a drain
//     or a reload still release it.
package guard

import (
	"math"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
)

// Observation is what BIRD's guard table said about one VIP.
type Observation struct {
	// Known is false when BIRD could not be asked (or its answer is too
	// old): the other fields then mean nothing.
	Known bool
	// Others are the distinct origin ASes of the other sites' paths
	// (bird.Announcers.Origins).
	Others []uint32
	// Self is this site's AS, 0 if unknown: a site that does not know it
	// is never "kept" and releases after Release.
	Self uint32
}

// Sites is the number of other sites announcing the VIP.
func (o Observation) Sites() int { return len(o.Others) }

// Input is one step's facts about a VIP.
type Input struct {
	Health  bool // health (decide) announces the VIP
	Drained bool
	Obs     Observation
	Now     time.Time
}

// State is what the guard remembers of one VIP. The zero value is a guard
// that is not engaged and has seen nothing.
type State struct {
	Engaged bool
	Since   time.Time // when it engaged; zero when not engaged
	// LowSince starts the current run of answers with fewer than
	// MinOtherSites other sites; zero when there is none.
	LowSince time.Time
	// EnoughSince starts the current run of answers with at least
	// MinOtherSites other sites while engaged; zero when there is none.
	EnoughSince time.Time
	// Sites is the last answer's count of other sites; -1 when BIRD
	// could not be asked.
	Sites int
}

// Event is what a step did.
type Event int

const (
	None    Event = iota
	Engage        // the guard engaged: the VIP is announced anyway
	Release       // the guard let go
)

// Why says why the guard released (or, for None, why it could not act).
type Why string

const (
	WhyHealthy  Why = "healthy"   // the VIP's health recovered
	WhyDrained  Why = "drained"   // an operator drained it
	WhyOthers   Why = "others"    // enough other sites announced it for the release time
	WhyDisabled Why = "disabled"  // the guard was turned off (reload)
	WhyHold     Why = "hold"      // engaged: fewer than min_other_sites for hold
	WhyNoBird   Why = "bird_down" // BIRD could not be asked
)

// Step advances one VIP's guard by one observation.
func Step(cfg config.FailOpen, prev State, in Input) (State, Event, Why) {
	if !cfg.Enabled() {
		if prev.Engaged {
			return State{Sites: -1}, Release, WhyDisabled
		}
		return State{Sites: -1}, None, ""
	}
	next := observe(cfg, prev, in)
	switch {
	case prev.Engaged && in.Health:
		return disengaged(next), Release, WhyHealthy
	case prev.Engaged && in.Drained:
		return disengaged(next), Release, WhyDrained
	case prev.Engaged && !next.EnoughSince.IsZero() && in.Now.Sub(next.EnoughSince) >= releaseAfter(cfg, in.Obs):
		return disengaged(next), Release, WhyOthers
	case prev.Engaged:
		return next, None, ""
	case in.Health || in.Drained:
		return next, None, ""
	case !in.Obs.Known:
		return next, None, WhyNoBird
	case !next.LowSince.IsZero() && in.Now.Sub(next.LowSince) >= cfg.Hold:
		next.Engaged, next.Since, next.EnoughSince = true, in.Now, time.Time{}
		return next, Engage, WhyHold
	}
	return next, None, ""
}

// observe updates the runs from one observation. An unknown answer breaks
// both runs: neither "fewer" nor "enough" was seen without a break.
func observe(cfg config.FailOpen, prev State, in Input) State {
	next := prev
	if !in.Obs.Known {
		next.LowSince, next.EnoughSince, next.Sites = time.Time{}, time.Time{}, -1
		return next
	}
	next.Sites = in.Obs.Sites()
	if next.Sites < cfg.MinOtherSites {
		next.EnoughSince = time.Time{}
		if next.LowSince.IsZero() {
			next.LowSince = in.Now
		}
		return next
	}
	next.LowSince = time.Time{}
	if prev.Engaged && next.EnoughSince.IsZero() {
		next.EnoughSince = in.Now
	}
	return next
}

func disengaged(s State) State {
	s.Engaged, s.Since, s.EnoughSince = false, time.Time{}, time.Time{}
	return s
}

// releaseAfter is how long enough other sites must announce the VIP before
// this site lets go: twice Release for a kept site (see the package doc).
func releaseAfter(cfg config.FailOpen, o Observation) time.Duration {
	if Kept(cfg.MinOtherSites, o) {
		if cfg.Release > math.MaxInt64/2 {
			return math.MaxInt64 // twice it would wrap negative
		}
		return 2 * cfg.Release
	}
	return cfg.Release
}

// Kept reports whether this site is among the n highest origin ASes of
// itself and the other sites it sees. A site that does not know its own
// AS is not kept.
func Kept(n int, o Observation) bool {
	if o.Self == 0 {
		return false
	}
	higher := 0
	for _, as := range o.Others {
		if as > o.Self {
			higher++
		}
	}
	return higher < n
}

// Reason is the /status reason of a VIP the guard announces.
const Reason decide.Reason = "fail_open"
