package vip

import (
	"context"
	"errors"
	"maps"
	"net/netip"
)

// Place is where a VIP should be with the degraded tier (issue 14): on
// neither interface, on the main one (full weight), or on the degraded one.
type Place int

const (
	Off Place = iota
	Main
	Degraded
)

// Setter is the part of an Announcer that MoveSet needs: the daemon's
// announcers, real or dry-run, and test fakes satisfy it.
type Setter interface {
	Set(ctx context.Context, owned map[netip.Prefix]bool) (State, error)
}

// Pair is the two interfaces of the degraded tier and what their previous
// Sets left on them. A VIP lives on one of them; MoveSet moves it from one
// to the other by adding it to the new one before deleting it from the old
// one, so the prefix never leaves BIRD's table (tiers.conf gives the
// degraded interface the higher preference, so while a VIP is on both
// BIRD exports it degraded).
type Pair struct {
	Main, Degraded Setter
	// LastMain and LastDegraded are what the previous MoveSet left on each
	// (the zero State before the first, or from Observe at start-up).
	LastMain, LastDegraded State

	degA, mainB, degB map[netip.Prefix]bool // reused by every MoveSet
}

// scratch returns m cleared, or a new map.
func scratch(m map[netip.Prefix]bool, n int) map[netip.Prefix]bool {
	if m == nil {
		return make(map[netip.Prefix]bool, n)
	}
	clear(m)
	return m
}

// MoveSet sets both interfaces to want, which maps every VIP rhi owns to
// its place. In order:
//
//  1. the degraded interface gets the VIPs that belong there, and keeps
//     those moving to main that main does not hold yet;
//  2. main gets the VIPs that belong there, and keeps those moving to the
//     degraded interface that step 1 could not put there (a failed add, a
//     missing interface): a VIP is never deleted from its old interface
//     before it is on the new one. While the degraded interface does not
//     exist, main also gets the degraded VIPs: an available VIP is
//     announced at full weight rather than not at all;
//  3. only if step 2 changed what step 1 had to keep, the degraded
//     interface is set again, deleting the VIPs now on main.
//
// So a move down costs two Sets and a move up three; a tick that moves
// nothing costs one Set per interface. A VIP is never added to an
// interface it does not belong on. The errors are each Set's (the
// degraded one's last).
func (p *Pair) MoveSet(ctx context.Context, want map[netip.Prefix]Place) (main, deg State, mainErr, degErr error) {
	p.degA, p.mainB, p.degB = scratch(p.degA, len(want)), scratch(p.mainB, len(want)), scratch(p.degB, len(want))
	degA, mainB, degB := p.degA, p.mainB, p.degB
	for v, pl := range want {
		degA[v] = pl == Degraded || (pl == Main && p.LastDegraded.Has(v) && !p.LastMain.Has(v))
	}
	deg, degErr = p.Degraded.Set(ctx, degA)
	// Without a degraded interface at all, a degraded VIP is announced at
	// full weight rather than not at all: it is available.
	noDeg := errors.Is(degErr, ErrNoInterface)
	for v, pl := range want {
		mainB[v] = pl == Main || (pl == Degraded && !deg.Has(v) && (noDeg || p.LastMain.Has(v)))
	}
	main, mainErr = p.Main.Set(ctx, mainB)
	mainView := known(main, mainErr, p.LastMain)
	// An unread degraded interface still holds what it held: a VIP that
	// main could not take stays there.
	degView := known(deg, degErr, p.LastDegraded)
	for v, pl := range want {
		degB[v] = pl == Degraded || (pl == Main && !mainView.Has(v) && degView.Has(v))
	}
	if !maps.Equal(degA, degB) {
		deg, degErr = p.Degraded.Set(ctx, degB)
	}
	p.LastMain, p.LastDegraded = mainView, known(deg, degErr, p.LastDegraded)
	return main, deg, mainErr, degErr
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
