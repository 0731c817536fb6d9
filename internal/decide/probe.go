package decide

import (
	"net/netip"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// Probe is what a VIP's data-path probe said in one poll, in
// words the pure core can hold: package probe sends the request and the
// daemon translates its outcome.
type Probe int

const (
	NoProbe          Probe = iota // the VIP has no probe
	ProbeUp                       // an expected status came back
	ProbeDown                     // an answer the data plane cannot serve: an unexpected status, a TLS failure
	ProbeUnreachable              // nothing answered in time: a failed poll for the VIP
)

var probeNames = [...]string{NoProbe: "none", ProbeUp: "up", ProbeDown: "down", ProbeUnreachable: "unreachable"}

func (p Probe) String() string {
	if p >= 0 && int(p) < len(probeNames) {
		return probeNames[p]
	}
	return "unknown"
}

// WithProbe combines a VIP's condition over its upstreams with its probe:
// the VIP is available only when both hold. A probe that is down is an
// answer, so the VIP is unavailable whatever the upstreams say; one that
// is unreachable leaves the VIP unknown (a failed poll, failure_policy
// applies) unless the upstreams already make it unavailable.
func WithProbe(a Availability, p Probe) Availability {
	switch {
	case p == NoProbe || p == ProbeUp:
		return a
	case p == ProbeDown || a == Unavailable:
		return Unavailable
	}
	return Unknown
}

// TickProbed is Tick with each VIP's probe: probes[i] is what the probe of
// cfg.VIPs[i] said; a nil or short slice means no probe. A change's Detail
// names a probe that is not up after the upstreams.
func TickProbed(cfg *config.Config, snap health.Snapshot, probes []Probe, states map[netip.Prefix]State) []Change {
	var changes []Change
	for i := range cfg.VIPs {
		p := cfg.VIPs[i].Address
		next, c, changed := stepVIP(cfg, i, snap, probes, states[p])
		if changed {
			changes = append(changes, c)
		}
		states[p] = next
	}
	return changes
}

// explainProbed is Explain, followed by the probe when it is not up.
func explainProbed(v *config.VIP, snap health.Snapshot, noChecker config.CountAs, pr Probe) string {
	d := Explain(v, snap, noChecker)
	if pr != ProbeDown && pr != ProbeUnreachable {
		return d
	}
	if d != "" {
		d += "; "
	}
	return d + "probe: " + pr.String()
}
