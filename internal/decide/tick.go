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
	// Detail names the upstreams that do not count as up, with their
	// node counts and thresholds (Explain); "" when all are up.
	Detail string
}

// Tick advances every VIP of cfg by one poll, updating states in place. A VIP
// missing from states starts from the zero State (withdrawn); callers seed new
// VIPs with Initial first. It returns the changes of Announced or Reason, in
// config order.
func Tick(cfg *config.Config, snap health.Snapshot, states map[netip.Prefix]State) []Change {
	return TickProbed(cfg, snap, nil, states)
}
