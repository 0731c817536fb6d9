package decide

import (
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TickStates is TickProbed with the states in config order rather than
// keyed by prefix: states[i] is cfg.VIPs[i]'s, and states must have one
// entry per VIP. The daemon keeps its per-VIP state this way (a slice
// costs a third of a map's memory at 10,000 VIPs). It decides
// exactly as Tick does (TestTickStatesIsTick): both go through stepVIP.
func TickStates(cfg *config.Config, snap health.Snapshot, probes []Probe, states []State) []Change {
	var changes []Change
	for i := range cfg.VIPs {
		next, c, changed := stepVIP(cfg, i, snap, probes, states[i])
		if changed {
			changes = append(changes, c)
		}
		states[i] = next
	}
	return changes
}

// stepVIP is one VIP's step of a tick: cfg.VIPs[i] from prev, with the
// poll's snapshot and its probe (probes[i], or none): health, the probe,
// rise/fall, the failure policy and the degraded tier. changed reports a
// change of Announced, Reason or tier, described by c.
func stepVIP(cfg *config.Config, i int, snap health.Snapshot, probes []Probe, prev State) (next State, c Change, changed bool) {
	v := &cfg.VIPs[i]
	pr := NoProbe
	if i < len(probes) {
		pr = probes[i]
	}
	next = Step(v, cfg.FailurePolicy, prev, WithProbe(Evaluate(v, snap, cfg.FailurePolicy.NoChecker), pr))
	next = StepTier(v, prev, next, Belowness(v, snap, cfg.FailurePolicy.NoChecker))
	if next.Announced == prev.Announced && next.Reason == prev.Reason && next.Degraded == prev.Degraded {
		return next, Change{}, false
	}
	return next, Change{VIP: v.Address, From: prev, To: next, Detail: explainProbed(v, snap, cfg.FailurePolicy.NoChecker, pr)}, true
}
