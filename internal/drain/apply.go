package drain

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// Op is what `rhi drain` or `rhi undrain` asks of the drain set.
type Op struct {
	Drain bool // drain (true) or undrain the targets
	All   bool // the targets are every configured VIP (--all)
}

// Targets reads the VIPs an operator named (args, as the config writes
// them), or, for op.All, returns every configured VIP. A name that is not a
// host prefix or not a configured VIP is an error that quotes it.
func Targets(op Op, args []string, configured []netip.Prefix) ([]netip.Prefix, error) {
	if op.All {
		return slices.Clone(configured), nil
	}
	var targets []netip.Prefix
	for _, a := range args {
		p, err := ParsePrefix(a)
		if err != nil || !slices.Contains(configured, p) {
			return nil, fmt.Errorf("%q is not a VIP", a)
		}
		targets = append(targets, p)
	}
	return targets, nil
}

// Apply returns s changed as op asks for targets; s itself is left as it
// was. configured lists every VIP of the configuration: undraining some
// VIPs out of "all" spells out the others, so that they stay drained.
//
// Draining every VIP sets "all" and keeps the VIPs listed (so that an
// undrain of all clears both); undraining every VIP empties the set.
func (s Set) Apply(op Op, targets, configured []netip.Prefix) Set {
	out := Set{All: s.All, VIPs: maps.Clone(s.VIPs)}
	if out.VIPs == nil {
		out.VIPs = map[netip.Prefix]bool{}
	}
	switch {
	case op.Drain && op.All:
		out.All = true
	case op.Drain:
		for _, p := range targets {
			out.VIPs[p] = true
		}
	case op.All:
		out = Set{VIPs: map[netip.Prefix]bool{}}
	default:
		if out.All {
			// "all" minus these: spell out the others, so they stay drained.
			out.All = false
			for _, p := range configured {
				out.VIPs[p] = true
			}
		}
		for _, p := range targets {
			delete(out.VIPs, p)
		}
	}
	return out
}
