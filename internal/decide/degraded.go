package decide

import (
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// The degraded tier. An announced VIP is either at full weight
// (on the main interface) or degraded (on the degraded interface, exported
// with a longer AS path). Three states result: announced, degraded,
// withdrawn (Tier).

// ReasonDegraded: the condition holds, but the healthy share is below
// degraded.below, so the VIP is announced degraded.
const ReasonDegraded Reason = "degraded"

// Tier names the rungs of a VIP's ladder, high to low. Health decides
// three of them (State.Tier); the fourth, last resort, only placement
// (package place) gives, when the fail-open guard keeps a VIP whose health
// fails.
type Tier string

const (
	TierAnnounced  Tier = "announced"   // on the main interface: full weight
	TierDegraded   Tier = "degraded"    // on the degraded interface
	TierLastResort Tier = "last_resort" // on the last-resort interface
	TierWithdrawn  Tier = "withdrawn"   // on none
)

// Present reports whether a VIP at t is on an interface.
func (t Tier) Present() bool { return t != TierWithdrawn && t != "" }

// Tier is s's state of the three that health decides.
func (s State) Tier() Tier {
	switch {
	case !s.Announced:
		return TierWithdrawn
	case s.Degraded:
		return TierDegraded
	}
	return TierAnnounced
}

// Share counts a VIP's nodes for the degraded tier: healthy nodes and
// counted nodes, summed over the upstreams that count towards its
// condition. With `all` that is every upstream; with `any` only those that
// are up (the ones that make the VIP available: a down upstream of an
// `any` VIP carries none of its traffic). An upstream counts with the node
// numbers APISIX reports for it (Result.Healthy, Result.Total); one
// without a health checker, or whose checker lists no node, reports none
// and adds nothing. known is false when the share cannot be told: an
// upstream that counts could not be read (`all` only: for `any`, failed
// upstreams do not count), or no counted upstream reports a node.
func Share(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) (healthy, total int, known bool) {
	for i := range v.Upstreams {
		r, ok := snap[v.Upstreams[i].Key]
		st := UpstreamFailed
		if ok {
			st = Classify(r, noChecker)
		}
		switch {
		case v.Condition == config.Any && st != UpstreamUp:
			continue
		case st == UpstreamFailed:
			return 0, 0, false
		case r.Verdict != health.Up && r.Verdict != health.Down:
			continue // no checker: no node numbers
		}
		healthy += int(r.Healthy)
		total += int(r.Total)
	}
	return healthy, total, total > 0
}

// Below is what one poll says about a VIP's share against its threshold.
type Below int

const (
	BelowUnknown Below = iota // the share cannot be told: the tier is kept
	BelowNo                   // at or above the threshold
	BelowYes                  // below the threshold
)

// Belowness compares the share of v's nodes with v's threshold. A VIP
// whose tier is off is never below.
func Belowness(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) Below {
	if !v.Degraded.On() {
		return BelowNo
	}
	healthy, total, known := Share(v, snap, noChecker)
	if !known {
		return BelowUnknown
	}
	// healthy/total < below/100, in integers where it matters.
	if float64(healthy)*100 < float64(v.Degraded.Below)*float64(total) {
		return BelowYes
	}
	return BelowNo
}

// StepTier advances the tier of a VIP that Step has just moved from prev
// to next, and returns next with Degraded, TierStreak and Reason set.
//
//   - A withdrawn VIP is not degraded: the tier is moot, its run is reset.
//   - A VIP that Step has just announced takes its tier from this poll at
//     once (its rise run was the wait): an announce never goes to full
//     weight only to be degraded a few polls later. An unknown share
//     announces it at full weight.
//   - An announced VIP changes tier after a run of polls that disagree
//     with its tier: `fall` polls below the threshold degrade it, `rise`
//     polls at or above it restore it (a loss of capacity acts like a
//     loss of health, a recovery like one). A poll with an unknown share,
//     like an unknown poll, neither counts nor breaks the run.
func StepTier(v *config.VIP, prev, next State, below Below) State {
	if !next.Announced || !v.Degraded.On() {
		next.Degraded, next.TierStreak = false, 0
		return next
	}
	if !prev.Announced {
		next.Degraded, next.TierStreak = below == BelowYes, 0
		return degradedReason(next)
	}
	if below == BelowUnknown {
		return degradedReason(next)
	}
	want := below == BelowYes
	if want == prev.Degraded {
		next.TierStreak = 0
		return degradedReason(next)
	}
	next.TierStreak = prev.TierStreak + 1
	need := v.Rise
	if want {
		need = v.Fall
	}
	if next.TierStreak >= need {
		next.Degraded, next.TierStreak = want, 0
	}
	return degradedReason(next)
}

// degradedReason says "degraded" for a settled, healthy, degraded VIP.
func degradedReason(s State) State {
	if s.Degraded && s.Reason == ReasonHealthy {
		s.Reason = ReasonDegraded
	}
	return s
}
