package decide

import (
	"net/netip"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// Change records a VIP whose state changed in a way worth a log line: its
// announcement, its tier, or its reason.
type Change struct {
	VIP  netip.Prefix
	From State
	To   State
}

// Tick advances every VIP of cfg by one poll, updating states in place. A VIP
// missing from states starts from the zero State (withdrawn); callers seed new
// VIPs with Initial first. It returns the changes of Announced or Reason, in
// config order.
func Tick(cfg *config.Config, snap health.Snapshot, states map[netip.Prefix]State) []Change {
	var changes []Change
	for i := range cfg.VIPs {
		v := &cfg.VIPs[i]
		prev := states[v.Address]
		next := Step(v, cfg.FailurePolicy, prev, Evaluate(v, snap, cfg.FailurePolicy.NoChecker))
		next = StepTier(v, prev, next, Belowness(v, snap, cfg.FailurePolicy.NoChecker))
		if next.Announced != prev.Announced || next.Reason != prev.Reason || next.Degraded != prev.Degraded {
			changes = append(changes, Change{VIP: v.Address, From: prev, To: next})
		}
		states[v.Address] = next
	}
	return changes
}
