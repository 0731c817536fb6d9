package decide

import (
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TickStates is Tick with the states in config order rather than keyed by
// prefix: states[i] is cfg.VIPs[i]'s, and states must have one entry per
// VIP. The daemon keeps its per-VIP state this way (a slice costs a third
// of a map's memory at 10,000 VIPs, issue 15). It decides exactly as Tick
// does (TestTickStatesIsTick): keep the two in step.
func TickStates(cfg *config.Config, snap health.Snapshot, states []State) []Change {
	var changes []Change
	for i := range cfg.VIPs {
		v := &cfg.VIPs[i]
		prev := states[i]
		next := Step(v, cfg.FailurePolicy, prev, Evaluate(v, snap, cfg.FailurePolicy.NoChecker))
		if next.Announced != prev.Announced || next.Reason != prev.Reason {
			changes = append(changes, Change{VIP: v.Address, From: prev, To: next})
		}
		states[i] = next
	}
	return changes
}
