package guard

import (
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
)

// site is one simulated data centre: its health, its guard, and what it
// announced at each step, which the others see after a lag (BGP and the
// guard's query interval).
type site struct {
	as        uint32
	health    bool
	g         State
	announced []bool
}

func (s *site) announcing() bool { return s.health || s.g.Engaged }

// simulate runs sites in steps of dt for d, each seeing the others'
// announcements lag late, every site polling in the same step. health
// says each site's health at a time. It returns, per step, how many sites
// announced, and the guards' events.
func simulate(t *testing.T, cfg config.FailOpen, sites []*site, dt, lag, d time.Duration, health func(at time.Duration, i int) bool) (counts []int, events []string) {
	t.Helper()
	lagSteps := int(lag / dt)
	for k := 0; time.Duration(k)*dt <= d; k++ {
		at := time.Duration(k) * dt
		for i, s := range sites {
			s.health = health(at, i)
			obs := Observation{Known: true, Self: s.as}
			for j, o := range sites {
				seenAt := len(o.announced) - lagSteps
				if j != i && seenAt >= 0 && seenAt < len(o.announced) && o.announced[seenAt] {
					obs.Others = append(obs.Others, o.as)
				}
			}
			var ev Event
			var why Why
			s.g, ev, why = Step(cfg, s.g, Input{Health: s.health, Obs: obs, Now: t0.Add(at)})
			if ev != None {
				events = append(events, at.String()+" "+string(why))
			}
		}
		n := 0
		for _, s := range sites {
			s.announced = append(s.announced, s.announcing())
			if s.announcing() {
				n++
			}
		}
		counts = append(counts, n)
	}
	return counts, events
}

// TestRaceEverySiteFailsInOnePoll: every site goes unhealthy in the same
// poll. Each withdraws, sees nobody, engages after hold; then each sees the
// others and the release rule must not take them all away at once: after
// the first few seconds the VIP is announced by at least one site at every
// step, over many release periods. Health back: every site announces by
// health and no guard is engaged.
func TestRaceEverySiteFailsInOnePoll(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   config.FailOpen
		sites []uint32
	}{
		{"two sites, min 1", cfg1, []uint32{65001, 65002}},
		{"three sites, min 1", cfg1, []uint32{65003, 65001, 65002}},
		{"four sites, min 2", config.FailOpen{MinOtherSites: 2, Hold: 2 * time.Second, Release: 30 * time.Second}, []uint32{65001, 65002, 65003, 65004}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sites []*site
			for _, as := range tc.sites {
				sites = append(sites, &site{as: as})
			}
			const dt, lag = 200 * time.Millisecond, time.Second
			down, up := 10*time.Second, 10*time.Minute
			counts, events := simulate(t, tc.cfg, sites, dt, lag, 11*time.Minute, func(at time.Duration, _ int) bool { return at < down || at >= up })
			settle := down + lag + tc.cfg.Hold + lag
			gap, worst := false, 0
			for k, n := range counts {
				at := time.Duration(k) * dt
				if at >= settle && at < up && n < 1 {
					t.Errorf("at %v no site announces the VIP", at)
					break
				}
				if at >= down && at < settle && n == 0 {
					gap = true
					worst = max(worst, k)
				}
			}
			if !gap {
				t.Errorf("the VIP was never withdrawn everywhere after the failure: the guard engaged before hold")
			}
			// Once settled, the number of announcing sites stops changing:
			// no oscillation.
			changes := 0
			for k := 1; k < len(counts); k++ {
				at := time.Duration(k) * dt
				if at > 3*tc.cfg.Release && at < up && counts[k] != counts[k-1] {
					changes++
				}
			}
			if changes != 0 {
				t.Errorf("%d changes in the number of announcing sites after %v; events %v", changes, 3*tc.cfg.Release, events)
			}
			if n := counts[int((up-dt)/dt)]; n < tc.cfg.MinOtherSites {
				t.Errorf("settled with %d sites announcing, want at least %d", n, tc.cfg.MinOtherSites)
			}
			for _, s := range sites {
				if s.g.Engaged || !s.health {
					t.Errorf("AS %d: after health came back the guard is engaged (%+v)", s.as, s.g)
				}
			}
			t.Logf("withdrawn everywhere until %v; events: %v", time.Duration(worst)*dt, events)
		})
	}
}

// TestRaceWithoutTheRankRule shows why kept sites wait longer: if every
// site released after Release alike, the fleet would drop the VIP again
// and again.
func TestRaceWithoutTheRankRule(t *testing.T) {
	sites := []*site{{as: 0}, {as: 0}} // Self unknown: nobody is kept
	counts, _ := simulate(t, cfg1, sites, 200*time.Millisecond, time.Second, 5*time.Minute, func(at time.Duration, _ int) bool { return at < 10*time.Second })
	gaps := 0
	for k := 1; k < len(counts); k++ {
		if counts[k] == 0 && counts[k-1] > 0 {
			gaps++
		}
	}
	if gaps < 3 {
		t.Errorf("want the VIP to vanish again and again without the rank rule, got %d gaps", gaps)
	}
}
