package daemon

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/status"
)

// TestViewKeepsEveryState: a view gives back each VIP's decide.State as
// the loop had it, whether it packs (every reason package decide has,
// every verdict, large and negative counts) or not (a reason or verdict
// unknown to the packing, a count beyond 32 bits), and the view reused by a later publish forgets the states
// that did not pack.
func TestViewKeepsEveryState(t *testing.T) {
	var states []decide.State
	for _, r := range packReasons {
		for _, v := range []decide.Availability{decide.Unknown, decide.Available, decide.Unavailable} {
			states = append(states, decide.State{Announced: v == decide.Available, Verdict: v, Reason: r,
				Streak: 3, FailedPolls: 1<<31 - 1, Degraded: r == decide.ReasonDegraded, TierStreak: -1 << 31})
		}
	}
	wide := []decide.State{{Streak: 1 << 31, Reason: decide.ReasonRising}, {FailedPolls: 1 << 40, Reason: decide.ReasonUnknown},
		{TierStreak: -1<<31 - 1, Reason: decide.ReasonDegraded}, {FailedPolls: 1 << 32, Reason: decide.ReasonUnknown}}
	states = append(states, wide...)
	states = append(states, decide.State{Reason: "not a reason of package decide"}, decide.State{Verdict: 300, Reason: decide.ReasonHealthy})
	d := &Daemon{}
	d.vs.ready = true
	d.vs.state = states
	d.vs.since = make([]time.Time, len(states))
	d.vs.flips = make([]uint32, len(states))
	d.cfg, _ = manyVIPs(len(states))
	var r vipRecs
	r.fill(d)
	for i, want := range states {
		if got := r.at(i).state; got != want {
			t.Errorf("state %d: %+v came back as %+v", i, want, got)
		}
	}
	if len(r.other) != 2+len(wide) {
		t.Errorf("%d states kept whole, want the %d that do not pack", len(r.other), 2+len(wide))
	}
	d.vs.state = states[:len(states)-2-len(wide)] // those that pack
	r.fill(d)
	if len(r.other) != 0 || r.at(len(states)-1).state != (decide.State{}) {
		t.Errorf("a refill kept %d whole states and %+v past the end", len(r.other), r.at(len(states)-1).state)
	}
}

// TestViewSharesSinceAndFlips walks random health through ticks and, after
// each, holds the view just published with a copy of its since and flips:
// a view shares them with the loop, so the ticks after it, which
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
		flips []uint32
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
		v := r.d.views.cur.Load()
		if !slices.Equal(v.vips.since, r.d.vs.since) || !slices.Equal(v.vips.flips, r.d.vs.flips) {
			t.Fatalf("view shows since %v flips %v, loop has %v %v", v.vips.since, v.vips.flips, r.d.vs.since, r.d.vs.flips)
		}
		prev = &held{v: v, since: slices.Clone(v.vips.since), flips: slices.Clone(v.vips.flips)}
	}
	if changes < 10 {
		t.Fatalf("only %d ticks changed flips: the test exercises too little", changes)
	}
}

// TestSummaryIsStatusWithoutLists: Summary, what the watchdog and /healthz
// read, is Status with its per-VIP lists left out, every other field the
// same, through ticks with a confirmer, a failed delete of a VIP dropped by
// a reload (withdrawing), a foreign address (unmanaged) and a drain, and
// before the first tick.
func TestSummaryIsStatusWithoutLists(t *testing.T) {
	link := newFakeLink("10.9.9.9/32")
	r, _ := newConfirmRig(t, link)
	strip := func(s status.Status) status.Status {
		s.VIPs = nil
		s.Interface.Foreign, s.Interface.Withdrawing, s.Interface.Unmanaged = nil, nil, nil
		s.Drain.Count = 0
		return s
	}
	check := func(when string) {
		t.Helper()
		if d := cmp.Diff(strip(r.d.Status()), r.d.Summary()); d != "" {
			t.Fatalf("%s: Summary differs from Status without its lists (-status +summary):\n%s", when, d)
		}
	}
	check("before the first tick")
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	check("after a confirmed tick")
	dropped := netip.MustParsePrefix("10.0.0.102/32")
	link.failDel[dropped] = true
	next := seed(config.Withdraw)
	next.VIPs = next.VIPs[:2]
	next.Bird.Socket = "/run/bird/bird.ctl"
	r.d.applyReload(next)
	r.d.drains.drained = drain.Set{VIPs: map[netip.Prefix]bool{netip.MustParsePrefix("10.0.0.100/32"): true}}
	r.health.set(health.Down, auth)
	r.tick(t)
	r.confirm(t)
	s := r.d.Status()
	if len(s.Interface.Withdrawing) == 0 || len(s.Interface.Unmanaged) == 0 || s.Drain.Count == 0 || len(s.VIPs) == 0 || s.Bird.LastCheck.IsZero() {
		t.Fatalf("the test exercises too little: %+v", s)
	}
	check("with lists")
}
