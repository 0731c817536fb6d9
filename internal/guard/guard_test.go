package guard

import (
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
)

var cfg1 = config.FailOpen{MinOtherSites: 1, Hold: 2 * time.Second, Release: 30 * time.Second}

var t0 = time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)

func seen(others ...uint32) Observation { return Observation{Known: true, Others: others, Self: 65001} }

var unknown = Observation{}

// step is one observation at a time after t0, and what must follow.
type step struct {
	at      time.Duration
	health  bool
	drained bool
	obs     Observation
	engaged bool
	ev      Event
	why     Why
}

func run(t *testing.T, cfg config.FailOpen, steps []step) {
	t.Helper()
	var s State
	for i, st := range steps {
		next, ev, why := Step(cfg, s, Input{Health: st.health, Drained: st.drained, Obs: st.obs, Now: t0.Add(st.at)})
		if next.Engaged != st.engaged || ev != st.ev || why != st.why {
			t.Fatalf("step %d (at %v): engaged %v, event %v, why %q; want %v, %v, %q (state %+v)", i, st.at, next.Engaged, ev, why, st.engaged, st.ev, st.why, next)
		}
		s = next
	}
}

func TestSequences(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   config.FailOpen
		steps []step
	}{
		{"healthy never engages", cfg1, []step{
			{at: 0, health: true, obs: seen()},
			{at: 10 * time.Second, health: true, obs: seen()},
		}},
		{"withdrawn, others announce: stays withdrawn", cfg1, []step{
			{at: 0, obs: seen(65002)},
			{at: time.Minute, obs: seen(65002)},
		}},
		{"seen after the withdrawal: engages after hold", cfg1, []step{
			{at: 0, obs: seen(65002)},
			{at: 1 * time.Second, obs: seen()},
			{at: 2 * time.Second, obs: seen()},
			{at: 3 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 4 * time.Second, obs: seen(), engaged: true},
		}},
		{"seen before the withdrawal: engages at once", cfg1, []step{
			{at: 0, health: true, obs: seen()},
			{at: 5 * time.Second, health: true, obs: seen()},
			{at: 6 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
		}},
		{"a break in the run starts hold again", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 1 * time.Second, obs: seen(65002)},
			{at: 2 * time.Second, obs: seen()},
			{at: 3 * time.Second, obs: seen()},
			{at: 4 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
		}},
		{"health back releases", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 3 * time.Second, health: true, obs: seen(), ev: Release, why: WhyHealthy},
			{at: 4 * time.Second, health: true, obs: seen()},
		}},
		{"others for release: released (not kept)", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 3 * time.Second, obs: seen(65009), engaged: true},
			{at: 32 * time.Second, obs: seen(65009), engaged: true},
			{at: 33 * time.Second, obs: seen(65009), ev: Release, why: WhyOthers},
			{at: 60 * time.Second, obs: seen(65009)},
		}},
		{"others for release: a kept site waits twice as long", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 3 * time.Second, obs: seen(65000), engaged: true},
			{at: 33 * time.Second, obs: seen(65000), engaged: true},
			{at: 63 * time.Second, obs: seen(65000), ev: Release, why: WhyOthers},
		}},
		{"others must announce without a break", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 3 * time.Second, obs: seen(65009), engaged: true},
			{at: 20 * time.Second, obs: seen(), engaged: true},
			{at: 21 * time.Second, obs: seen(65009), engaged: true},
			{at: 50 * time.Second, obs: seen(65009), engaged: true},
			{at: 51 * time.Second, obs: seen(65009), ev: Release, why: WhyOthers},
		}},
		{"BIRD unreachable: never engages, says so", cfg1, []step{
			{at: 0, obs: unknown, why: WhyNoBird},
			{at: 10 * time.Second, obs: unknown, why: WhyNoBird},
			{at: 11 * time.Second, obs: seen()},
			{at: 12 * time.Second, obs: unknown, why: WhyNoBird},
			{at: 13 * time.Second, obs: seen()},
			{at: 15 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
		}},
		{"BIRD unreachable: an engaged guard holds, its release run broken", cfg1, []step{
			{at: 0, obs: seen()},
			{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 3 * time.Second, obs: seen(65009), engaged: true},
			{at: 20 * time.Second, obs: unknown, engaged: true},
			{at: 5 * time.Minute, obs: unknown, engaged: true},
			{at: 5*time.Minute + time.Second, obs: seen(65009), engaged: true},
			{at: 5*time.Minute + 31*time.Second, obs: seen(65009), ev: Release, why: WhyOthers},
		}},
		{"drain wins", cfg1, []step{
			{at: 0, drained: true, obs: seen()},
			{at: 10 * time.Second, drained: true, obs: seen()},
			{at: 11 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
			{at: 12 * time.Second, drained: true, obs: seen(), ev: Release, why: WhyDrained},
			{at: 20 * time.Second, drained: true, obs: seen()},
		}},
		{"turned off", config.FailOpen{}, []step{
			{at: 0, obs: seen()},
			{at: time.Minute, obs: seen()},
		}},
		{"min_other_sites 2: one other is too few", config.FailOpen{MinOtherSites: 2, Hold: time.Second, Release: 10 * time.Second}, []step{
			{at: 0, obs: seen(65002)},
			{at: time.Second, obs: seen(65002), engaged: true, ev: Engage, why: WhyHold},
			{at: 2 * time.Second, obs: seen(65002, 65003), engaged: true},
			{at: 12 * time.Second, obs: seen(65002, 65003), ev: Release, why: WhyOthers},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.cfg, tc.steps) })
	}
}

func TestTurnedOffWhileEngaged(t *testing.T) {
	s, ev, _ := Step(cfg1, State{}, Input{Obs: seen(), Now: t0})
	if s.Engaged || ev != None {
		t.Fatalf("engaged before hold: %+v %v", s, ev)
	}
	s, ev, _ = Step(cfg1, s, Input{Obs: seen(), Now: t0.Add(3 * time.Second)})
	if !s.Engaged || ev != Engage {
		t.Fatalf("not engaged: %+v %v", s, ev)
	}
	s, ev, why := Step(config.FailOpen{}, s, Input{Obs: seen(), Now: t0.Add(4 * time.Second)})
	if s.Engaged || ev != Release || why != WhyDisabled {
		t.Errorf("got %+v %v %q, want released (disabled)", s, ev, why)
	}
}

func TestKept(t *testing.T) {
	for _, tc := range []struct {
		n    int
		self uint32
		oth  []uint32
		want bool
	}{
		{1, 65002, []uint32{65001}, true},
		{1, 65001, []uint32{65002}, false},
		{2, 65002, []uint32{65001, 65003}, true},
		{2, 65001, []uint32{65002, 65003}, false},
		{1, 0, []uint32{65001}, false},
		{1, 65001, nil, true},
	} {
		if got := Kept(tc.n, Observation{Known: true, Self: tc.self, Others: tc.oth}); got != tc.want {
			t.Errorf("Kept(%d, self %d, others %v) = %v", tc.n, tc.self, tc.oth, got)
		}
	}
}

// TestHugeReleaseKeptHolds: a release so long that twice it overflows a
// time.Duration (fail_open.release accepts "1500000h") must not turn the
// kept site's wait negative, making it let go at the first answer that
// shows another site: the kept one must wait longest.
func TestHugeReleaseKeptHolds(t *testing.T) {
	cfg := config.FailOpen{MinOtherSites: 1, Hold: 2 * time.Second, Release: 1500000 * time.Hour}
	kept := Observation{Known: true, Others: []uint32{65000}, Self: 65001} // the highest AS: kept
	run(t, cfg, []step{
		{at: 0, obs: seen()},
		{at: 2 * time.Second, obs: seen(), engaged: true, ev: Engage, why: WhyHold},
		{at: 3 * time.Second, obs: kept, engaged: true},
		{at: 4 * time.Second, obs: kept, engaged: true},
		{at: time.Hour, obs: kept, engaged: true},
	})
}
