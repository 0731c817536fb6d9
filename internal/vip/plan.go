package vip

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/rhi-daemon/rhi/internal/health"
)

// op is one address change.
type op struct {
	p      netip.Prefix
	add    bool
	repair bool // the address was changed by someone else since the previous Set
}

// sighting is an owned VIP whose presence on the interface is news: the
// previous Set did not own it, or left it the other way.
type sighting struct {
	p       netip.Prefix
	present bool
	byOther bool // the previous Set left it the other way: someone else changed it
}

// changes is what plan finds it takes to bring the interface to the owned
// set.
type changes struct {
	// adds and dels are the writes, each sorted by prefix. Set makes the
	// adds first, so that a VIP moving between configurations never leaves
	// a gap.
	adds, dels []op
	// sightings lists the owned VIPs whose presence is news (all of them
	// when there was no previous Set).
	sightings []sighting
	// errs holds one error per owned VIP that cannot be set: not a host
	// prefix, or an IPv6 address the interface holds otherwise (dropTaken).
	errs []error
	// foreign lists, unsorted, the addresses on the interface not owned.
	foreign []netip.Prefix
	// hosts counts the owned host prefixes, present those of them that are
	// on the interface.
	hosts, present int
}

// plan compares what the interface named iface holds, addrs and the
// point-to-point entries peers, with want (see Desired). reached says, for each
// VIP the previous Set owned, whether that Set left it present (nil: no
// previous Set); it only tells changes by someone else from news.
//
// plan is pure: it does no I/O and changes none of its arguments. Set makes
// the changes it returns; DryRun logs them. It builds nothing per VIP
// unless there is something to say about it.
func plan(iface string, addrs map[netip.Prefix]struct{}, peers []Peer, want Desired, reached map[netip.Prefix]bool) changes {
	var c changes
	for _, p := range want.Present {
		c.planOne(p, true, addrs, reached)
	}
	for _, p := range want.Absent {
		c.planOne(p, false, addrs, reached)
	}
	if c.present < len(addrs) { // else every address is an owned VIP
		for p := range addrs {
			if _, ok := want.Want(p); !ok || !isHost(p) {
				c.foreign = append(c.foreign, p)
			}
		}
	}
	// adds and dels are sorted: each came from a sorted list of want.
	c.adds = dropTaken(iface, c.adds, c.foreign, peers, &c.errs)
	return c
}

// planOne is plan's step for p, an owned VIP wanted present or not.
func (c *changes) planOne(p netip.Prefix, want bool, addrs map[netip.Prefix]struct{}, reached map[netip.Prefix]bool) {
	if !isHost(p) {
		c.errs = append(c.errs, fmt.Errorf("vip %q: not a /32 or /128 host prefix", p))
		return
	}
	c.hosts++
	_, have := addrs[p]
	if have {
		c.present++
	}
	prev, known := reached[p]
	byOther := known && prev != have
	if !known || byOther {
		c.sightings = append(c.sightings, sighting{p: p, present: have, byOther: byOther})
	}
	switch {
	case want && !have:
		c.adds = append(c.adds, op{p: p, add: true, repair: byOther})
	case !want && have:
		c.dels = append(c.dels, op{p: p, repair: byOther})
	}
}

// dropTaken takes out of adds the IPv6 VIPs whose address is already on the
// interface with another prefix length (2001:db8::1/64 for 2001:db8::1/128)
// or as the local end of a point-to-point entry, adding an error for each.
// The kernel holds an IPv6 address once whatever its length or peer, so the
// add would fail with EEXIST, be taken for success, and BIRD would go on
// announcing the other prefix: a conflict an operator must hear about on
// every tick. foreign holds the addresses not owned. (IPv4 has no such
// conflict: 10.9.0.1/32 and 10.9.0.1 peer 10.9.0.2/32 are two entries.)
func dropTaken(iface string, adds []op, foreign []netip.Prefix, peers []Peer, errs *[]error) []op {
	if !slices.ContainsFunc(adds, func(o op) bool { return o.p.Addr().Is6() }) {
		return adds
	}
	taken := map[netip.Addr]fmt.Stringer{}
	for _, q := range foreign {
		if q.Addr().Is6() {
			taken[q.Addr()] = q
		}
	}
	for _, q := range peers {
		if q.Local.Is6() {
			taken[q.Local] = q
		}
	}
	return slices.DeleteFunc(adds, func(o op) bool {
		q, ok := taken[o.p.Addr()]
		if ok {
			*errs = append(*errs, fmt.Errorf("vip %q: add on %q: the address is already there as %q", o.p, iface, q))
		}
		return ok
	})
}

// isHost reports whether p is a VIP rhi can manage: a host prefix (a /32
// or a /128, health.IsHost) that is not an IPv4-mapped IPv6 address.
func isHost(p netip.Prefix) bool {
	return health.IsHost(p) && !p.Addr().Is4In6()
}
