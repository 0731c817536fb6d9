package vip

import (
	"context"
	"errors"
	"net/netip"
	"slices"
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
	Set(ctx context.Context, want Desired) (State, error)
}

// Placed is a VIP rhi owns and where it should be.
type Placed struct {
	Prefix netip.Prefix
	Place  Place
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

	// Reused by every MoveSet: per rung, whether each VIP of want is
	// wanted there in the first and the second step, and the Desired
	// built from it.
	first, second [rungs][]bool
	desired       [rungs]Desired
}

// Moved is what a MoveSet left on each interface and the error of each,
// by rung (Place-1).
type Moved struct {
	State [rungs]State
	Err   [rungs]error
}

// desiredOf fills into, reusing its lists, with the VIPs of want, each
// present on rung r if on[k] says so.
func desiredOf(want []Placed, on []bool, into Desired) Desired {
	into.Present, into.Absent = into.Present[:0], into.Absent[:0]
	for k := range want {
		if on[k] {
			into.Present = append(into.Present, want[k].Prefix)
		} else {
			into.Absent = append(into.Absent, want[k].Prefix)
		}
	}
	return into
}

func (l *Ladder) setters() [rungs]Setter { return [rungs]Setter{l.Main, l.Degraded, l.LastResort} }

// MoveSet sets every interface to want, which lists every VIP rhi owns
// with its place, sorted by prefix without repeats (as Desired's lists
// are). In order:
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
func (l *Ladder) MoveSet(ctx context.Context, want []Placed) Moved {
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
		first := slices.Grow(l.first[r][:0], len(want))[:len(want)]
		l.first[r] = first
		for k, w := range want {
			v, pl := w.Prefix, w.Place
			moving := pl != Off && pl != own && l.Last[r].Has(v) && !held(v, pl)
			first[k] = pl == own || moving || (own == Main && pl == Degraded && noDeg())
		}
		l.desired[r] = desiredOf(want, first, l.desired[r])
		m.State[r], m.Err[r] = sets[r].Set(ctx, l.desired[r])
		done[r] = true
	}
	for r := rungs - 1; r >= 0; r-- {
		if sets[r] == nil {
			continue
		}
		own := Place(r + 1)
		second := slices.Grow(l.second[r][:0], len(want))[:len(want)]
		l.second[r] = second
		here := view(r)
		for k, w := range want {
			v, pl := w.Prefix, w.Place
			second[k] = pl == own || (own == Main && pl == Degraded && noDeg()) ||
				(l.first[r][k] && pl != Off && here.Has(v) && !held(v, pl))
		}
		if !slices.Equal(l.first[r], second) {
			l.desired[r] = desiredOf(want, second, l.desired[r])
			m.State[r], m.Err[r] = sets[r].Set(ctx, l.desired[r])
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
