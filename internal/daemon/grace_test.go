package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/place"
)

// graceRig runs the seed's VIPs over rhi0, rhi1 and rhi2 with the guard
// off, drain_grace 5s (10.0.0.102: 0s) and a drain file; the grace timer
// is a fake the test fires, and the clock is the rig's.
type graceRig struct {
	*ladderRig
	path   string
	timers []time.Duration // what armGrace asked for, in order
	timer  *fakeTicker
}

func newGraceRig(t *testing.T, lr *fakeLink) *graceRig {
	t.Helper()
	cfg := seed(config.Withdraw)
	cfg.DrainFile = filepath.Join(t.TempDir(), "drain")
	for i := range cfg.VIPs {
		cfg.VIPs[i].DrainGrace = 5 * time.Second
	}
	cfg.VIPs[2].DrainGrace = 0
	r := &graceRig{ladderRig: newLadderRig(t, cfg, newFakeLink(), newFakeLink(), lr), path: cfg.DrainFile}
	r.d.env.newTicker = func(d time.Duration) ticker {
		r.timers = append(r.timers, d)
		r.timer = newFakeTicker()
		return r.timer
	}
	r.d.env.sleep = func(d time.Duration) { r.clock.advance(d) }
	return r
}

// look has the loop take the drain file as it is now.
func (r *graceRig) look(t *testing.T) {
	t.Helper()
	if u, ok := r.d.drains.drainW.Check(context.Background()); ok {
		r.d.takeDrain(context.Background(), u)
	}
}

// due advances the clock by d and has the loop handle the grace timer, as
// Run does when it fires.
func (r *graceRig) due(d time.Duration) {
	r.clock.advance(d)
	r.d.graceDue(context.Background())
}

func TestDrainGraceStepsDownThenWithdraws(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.tick(t)
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)

	writeDrain(t, r.path, false, "10.0.0.100", "10.0.0.102")
	r.clock.advance(100 * time.Millisecond)
	drainedAt := r.clock.now()
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	vs := r.status(t, v100)
	if vs.DrainPhase != PhaseDraining || !vs.DrainDeadline.Equal(drainedAt.Add(5*time.Second)) {
		t.Errorf("draining: phase %q deadline %v, want draining until %v", vs.DrainPhase, vs.DrainDeadline, drainedAt.Add(5*time.Second))
	}
	if vs := r.status(t, v102); vs.Tier != decide.TierWithdrawn || vs.OnInterface || vs.DrainPhase != PhaseDrained {
		t.Errorf("10.0.0.102 (drain_grace 0s): %+v, want withdrawn at once", vs)
	}
	if len(r.timers) != 1 || r.timers[0] != 5*time.Second {
		t.Fatalf("grace timers %v, want one of 5s", r.timers)
	}

	// A poll in the grace changes nothing, nor does a timer that fires
	// early; the deadline stays the one set when the drain was seen.
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
	r.due(2*time.Second - time.Nanosecond)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	if got := r.timers[len(r.timers)-1]; got != time.Nanosecond {
		t.Errorf("re-armed for %v, want the 1ns left", got)
	}

	r.due(time.Nanosecond)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
	if vs := r.status(t, v100); vs.DrainPhase != PhaseDrained || !vs.DrainDeadline.IsZero() {
		t.Errorf("after the grace: phase %q deadline %v, want drained", vs.DrainPhase, vs.DrainDeadline)
	}
	if r.d.drains.gr.timer != nil {
		t.Error("a grace timer is still armed with no grace running")
	}
	r.tick(t)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
	if n := r.count(logrus.InfoLevel, "drain grace over"); n != 1 {
		t.Errorf("%d 'drain grace over' lines, want 1", n)
	}
}

func TestUndrainDuringGraceBringsItBackAtOnce(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.tick(t)
	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.clock.advance(2 * time.Second)
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.look(t)
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)
	if vs := r.status(t, v100); vs.DrainPhase != "" || !vs.DrainDeadline.IsZero() {
		t.Errorf("undrained: phase %q deadline %v", vs.DrainPhase, vs.DrainDeadline)
	}
	if r.d.drains.gr.timer != nil {
		t.Error("the grace timer is still armed after the undrain")
	}
	// Drained again later: a new, full grace.
	r.clock.advance(10 * time.Second)
	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.due(4 * time.Second)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.due(time.Second)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
}

func TestDrainGraceHealthFailsWithdrawsAtOnce(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.tick(t)
	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.health.set(health.Down, api)
	r.clock.advance(time.Second)
	r.d.tick(context.Background())
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
}

func TestDrainGraceWithoutLastResortWithdrawsAtOnce(t *testing.T) {
	lr := newFakeLink()
	lr.exists = false
	r := newGraceRig(t, lr)
	r.tick(t)
	writeDrain(t, r.path, false, "10.0.0.100", "10.0.0.101")
	r.look(t)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
	if vs := r.status(t, v101); vs.OnInterface {
		t.Error("10.0.0.101 still announced")
	}
	for range 3 {
		r.tick(t)
	}
	if n := r.count(logrus.WarnLevel, "last-resort interface is missing: drained and stopping VIPs are withdrawn at once"); n != 1 {
		t.Errorf("missing last-resort interface logged %d times, want once", n)
	}
}

func TestDrainedAtStartUpStepsDown(t *testing.T) {
	// rhi restarts (or starts after `rhi drain --no-wait`) with the VIP
	// on rhi0 and drained in the file: it still steps down first.
	r := newGraceRig(t, newFakeLink())
	r.main.addrs[v100] = true
	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.due(5 * time.Second)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
}

func TestShutdownStepsDownForTheGrace(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.d.cfg.OnShutdown = config.ShutdownWithdraw
	r.tick(t)
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)
	// 10.0.0.101 was drained 3 s ago: its grace ends in 2 s, and the
	// stop keeps that deadline rather than granting a new one.
	writeDrain(t, r.path, false, "10.0.0.101")
	r.look(t)
	r.clock.advance(3 * time.Second)

	var slept []time.Duration
	var during string
	var phase string
	r.d.env.sleep = func(d time.Duration) {
		slept = append(slept, d)
		during = r.where()
		phase = r.status(t, v100).DrainPhase
		r.clock.advance(d)
	}
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	if len(slept) != 1 || slept[0] != 5*time.Second {
		t.Errorf("slept %v, want once for the 5s grace", slept)
	}
	if during != "rhi2" || phase != PhaseStopping {
		t.Errorf("during the grace 10.0.0.100 was on %s (phase %q), want rhi2 (stopping)", during, phase)
	}
	for _, l := range []*fakeLink{r.main, r.deg, r.lr} {
		if got := l.text(); got != "" {
			t.Errorf("after the stop an interface holds %q", got)
		}
	}
}

func TestShutdownGraceZeroWithdrawsAtOnce(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.d.cfg.OnShutdown = config.ShutdownWithdraw
	for i := range r.d.cfg.VIPs {
		r.d.cfg.VIPs[i].DrainGrace = 0
	}
	r.tick(t)
	r.d.env.sleep = func(d time.Duration) { t.Errorf("slept %v with drain_grace 0s", d) }
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	if got := r.main.text(); got != "" {
		t.Errorf("rhi0 holds %q", got)
	}
}

// count returns how many log lines at level or above contain msg.
func (r *graceRig) count(level logrus.Level, msg string) int {
	n := 0
	for _, e := range r.logs.AllEntries() {
		if e.Level <= level && strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// TestShutdownKeepFinishesDrains: with on_shutdown: keep, a drain still in
// its grace is finished (waited for, then withdrawn); the other VIPs stay.
func TestShutdownKeepFinishesDrains(t *testing.T) {
	r := newGraceRig(t, newFakeLink())
	r.tick(t)
	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.clock.advance(2 * time.Second)
	var slept []time.Duration
	r.d.env.sleep = func(d time.Duration) { slept = append(slept, d); r.clock.advance(d) }
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	if len(slept) != 1 || slept[0] != 3*time.Second {
		t.Errorf("slept %v, want once for the 3s left of the grace", slept)
	}
	if got := r.where(); got != "none" {
		t.Errorf("the drained VIP is on %s after the stop, want none", got)
	}
	if got := r.main.text(); got != "10.0.0.101 10.0.0.102" {
		t.Errorf("rhi0 holds %q after a keeping stop, want the undrained VIPs", got)
	}
}

// TestDrainGraceFailOpenKeepsLastResort: with the fail-open guard on and
// nobody else serving, a VIP whose health fails during its drain's grace
// stays in last resort (the guard's rule) until the grace ends, and is
// then withdrawn: the drain wins over the guard.
func TestDrainGraceFailOpenKeepsLastResort(t *testing.T) {
	cfg := ladderSeed()
	for i := range cfg.VIPs {
		cfg.VIPs[i].DrainGrace = 5 * time.Second
	}
	r := &graceRig{ladderRig: newLadderRig(t, cfg, newFakeLink(), newFakeLink(), newFakeLink()), path: cfg.DrainFile}
	r.d.env.newTicker = func(time.Duration) ticker { r.timer = newFakeTicker(); return r.timer }
	r.tick(t)
	r.answer()
	r.answer()
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)

	writeDrain(t, r.path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.fail()
	r.clock.advance(time.Second)
	r.d.tick(context.Background())
	r.answer()
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonDraining)
	r.due(3 * time.Second)
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
}
