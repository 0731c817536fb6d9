// Package guard is the fail-open guard's memory: from BIRD's answers about
// which other sites serve each VIP, it keeps, per VIP, the current run of
// answers that showed at least min_other_sites of them, and says whether
// that run has lasted long enough to let this site withdraw a VIP whose
// health fails (docs/semantics.md, "Fail-open guard"). It does no I/O and
// reads no clock: the daemon asks BIRD, stamps each answer with its time,
// and placement (package place) decides the tier from the verdict.
//
// The run is measured between answers, never against "now": an answer
// taken again (the same time, or an older one) proves nothing and breaks
// nothing, so one answer followed by silence can never complete a run.
// An answer that cannot tell, for the whole view or one VIP, breaks it.
//
// The run may start before this site's health failed, so that with healthy
// sites elsewhere the withdrawal is prompt; but two of its answers at least
// must have been taken after the failure. The first answer after it may
// still show a site that failed in the same moment, before that site's
// move to last resort reached this host's router; the second, a round of
// the guard later, shows it unless BGP takes longer than that round to
// carry it. Without this, every site of a fleet that fails at once would
// see the others still serving and withdraw: the gap the guard prevents.
package guard

import (
	"errors"
	"net/netip"
	"time"
)

// View is one round of BIRD's answers: for each VIP asked, the distinct
// site ids of the other sites with a serving path (not last resort) in
// this host's guard table. A VIP in neither map, or any VIP while Err is
// set, is unknown: never "nobody".
type View struct {
	At      time.Time                 // when the round ended, by the daemon's clock
	Err     error                     // the whole round is unknown
	Serving map[netip.Prefix][]uint32 // per VIP asked: the serving other sites; empty: none
	Unknown map[netip.Prefix]error    // VIPs whose routes could not be read or attributed
}

// ErrNotAnswered is the error of a VIP that a view neither answers nor
// says it could not read: not asked, or the round was cut short.
var ErrNotAnswered = errors.New("BIRD's answer does not cover this VIP")

// Of is what v says of p: how many other sites serve it, or why v cannot
// tell.
func (v *View) Of(p netip.Prefix) (sites int, err error) {
	if v.Err != nil {
		return 0, v.Err
	}
	if err := v.Unknown[p]; err != nil {
		return 0, err
	}
	s, ok := v.Serving[p]
	if !ok {
		return 0, ErrNotAnswered
	}
	return len(s), nil
}

// Verdict is what the guard says of one VIP.
type Verdict int

const (
	// Unknown: the last answer could not tell, or there is none yet.
	Unknown Verdict = iota
	// Short: known, but the answers have not shown enough serving other
	// sites in every answer for hold.
	Short
	// Enough: every answer for at least hold, measured between two
	// distinct answers, showed at least min_other_sites serving other
	// sites, and two of them at least were taken after the failure.
	Enough
)

func (v Verdict) String() string {
	switch v {
	case Short:
		return "short"
	case Enough:
		return "enough"
	}
	return "unknown"
}

// Run is what the guard remembers of one VIP. The zero Run has seen
// nothing: its verdict is Unknown.
type Run struct {
	// Since is the time of the first answer of the current run of answers
	// with at least min_other_sites serving other sites; zero: no run.
	Since time.Time
	// Last is the time of the last answer taken; zero: none yet. Prev is
	// the one before it, if it is in the run (zero otherwise).
	Last, Prev time.Time
	// Sites is the last answer's count of serving other sites; -1 when
	// it could not tell (Err says why).
	Sites int
	Err   error
}

// Take advances r by one answer at time at: sites serving other sites, or
// err when the answer cannot tell. An answer no newer than the last one
// taken changes nothing.
func (r Run) Take(minSites int, at time.Time, sites int, err error) Run {
	if !at.After(r.Last) {
		return r
	}
	r.Prev, r.Last = r.Last, at
	if err != nil {
		r.Since, r.Prev, r.Sites, r.Err = time.Time{}, time.Time{}, -1, err
		return r
	}
	r.Sites, r.Err = sites, nil
	switch {
	case sites < minSites:
		r.Since, r.Prev = time.Time{}, time.Time{}
	case r.Since.IsZero():
		r.Since, r.Prev = at, time.Time{}
	}
	return r
}

// Verdict is r's verdict for hold, for a VIP whose health failed at fell
// (the zero time: long ago).
func (r Run) Verdict(hold time.Duration, fell time.Time) Verdict {
	switch {
	case r.Last.IsZero() || r.Err != nil:
		return Unknown
	case !r.Since.IsZero() && r.Last.After(r.Since) && r.Last.Sub(r.Since) >= hold && r.Prev.After(fell):
		return Enough
	}
	return Short
}

// Runs is the guard's memory of every VIP. The zero value is empty.
type Runs struct {
	m map[netip.Prefix]Run
}

// Take advances the run of every VIP of vips by v.
func (g *Runs) Take(minSites int, v *View, vips []netip.Prefix) {
	if g.m == nil {
		g.m = make(map[netip.Prefix]Run, len(vips))
	}
	for _, p := range vips {
		n, err := v.Of(p)
		g.m[p] = g.m[p].Take(minSites, v.At, n, err)
	}
}

// Of is p's run; the zero Run if none was taken.
func (g *Runs) Of(p netip.Prefix) Run { return g.m[p] }

// Keep forgets the runs of the VIPs for which keep is false (dropped by a
// reload).
func (g *Runs) Keep(keep func(netip.Prefix) bool) {
	for p := range g.m {
		if !keep(p) {
			delete(g.m, p)
		}
	}
}

// Reset forgets every run: min_other_sites changed, or the guard was
// turned off, so no run counted under the old rule counts now.
func (g *Runs) Reset() { clear(g.m) }
