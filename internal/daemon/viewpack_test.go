package daemon

import (
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/decide"
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
