package vip

import (
	"context"
	"errors"
	"maps"
	"net/netip"
)

// Place is where a VIP should be on the ladder of tiers: on no interface,
// on the main one (full weight), on the degraded one, or on the
// last-resort one.
type Place int

const (
	Off Place = iota
	Main
	Degraded
	LastResort
)

// rungs is the number of interfaces of a Ladder: Main, Degraded,
// LastResort, at rung Place-1.
const rungs = 3

// Setter is the part of an Announcer that MoveSet needs: the daemon's
// announcers, real or dry-run, and test fakes satisfy it.
type Setter interface {
	Set(ctx context.Context, owned map[netip.Prefix]bool) (State, error)
}

// Ladder is the interfaces of the tiers and what their previous Sets left
// on them. A VIP lives on one of them; MoveSet moves it from one to
// another by adding it to the new one before deleting it from the old
// one, so the prefix never leaves BIRD's table (tiers.conf gives each
// lower tier's protocol the higher preference, so while a VIP is on two
// interfaces BIRD exports it at the lower tier).
type Ladder struct {
	// Main and Degraded must be set; a nil LastResort manages no
	// last-resort interface (a VIP is then never placed there).
	Main, Degraded, LastResort Setter
	// Last is what the previous MoveSet left on each interface, by rung
	// (Place-1): the zero State before the first, or from Observe at
	// start-up.
	Last [rungs]State

	first, second [rungs]map[netip.Prefix]bool // reused by every MoveSet
}

// Moved is what a MoveSet left on each interface and the error of each,
// by rung (Place-1).
type Moved struct {
	State [rungs]State
	Err   [rungs]error
}

// scratch returns m cleared, or a new map.
func scratch(m map[netip.Prefix]bool, n int) map[netip.Prefix]bool {
	if m == nil {
		return make(map[netip.Prefix]bool, n)
	}
	clear(m)
	return m
}

func (l *Ladder) setters() [rungs]Setter { return [rungs]Setter{l.Main, l.Degraded, l.LastResort} }

// MoveSet sets every interface to want, which maps every VIP rhi owns to
// its place. In order:
//
//  1. each interface, the lowest tier first, gets the VIPs that belong
//     there, and keeps those moving elsewhere that their new interface
//     does not hold yet (as its Set, if done, or its last one says);
//     while the degraded interface does not exist, main also gets the
//     degraded VIPs: an available VIP is announced at full weight rather
//     than not at all;
//  2. only where step 1 kept a moving VIP, and its new interface now
//     holds it, the old one is set again, deleting it.
//
// So a VIP is never deleted from its old interface before it is on the
// new one, and never added to an interface it does not belong on; a move
// costs two or three Sets, and a tick that moves nothing costs one Set per
// interface.
func (l *Ladder) MoveSet(ctx context.Context, want map[netip.Prefix]Place) Moved {
	var m Moved
	sets := l.setters()
	var done [rungs]bool
	view := func(r int) State { // what rung r holds, as far as is known now
		if done[r] {
			return known(m.State[r], m.Err[r], l.Last[r])
		}
		return l.Last[r]
	}
	noDeg := func() bool { return done[1] && errors.Is(m.Err[1], ErrNoInterface) }
	// held reports whether v, placed at pl, is on its new interface (or,
	// for a degraded VIP without a degraded interface, on main).
	held := func(v netip.Prefix, pl Place) bool {
		t := int(pl) - 1
		if sets[t] == nil {
			return false
		}
		return view(t).Has(v) || (pl == Degraded && noDeg() && view(0).Has(v))
	}
	for r := rungs - 1; r >= 0; r-- {
		if sets[r] == nil {
			continue
		}
		own := Place(r + 1)
		first := scratch(l.first[r], len(want))
		l.first[r] = first
		for v, pl := range want {
			moving := pl != Off && pl != own && l.Last[r].Has(v) && !held(v, pl)
			first[v] = pl == own || moving || (own == Main && pl == Degraded && noDeg())
		}
		m.State[r], m.Err[r] = sets[r].Set(ctx, first)
		done[r] = true
	}
	for r := rungs - 1; r >= 0; r-- {
		if sets[r] == nil {
			continue
		}
		own := Place(r + 1)
		second := scratch(l.second[r], len(want))
		l.second[r] = second
		here := view(r)
		for v, pl := range want {
			second[v] = pl == own || (own == Main && pl == Degraded && noDeg()) ||
				(l.first[r][v] && pl != Off && here.Has(v) && !held(v, pl))
		}
		if !maps.Equal(l.first[r], second) {
			m.State[r], m.Err[r] = sets[r].Set(ctx, second)
		}
	}
	for r := range rungs {
		if sets[r] != nil {
			l.Last[r] = known(m.State[r], m.Err[r], l.Last[r])
		}
	}
	return m
}

// known is what a Set says an interface holds: st, or last when the Set
// could not read the interface at all (an unread interface may hold
// anything, so nothing is deleted on its word).
func known(st State, err error, last State) State {
	if err != nil && !st.Exists && !errors.Is(err, ErrNoInterface) {
		return last
	}
	return st
}
