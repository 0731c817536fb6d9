package vip

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// Desired is what Set is to make an interface hold of the VIPs rhi owns:
// Present those to be on it, Absent those rhi owns that must not be (they
// are deleted if there). Each list is sorted by netip.Prefix.Compare
// without repeats, and no prefix is in both. Addresses in neither are not
// rhi's and are never touched.
//
// The lists are the caller's: Set reads them and keeps nothing of them,
// so the caller may refill the same storage for the next Set.
type Desired struct {
	Present, Absent []netip.Prefix
}

// DesiredOf is the Desired of owned, which maps every VIP rhi owns to
// whether it should be present.
func DesiredOf(owned map[netip.Prefix]bool) Desired {
	var d Desired
	for _, p := range slices.SortedFunc(maps.Keys(owned), netip.Prefix.Compare) {
		if owned[p] {
			d.Present = append(d.Present, p)
		} else {
			d.Absent = append(d.Absent, p)
		}
	}
	return d
}

// Len is the number of VIPs d owns.
func (d Desired) Len() int { return len(d.Present) + len(d.Absent) }

// Want reports whether d owns p, and whether it wants p present.
func (d Desired) Want(p netip.Prefix) (want, owned bool) {
	if _, ok := slices.BinarySearchFunc(d.Present, p, compareHosts); ok {
		return true, true
	}
	_, ok := slices.BinarySearchFunc(d.Absent, p, compareHosts)
	return false, ok
}

// check reports how d breaks its contract: a list out of order or with a
// repeat, or a prefix in both.
func (d Desired) check() error {
	for _, l := range []struct {
		name string
		ps   []netip.Prefix
	}{{"present", d.Present}, {"absent", d.Absent}} {
		for i := 1; i < len(l.ps); i++ {
			if compareHosts(l.ps[i-1], l.ps[i]) >= 0 {
				return fmt.Errorf("desired %s VIPs not sorted without repeats: %q before %q", l.name, l.ps[i-1], l.ps[i])
			}
		}
	}
	var both error
	eachCommon(d.Present, d.Absent, func(p netip.Prefix) {
		if both == nil {
			both = fmt.Errorf("vip %q desired both present and absent", p)
		}
	})
	return both
}

// eachCommon calls f, in order, with every prefix that is in both a and b,
// which must be sorted by netip.Prefix.Compare without repeats.
func eachCommon(a, b []netip.Prefix, f func(netip.Prefix)) {
	for len(a) > 0 && len(b) > 0 {
		switch c := compareHosts(a[0], b[0]); {
		case c < 0:
			a = a[1:]
		case c > 0:
			b = b[1:]
		default:
			f(a[0])
			a, b = a[1:], b[1:]
		}
	}
}
