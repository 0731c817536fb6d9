package daemon

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestViewKeepsEveryState: a view gives back each VIP's decide.State as
// the loop had it, whether it packs (every reason package decide has,
// every verdict, large counts) or not (a reason or verdict unknown to the
// packing), and the view reused by a later publish forgets the states
// that did not pack.
func TestViewKeepsEveryState(t *testing.T) {
	var states []decide.State
	for _, r := range packReasons {
		for _, v := range []decide.Availability{decide.Unknown, decide.Available, decide.Unavailable} {
			states = append(states, decide.State{Announced: v == decide.Available, Verdict: v, Reason: r,
				Streak: 3, FailedPolls: 1 << 40, Degraded: r == decide.ReasonDegraded, TierStreak: -2})
		}
	}
	states = append(states, decide.State{Reason: "not a reason of package decide"}, decide.State{Verdict: 300, Reason: decide.ReasonHealthy})
	d := &Daemon{}
	d.vs.ready = true
	d.vs.state = states
	d.vs.since = make([]time.Time, len(states))
	d.vs.flips = make([]uint64, len(states))
	d.cfg, _ = manyVIPs(len(states))
	var r vipRecs
	r.fill(d)
	for i, want := range states {
		if got := r.at(i).state; got != want {
			t.Errorf("state %d: %+v came back as %+v", i, want, got)
		}
	}
	if len(r.other) != 2 {
		t.Errorf("%d states kept whole, want the 2 that do not pack", len(r.other))
	}
	d.vs.state = states[:len(states)-2]
	r.fill(d)
	if len(r.other) != 0 || r.at(len(states)-1).state != (decide.State{}) {
		t.Errorf("a refill kept %d whole states and %+v past the end", len(r.other), r.at(len(states)-1).state)
	}
}

// TestViewSharesSinceAndFlips walks random health through ticks and, after
// each, holds the view just published with a copy of its since and flips:
// a view shares them with the loop (issue 15), so the ticks after it, which
// change them, must leave it as it was while a reader may hold it (until
// the second publish after it reuses it), and each view must show the
// loop's values at its own tick.
func TestViewSharesSinceAndFlips(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	rng := rand.New(rand.NewPCG(15, 15))
	keys := []string{api, auth, admin, primary, reserve}
	verdicts := []health.Verdict{health.Up, health.Down, health.NoChecker}
	type held struct {
		v     *view
		since []time.Time
		flips []uint64
	}
	var prev *held
	changes := 0
	for range 60 {
		for _, k := range keys {
			if rng.IntN(3) == 0 {
				r.health.set(verdicts[rng.IntN(len(verdicts))], k)
			}
		}
		r.tick(t)
		if prev != nil {
			if !slices.Equal(prev.v.vips.since, prev.since) || !slices.Equal(prev.v.vips.flips, prev.flips) {
				t.Fatalf("a view's since/flips changed after it was published: %v %v, then %v %v", prev.since, prev.flips, prev.v.vips.since, prev.v.vips.flips)
			}
			if !slices.Equal(r.d.vs.flips, prev.flips) {
				changes++
			}
		}
		v := r.d.views.cur
		if !slices.Equal(v.vips.since, r.d.vs.since) || !slices.Equal(v.vips.flips, r.d.vs.flips) {
			t.Fatalf("view shows since %v flips %v, loop has %v %v", v.vips.since, v.vips.flips, r.d.vs.since, r.d.vs.flips)
		}
		prev = &held{v: v, since: slices.Clone(v.vips.since), flips: slices.Clone(v.vips.flips)}
	}
	if changes < 10 {
		t.Fatalf("only %d ticks changed flips: the test exercises too little", changes)
	}
}
