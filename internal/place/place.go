// Package place decides where each VIP goes on the ladder of tiers: full
// (the main interface), degraded, last resort, or withdrawn. It is the one
// place that combines what health decided, an operator's drain, the
// fail-open guard's verdict and the daemon's phase; applying, BIRD's
// confirmation, /status, metrics, logs and `rhi verify` all read its
// result. It does no I/O and reads no clock (docs/semantics.md, "Fail-open
// guard").
package place

import (
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/guard"
)

// Phase is the daemon's phase.
type Phase int

const (
	// Running: the usual phase; with the guard on, BIRD has answered it
	// at least once since start-up.
	Running Phase = iota
	// Starting: the guard is on and BIRD has not answered it yet since
	// start-up.
	Starting
	// Stopping: the daemon is withdrawing every VIP (on_shutdown:
	// withdraw).
	Stopping
)

func (p Phase) String() string {
	switch p {
	case Starting:
		return "starting"
	case Stopping:
		return "stopping"
	}
	return "running"
}

// Input is what placement knows of one VIP.
type Input struct {
	// Health is what health decided (package decide): Announced and
	// Degraded give its tier, Reason why.
	Health  decide.State
	Drained bool // an operator drained it
	// FailOpen says that the fail-open guard is on (fail_open).
	FailOpen bool
	// Guard is the guard's verdict on the other sites serving it.
	Guard guard.Verdict
	// LastResort says that the last-resort tier is available: its
	// interface exists.
	LastResort bool
	// Current is where the VIP is now, as the interfaces hold it.
	Current decide.Tier
	Phase   Phase
	// Grace says that the VIP's drain, or the daemon's stop, is still in
	// its drain_grace: a VIP that would be announced steps down to last
	// resort instead of being withdrawn at once.
	Grace bool
}

// Placement is where a VIP goes, and why.
type Placement struct {
	Tier   decide.Tier
	Reason decide.Reason
}

// The reasons of placements that do not follow health's own. Values are
// stable: they appear in logs, /status and metrics.
const (
	ReasonDrained  decide.Reason = "drained"  // an operator drained it
	ReasonStopping decide.Reason = "stopping" // the daemon is withdrawing everything
	// ReasonDraining: an operator drained it, and it stays in last resort
	// for its drain_grace before it is withdrawn (ReasonDrained). A VIP
	// in last resort while the daemon stops has ReasonStopping.
	ReasonDraining decide.Reason = "draining"
	// ReasonOthersServing: health fails, and enough other sites served
	// it in every answer for hold: withdrawn.
	ReasonOthersServing decide.Reason = "others_serving"
	// ReasonFailOpen: health fails and too few other sites serve it: kept
	// in last resort.
	ReasonFailOpen decide.Reason = "fail_open"
	// ReasonGuardUnknown: health fails and the guard cannot tell whether
	// other sites serve it: kept in last resort.
	ReasonGuardUnknown decide.Reason = "fail_open_unknown"
	// ReasonStarting: health fails just after a start-up, before the
	// guard's first answer, and the VIP was announced when rhi started:
	// kept in last resort.
	ReasonStarting decide.Reason = "fail_open_starting"
	// ReasonNoLastResort: it should be in last resort but that tier's
	// interface is missing: kept where it is rather than withdrawn.
	ReasonNoLastResort decide.Reason = "no_last_resort"
)

// Place is where in's VIP goes. The rules, first match wins:
//
//  1. stopping or drained: withdrawn; but during the grace (Grace) a VIP
//     that is on an interface and that the other rules would keep
//     announced steps down to last resort, if that tier is available
//     (health that fails still withdraws at once: nothing is left to
//     serve the packets a grace would save);
//  2. health announces it: full or degraded, as health says;
//  3. the guard is off: withdrawn (health's reason);
//  4. the guard has seen enough serving other sites for hold: withdrawn;
//  5. starting, and not announced when rhi started: withdrawn (a restart
//     adds no announcement before the guard has looked);
//  6. otherwise last resort; or, while that tier is unavailable, where it
//     is now (withdrawing the last announcement of a VIP is the outage the
//     guard exists to prevent; promoting it is never done either, since it
//     stays on the interface it is on).
//
// So with the guard on, a VIP whose health fails is withdrawn only on the
// guard's positive word, never on an unknown view.
//
// Place reads in and changes nothing; it takes a pointer because the
// daemon places every VIP on every tick, and Input is a hundred bytes.
func Place(in *Input) Placement {
	switch {
	case in.Phase == Stopping:
		return stepDown(in, ReasonStopping, ReasonStopping)
	case in.Drained:
		return stepDown(in, ReasonDraining, ReasonDrained)
	case in.Health.Announced:
		return Placement{in.Health.Tier(), in.Health.Reason}
	case !in.FailOpen:
		return Placement{decide.TierWithdrawn, in.Health.Reason}
	case in.Guard == guard.Enough:
		return Placement{decide.TierWithdrawn, ReasonOthersServing}
	case in.Phase == Starting && in.Current == decide.TierWithdrawn:
		return Placement{decide.TierWithdrawn, in.Health.Reason}
	}
	why := ReasonFailOpen
	switch {
	case in.Phase == Starting:
		why = ReasonStarting
	case in.Guard == guard.Unknown:
		why = ReasonGuardUnknown
	}
	if !in.LastResort {
		return Placement{in.Current, ReasonNoLastResort}
	}
	return Placement{decide.TierLastResort, why}
}

// stepDown places a VIP that is drained or whose daemon stops: in last
// resort (reason during) while its grace lasts, if it is on an interface,
// the tier is available and the VIP would be announced without the drain
// or stop; withdrawn (reason after) otherwise.
func stepDown(in *Input, during, after decide.Reason) Placement {
	if !in.Grace || !in.LastResort || in.Current == decide.TierWithdrawn {
		return Placement{decide.TierWithdrawn, after}
	}
	rest := *in
	rest.Drained, rest.Grace = false, false
	if rest.Phase == Stopping {
		rest.Phase = Running
	}
	if !Place(&rest).Tier.Present() {
		return Placement{decide.TierWithdrawn, after}
	}
	return Placement{decide.TierLastResort, during}
}
