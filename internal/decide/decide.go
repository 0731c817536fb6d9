// Package decide is rhi's pure core: from one poll's upstream verdicts and
// what it remembers of each VIP, it computes whether the VIP should be
// announced. It does no I/O and reads no clock, so every rule is
// table-tested.
package decide

import (
	"fmt"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// Availability is a VIP's verdict for one poll.
type Availability int

const (
	// Unknown: the poll could not settle the VIP (an upstream failed or was
	// not found and the others do not decide it).
	Unknown Availability = iota
	// Available: the VIP's condition holds.
	Available
	// Unavailable: the VIP's condition cannot hold.
	Unavailable
)

func (a Availability) String() string {
	switch a {
	case Available:
		return "available"
	case Unavailable:
		return "unavailable"
	default:
		return "unknown"
	}
}

// MarshalText makes availabilities readable in JSON.
func (a Availability) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Reason says why a VIP is in its state. The values are stable: they appear
// in logs, /status and metrics.
type Reason string

const (
	ReasonInitial        Reason = "initial"         // state taken from the interface at start-up
	ReasonHealthy        Reason = "healthy"         // condition holds
	ReasonUnhealthy      Reason = "unhealthy"       // condition cannot hold
	ReasonRising         Reason = "rising"          // healthy, waiting for rise polls
	ReasonFalling        Reason = "falling"         // unhealthy, waiting for fall polls
	ReasonUnknown        Reason = "unknown"         // unsettled poll, state kept
	ReasonPolicyWithdraw Reason = "policy_withdraw" // max_failed_polls reached, withdrawn
	ReasonPolicyAnnounce Reason = "policy_announce" // max_failed_polls reached, state kept
)

// State is what the decider remembers about one VIP between polls. The zero
// value is a withdrawn VIP with no history.
//
// The bools come first, together, so that no padding follows each: the
// loop keeps a State per VIP.
type State struct {
	Announced bool // whether the VIP should be on the interface (before drain)
	// Degraded says that an announced VIP is on the degraded interface
	// (StepTier); always false while withdrawn.
	Degraded bool
	Verdict  Availability // the last poll's verdict
	Reason   Reason
	// Streak counts the settled polls in a row whose verdict disagrees
	// with Announced; unknown polls between them neither count nor break
	// the run.
	Streak      int
	FailedPolls int // consecutive polls that did not settle the VIP
	// TierStreak counts the polls in a row whose share disagrees with
	// Degraded (StepTier).
	TierStreak int
}

// Initial is the state of a VIP at start-up: what the interface holds.
// Nothing changes until a poll settles it or the failure policy fires.
func Initial(present bool) State {
	return State{Announced: present, Reason: ReasonInitial}
}

// UpstreamState is how one upstream counts for a VIP.
type UpstreamState int

const (
	UpstreamFailed UpstreamState = iota // could not be read, or not found
	UpstreamUp
	UpstreamDown
)

// Classify maps an upstream's poll result to how it counts: no checker counts
// as noChecker says; not found counts as failed, so an APISIX that is still
// loading does not flap routes.
func Classify(r health.Result, noChecker config.CountAs) UpstreamState {
	switch r.Verdict {
	case health.Up:
		return UpstreamUp
	case health.Down:
		return UpstreamDown
	case health.NoChecker:
		if noChecker == config.CountUnhealthy {
			return UpstreamDown
		}
		return UpstreamUp
	default:
		return UpstreamFailed
	}
}

// Evaluate applies a VIP's condition over its upstreams' results, each
// judged against its capacity threshold (ClassifyUpstream). An upstream
// missing from the snapshot counts as failed.
func Evaluate(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) Availability {
	var up, down, failed int
	for i := range v.Upstreams {
		r, ok := snap[v.Upstreams[i].Key]
		if !ok {
			failed++
			continue
		}
		switch ClassifyUpstream(&v.Upstreams[i], r, noChecker) {
		case UpstreamUp:
			up++
		case UpstreamDown:
			down++
		default:
			failed++
		}
	}
	if v.Condition == config.Any {
		switch {
		case up > 0:
			return Available
		case failed == 0:
			return Unavailable
		}
		return Unknown
	}
	switch {
	case down > 0:
		return Unavailable
	case failed == 0:
		return Available
	}
	return Unknown
}

// Step advances one VIP by one poll. It is pure: the same inputs give the
// same state.
//
// An unknown poll keeps the VIP's state and counts as failed; it
// neither counts towards a rise/fall run nor breaks one. Breaking it would
// let a control API that fails every other poll hide a dead backend for
// ever: with fall 2, "unavailable, unknown, unavailable, unknown, …" would
// never withdraw, nor would max_failed_polls ever be reached, since each
// settled poll ends the failed run.
func Step(v *config.VIP, policy config.FailurePolicy, prev State, verdict Availability) State {
	next := prev
	next.Verdict = verdict
	if verdict == Unknown {
		next.FailedPolls++
		next.Reason = ReasonUnknown
		if next.FailedPolls >= policy.MaxFailedPolls {
			if policy.ControlAPIUnreachable == config.Withdraw {
				if next.Announced {
					next.Streak = 0 // a run towards "withdrawn" is moot now
				}
				next.Announced = false
				next.Reason = ReasonPolicyWithdraw
			} else {
				next.Reason = ReasonPolicyAnnounce
			}
		}
		return next
	}
	next.FailedPolls = 0
	want := verdict == Available
	if want == prev.Announced {
		next.Streak = 0
		next.Reason = settledReason(want)
		return next
	}
	next.Streak++
	need := v.Fall
	if want {
		need = v.Rise
	}
	if next.Streak >= need {
		next.Announced = want
		next.Streak = 0
		next.Reason = settledReason(want)
		return next
	}
	if want {
		next.Reason = ReasonRising
	} else {
		next.Reason = ReasonFalling
	}
	return next
}

func settledReason(available bool) Reason {
	if available {
		return ReasonHealthy
	}
	return ReasonUnhealthy
}

// UnmarshalText reads what MarshalText writes (for `rhi status`, which reads
// the daemon's JSON).
func (a *Availability) UnmarshalText(b []byte) error {
	switch string(b) {
	case "available":
		*a = Available
	case "unavailable":
		*a = Unavailable
	case "unknown":
		*a = Unknown
	default:
		return fmt.Errorf("unknown availability %q", b)
	}
	return nil
}
