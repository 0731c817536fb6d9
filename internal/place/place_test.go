package place

import (
	"fmt"
	"testing"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/guard"
)

var (
	healths = []decide.State{
		{Announced: true, Reason: decide.ReasonHealthy},
		{Announced: true, Degraded: true, Reason: decide.ReasonDegraded},
		{Announced: true, Reason: decide.ReasonInitial}, // a restart, not settled yet
		{Announced: false, Reason: decide.ReasonUnhealthy},
		{Announced: false, Reason: decide.ReasonPolicyWithdraw},
		{Announced: false, Reason: decide.ReasonRising},
	}
	verdicts = []guard.Verdict{guard.Unknown, guard.Short, guard.Enough}
	tiers    = []decide.Tier{decide.TierAnnounced, decide.TierDegraded, decide.TierLastResort, decide.TierWithdrawn}
	phases   = []Phase{Running, Starting, Stopping}
)

// every calls f with every combination of Place's inputs.
func every(f func(Input)) {
	for _, h := range healths {
		for _, drained := range []bool{false, true} {
			for _, fo := range []bool{false, true} {
				for _, g := range verdicts {
					for _, lr := range []bool{false, true} {
						for _, cur := range tiers {
							for _, ph := range phases {
								for _, grace := range []bool{false, true} {
									f(Input{Health: h, Drained: drained, FailOpen: fo, Guard: g, LastResort: lr, Current: cur, Phase: ph, Grace: grace})
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestPlaceEveryInput checks the rules on every combination of inputs
// (6 × 2 × 2 × 3 × 2 × 4 × 3 × 2 = 3,456), each rule stated on its own rather
// than as a copy of Place.
func TestPlaceEveryInput(t *testing.T) {
	n := 0
	every(func(in Input) {
		n++
		got := Place(&in)
		name := fmt.Sprintf("%+v", in)
		fail := func(rule string) { t.Errorf("%s: got %+v: %s", name, got, rule) }
		healthy := in.Health.Announced
		if got.Reason == "" {
			fail("every placement has a reason")
		}
		stepping := in.Phase == Stopping || in.Drained
		// What the VIP would get were it neither drained nor stopping.
		rest := in
		rest.Drained, rest.Grace = false, false
		if rest.Phase == Stopping {
			rest.Phase = Running
		}
		served := Place(&rest).Tier.Present()
		switch {
		case stepping && !in.Grace:
			if got.Tier != decide.TierWithdrawn {
				fail("stopping or drained, grace over: withdrawn")
			}
		case stepping && in.LastResort && in.Current != decide.TierWithdrawn && served:
			want := Placement{decide.TierLastResort, ReasonDraining}
			if in.Phase == Stopping {
				want.Reason = ReasonStopping
			}
			if got != want {
				fail(fmt.Sprintf("in its grace, on an interface and served: want %+v", want))
			}
		case stepping:
			if got.Tier != decide.TierWithdrawn {
				fail("in its grace but not served, not on an interface, or no last-resort tier: withdrawn at once")
			}
		case healthy:
			if got.Tier != in.Health.Tier() || got.Reason != in.Health.Reason {
				fail("health announces it: health's tier and reason")
			}
		case !in.FailOpen:
			if got.Tier != decide.TierWithdrawn || got.Reason != in.Health.Reason {
				fail("guard off: health withdraws it, with health's reason")
			}
		}
		// The safety rule: with the guard on, a running daemon withdraws a
		// VIP whose health fails only on the guard's positive word.
		if in.FailOpen && !healthy && !in.Drained && in.Phase == Running && in.Guard != guard.Enough && got.Tier == decide.TierWithdrawn &&
			(in.LastResort || in.Current != decide.TierWithdrawn) {
			fail("withdrawn without enough other sites serving it")
		}
		if in.FailOpen && !healthy && !in.Drained && in.Phase != Stopping && in.Guard == guard.Enough && got.Tier != decide.TierWithdrawn {
			fail("enough other sites serve it for hold: withdrawn")
		}
		// Starting: what was announced when rhi started is kept in last
		// resort; nothing new is announced before the guard looked.
		if in.Phase == Starting && in.FailOpen && !healthy && !in.Drained && in.Guard != guard.Enough {
			want := decide.TierLastResort
			if in.Current == decide.TierWithdrawn {
				want = decide.TierWithdrawn
			} else if !in.LastResort {
				want = in.Current
			}
			if got.Tier != want {
				fail(fmt.Sprintf("starting: want %s", want))
			}
		}
		if stepping {
			return // the rules below are the running daemon's, undrained
		}
		if got.Tier == decide.TierLastResort && (!in.FailOpen || healthy || !in.LastResort && in.Current != decide.TierLastResort) {
			fail("last resort only for a failing VIP with the guard on and the tier available (or it there already)")
		}
		// A failing VIP is never promoted: full or degraded only where it
		// already is, because the last-resort interface is missing.
		if !healthy && (got.Tier == decide.TierAnnounced || got.Tier == decide.TierDegraded) &&
			(got.Tier != in.Current || in.LastResort || got.Reason != ReasonNoLastResort) {
			fail("a failing VIP promoted")
		}
		if got.Tier == decide.TierLastResort && in.LastResort {
			want := ReasonFailOpen
			switch {
			case in.Phase == Starting:
				want = ReasonStarting
			case in.Guard == guard.Unknown:
				want = ReasonGuardUnknown
			}
			if got.Reason != want {
				fail(fmt.Sprintf("last resort's reason: want %s", want))
			}
		}
	})
	if n != 3456 {
		t.Errorf("%d combinations", n)
	}
}

// TestPlaceCases pins the placements the docs name.
func TestPlaceCases(t *testing.T) {
	down := decide.State{Reason: decide.ReasonUnhealthy}
	for _, tc := range []struct {
		name string
		in   Input
		want Placement
	}{
		{"healthy", Input{Health: decide.State{Announced: true, Reason: decide.ReasonHealthy}, FailOpen: true, LastResort: true},
			Placement{decide.TierAnnounced, decide.ReasonHealthy}},
		{"degraded", Input{Health: decide.State{Announced: true, Degraded: true, Reason: decide.ReasonDegraded}},
			Placement{decide.TierDegraded, decide.ReasonDegraded}},
		{"guard off", Input{Health: down, Current: decide.TierAnnounced, LastResort: true},
			Placement{decide.TierWithdrawn, decide.ReasonUnhealthy}},
		{"every site failed: nobody else serves", Input{Health: down, FailOpen: true, Guard: guard.Short, LastResort: true, Current: decide.TierAnnounced},
			Placement{decide.TierLastResort, ReasonFailOpen}},
		{"view unknown", Input{Health: down, FailOpen: true, Guard: guard.Unknown, LastResort: true, Current: decide.TierLastResort},
			Placement{decide.TierLastResort, ReasonGuardUnknown}},
		{"others serve", Input{Health: down, FailOpen: true, Guard: guard.Enough, LastResort: true, Current: decide.TierAnnounced},
			Placement{decide.TierWithdrawn, ReasonOthersServing}},
		{"restart of a VIP announced", Input{Health: down, FailOpen: true, LastResort: true, Current: decide.TierLastResort, Phase: Starting},
			Placement{decide.TierLastResort, ReasonStarting}},
		{"restart of a VIP withdrawn", Input{Health: down, FailOpen: true, LastResort: true, Current: decide.TierWithdrawn, Phase: Starting},
			Placement{decide.TierWithdrawn, decide.ReasonUnhealthy}},
		{"no last-resort interface: stays degraded", Input{Health: down, FailOpen: true, Guard: guard.Short, Current: decide.TierDegraded},
			Placement{decide.TierDegraded, ReasonNoLastResort}},
		{"drained", Input{Health: down, Drained: true, FailOpen: true, LastResort: true, Current: decide.TierLastResort},
			Placement{decide.TierWithdrawn, ReasonDrained}},
		{"stopping", Input{Health: decide.State{Announced: true}, Phase: Stopping},
			Placement{decide.TierWithdrawn, ReasonStopping}},
		{"drained, in its grace", Input{Health: decide.State{Announced: true, Reason: decide.ReasonHealthy}, Drained: true, LastResort: true, Current: decide.TierAnnounced, Grace: true},
			Placement{decide.TierLastResort, ReasonDraining}},
		{"drained, grace over", Input{Health: decide.State{Announced: true, Reason: decide.ReasonHealthy}, Drained: true, LastResort: true, Current: decide.TierLastResort},
			Placement{decide.TierWithdrawn, ReasonDrained}},
		{"drained in its grace, health fails: withdrawn at once", Input{Health: down, Drained: true, LastResort: true, Current: decide.TierLastResort, Grace: true},
			Placement{decide.TierWithdrawn, ReasonDrained}},
		{"drained in its grace, health fails, guard keeps it", Input{Health: down, Drained: true, FailOpen: true, Guard: guard.Short, LastResort: true, Current: decide.TierLastResort, Grace: true},
			Placement{decide.TierLastResort, ReasonDraining}},
		{"drained in its grace, no last-resort interface: withdrawn at once", Input{Health: decide.State{Announced: true}, Drained: true, Current: decide.TierAnnounced, Grace: true},
			Placement{decide.TierWithdrawn, ReasonDrained}},
		{"drained in its grace, already withdrawn: nothing added", Input{Health: decide.State{Announced: true}, Drained: true, LastResort: true, Current: decide.TierWithdrawn, Grace: true},
			Placement{decide.TierWithdrawn, ReasonDrained}},
		{"stopping in its grace", Input{Health: decide.State{Announced: true, Degraded: true}, Phase: Stopping, LastResort: true, Current: decide.TierDegraded, Grace: true},
			Placement{decide.TierLastResort, ReasonStopping}},
	} {
		if got := Place(&tc.in); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
