package place

// Fleet simulations: every site runs the real guard (guard.Run) and the
// real Place; it sees what the other sites announced lag ago, in an answer
// from BIRD every second. They replay the ways the guard that withdrew
// first and then tried to get the route back, and told sites apart by
// origin AS, lost a VIP everywhere or held a dead one: sites sharing an
// AS, a site that cannot read its own AS, its own path echoed back,
// different timers at two sites, a short timer against propagation, and a
// router that sends only its best path. Sites are now told apart by site
// id, whatever their AS, so an AS appears in none of these models.

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/guard"
)

var (
	t0  = time.Unix(1_700_000_000, 0)
	vip = netip.MustParsePrefix("10.0.0.1/32")
)

type site struct {
	id       uint32
	minSites int
	hold     time.Duration
	health   bool
	run      guard.Run
	fell     time.Time // when its health last failed
	tier     decide.Tier
	hist     []decide.Tier // per step
}

func serving(t decide.Tier) bool { return t == decide.TierAnnounced || t == decide.TierDegraded }

type fleetOpts struct {
	dt, lag, ask time.Duration
	// echo: each site's own path comes back to it (two routers, "allow
	// local as") and is counted, as if it were another site's.
	echo bool
	// bestOnly: the router sends each site only its best path (no
	// ADD-PATH): BIRD's view is unknown, as guardbird reports it.
	bestOnly bool
}

// runFleet runs the sites for d with health(at, i).
func runFleet(sites []*site, o fleetOpts, d time.Duration, health func(at time.Duration, i int) bool) {
	lagSteps := int(o.lag / o.dt)
	askSteps := int(o.ask / o.dt)
	was := func(s *site) decide.Tier {
		k := len(s.hist) - 1 - lagSteps
		if k < 0 {
			return decide.TierAnnounced // healthy before the run
		}
		return s.hist[k]
	}
	for k := 0; time.Duration(k)*o.dt <= d; k++ {
		at := time.Duration(k) * o.dt
		for i, s := range sites {
			up := s.health || k == 0
			s.health = health(at, i)
			if up && !s.health {
				s.fell = t0.Add(at)
			}
			if (k+i)%askSteps == 0 { // each site asks on its own phase
				v := guard.View{At: t0.Add(at), Serving: map[netip.Prefix][]uint32{vip: nil}}
				if o.bestOnly {
					v.Err = errors.New("no ADD-PATH receive from the router")
				}
				for j, x := range sites {
					if serving(was(x)) && (j != i || o.echo) {
						v.Serving[vip] = append(v.Serving[vip], x.id)
					}
				}
				n, err := v.Of(vip)
				s.run = s.run.Take(s.minSites, v.At, n, err)
			}
			h := decide.State{Announced: s.health, Reason: decide.ReasonHealthy}
			if !s.health {
				h.Reason = decide.ReasonUnhealthy
			}
			cur := s.tier
			if cur == "" {
				cur = decide.TierAnnounced
			}
			s.tier = Place(&Input{Health: h, FailOpen: true, Guard: s.run.Verdict(s.hold, s.fell), LastResort: true, Current: cur}).Tier
		}
		for _, s := range sites {
			s.hist = append(s.hist, s.tier)
		}
	}
}

func newFleet(n, minSites int, hold time.Duration) []*site {
	var sites []*site
	for i := range n {
		sites = append(sites, &site{id: uint32(i + 1), minSites: minSites, hold: hold})
	}
	return sites
}

// noGap checks that at every step some site announces the VIP, and that
// from `from` on the tiers no longer change.
func noGap(t *testing.T, sites []*site, dt, from time.Duration) {
	t.Helper()
	gaps, changes := 0, 0
	for k := range sites[0].hist {
		n := 0
		for _, s := range sites {
			if s.hist[k] != decide.TierWithdrawn {
				n++
			}
			if k > 0 && time.Duration(k)*dt >= from && s.hist[k] != s.hist[k-1] {
				changes++
			}
		}
		if n == 0 {
			gaps++
		}
	}
	if gaps > 0 || changes > 0 {
		t.Errorf("%d steps of %v with no site announcing the VIP; %d changes of tier after %v; last tiers %v", gaps, dt, changes, from, lastTiers(sites))
	}
}

func lastTiers(sites []*site) []string {
	var out []string
	for _, s := range sites {
		out = append(out, fmt.Sprintf("%d:%s", s.id, s.tier))
	}
	return out
}

var (
	std = fleetOpts{dt: 200 * time.Millisecond, lag: time.Second, ask: time.Second}
	// allFail: every site fails at 10 s and recovers at 4 min.
	allFail = func(at time.Duration, _ int) bool { return at < 10*time.Second || at >= 4*time.Minute }
)

// Every site fails in the same poll: each goes to last resort at once, and
// stays there, for fleets of any size (once sharing one AS, now simply
// sites with ids), with any hold at each site, and with hold shorter than
// propagation. Nobody withdraws: no gap, no cycle.
func TestFleetEverySiteFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sites []*site
		o     fleetOpts
	}{
		{"2 sites", newFleet(2, 1, 2*time.Second), std},
		{"10 sites", newFleet(10, 1, 2*time.Second), std},
		{"3 sites, min 2", newFleet(3, 2, 2*time.Second), std},
		{"different holds", []*site{{id: 1, minSites: 1, hold: 40 * time.Second}, {id: 2, minSites: 1, hold: 20 * time.Second}}, std},
		{"hold shorter than propagation", newFleet(2, 1, 200*time.Millisecond), fleetOpts{dt: 200 * time.Millisecond, lag: 800 * time.Millisecond, ask: time.Second}},
		// A site's own path echoed back and counted: while it fails its
		// own path is last resort, which counts as nobody.
		{"own path echoed, 1 site", newFleet(1, 1, 2*time.Second), fleetOpts{dt: 200 * time.Millisecond, lag: time.Second, ask: time.Second, echo: true}},
		{"own path echoed, 2 sites", newFleet(2, 1, 2*time.Second), fleetOpts{dt: 200 * time.Millisecond, lag: time.Second, ask: time.Second, echo: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runFleet(tc.sites, tc.o, 5*time.Minute, allFail)
			noGap(t, tc.sites[:], tc.o.dt, 4*time.Minute+tc.o.dt)
			for _, s := range tc.sites {
				if s.hist[len(s.hist)-1] != decide.TierAnnounced {
					t.Errorf("site %d: %s after recovery", s.id, s.hist[len(s.hist)-1])
				}
				for k := 50; k < 1200; k++ { // 10 s to 4 min: failed
					if s.hist[k] != decide.TierLastResort {
						t.Errorf("site %d at %v: %s, want last resort", s.id, time.Duration(k)*tc.o.dt, s.hist[k])
						break
					}
				}
			}
		})
	}
}

// One site fails for good while the others are healthy: it withdraws as
// soon as its run of answers spans hold, and the run started before the
// failure, so within two of its answers (two seconds). With min_other_sites 2 in a fleet of ten (once one
// AS, counted as one site, so never enough), it withdraws too.
func TestFleetOneSiteFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, min   int
		deadline time.Duration
	}{
		{"2 sites, min 1", 2, 1, 2 * time.Second},
		{"10 sites, min 2", 10, 2, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sites := newFleet(tc.n, tc.min, 2*time.Second)
			failAt := time.Minute
			runFleet(sites, std, 3*time.Minute, func(at time.Duration, i int) bool { return i != 0 || at < failAt })
			for k, tier := range sites[0].hist {
				at := time.Duration(k) * std.dt
				if at >= failAt+tc.deadline && tier != decide.TierWithdrawn {
					t.Fatalf("site 1 at %v (failed at %v): %s, want withdrawn", at, failAt, tier)
				}
				if at >= failAt && serving(tier) {
					t.Fatalf("site 1 at %v (failed at %v): %s", at, failAt, tier)
				}
			}
		})
	}
}

// A router that sends only its best path (no ADD-PATH) leaves the view
// unknown. The site whose path was best and whose health then fails is
// not held serving (it goes to last resort, which routers use only where
// they have nothing else) and is never withdrawn on the unknown view; the
// healthy sites keep serving it.
func TestFleetNoAddPath(t *testing.T) {
	sites := newFleet(3, 1, 2*time.Second)
	o := std
	o.bestOnly = true
	runFleet(sites, o, 5*time.Minute, func(at time.Duration, i int) bool { return i != 0 || at < time.Minute })
	for k := range sites[0].hist {
		at := time.Duration(k) * o.dt
		if at >= time.Minute && sites[0].hist[k] != decide.TierLastResort {
			t.Fatalf("site 1 at %v: %s, want last resort", at, sites[0].hist[k])
		}
		for _, s := range sites[1:] {
			if s.hist[k] != decide.TierAnnounced {
				t.Fatalf("site %d at %v: %s", s.id, at, s.hist[k])
			}
		}
	}
}
