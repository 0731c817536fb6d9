package daemon

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/router"
)

// nodeHealth answers every poll with the node counts set per key.
type nodeHealth struct {
	mu   sync.Mutex
	snap health.Snapshot
}

func (n *nodeHealth) set(key string, healthy, total int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v := health.Up
	if healthy == 0 {
		v = health.Down
	}
	n.snap[key] = health.Result{Verdict: v, Healthy: int32(healthy), Total: int32(total)}
}

func (n *nodeHealth) Poll(ctx context.Context, ups []health.Upstream) health.Snapshot {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := health.Snapshot{}
	for _, u := range ups {
		out[u.Key] = n.snap[u.Key]
	}
	return out
}

type tierRig struct {
	d         *Daemon
	health    *nodeHealth
	main, deg *fakeLink
	clock     *clock
	logs      *logtest.Hook
}

const tierVIP = "10.0.0.100/32"

// newTierRig runs one VIP (rise 1, fall 2) of api with degraded.below 50%
// over rhi0 and rhi1.
func newTierRig(t *testing.T, main, deg *fakeLink) *tierRig {
	t.Helper()
	cfg := seed(config.Withdraw)
	cfg.VIPs = cfg.VIPs[:1]
	cfg.VIPs[0].Fall = 2
	cfg.VIPs[0].Degraded = config.Degraded{Below: 50}
	cfg.Degraded = config.Degraded{Below: 50, Interface: "rhi1"}
	cfg.DrainFile = filepath.Join(t.TempDir(), "drain")
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &tierRig{health: &nodeHealth{snap: health.Snapshot{}}, main: main, deg: deg, clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	r.d = New(cfg, Deps{Health: r.health, Announcer: main, Degraded: deg, Log: log, Now: r.clock.now})
	return r
}

func (r *tierRig) tick(t *testing.T, healthy int) {
	t.Helper()
	r.health.set(api, healthy, 4)
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
}

func (r *tierRig) expect(t *testing.T, main, deg string, tier decide.Tier) {
	t.Helper()
	if got := r.main.text(); got != main {
		t.Errorf("rhi0 holds %q, want %q", got, main)
	}
	if got := r.deg.text(); got != deg {
		t.Errorf("rhi1 holds %q, want %q", got, deg)
	}
	s := r.d.Status()
	if got := s.VIPs[0].Tier; got != tier {
		t.Errorf("status tier %q, want %q", got, tier)
	}
	if on := s.VIPs[0].OnInterface; on != (main != "" || deg != "") {
		t.Errorf("status on_interface %v with rhi0 %q rhi1 %q", on, main, deg)
	}
	if s.VIPs[0].OnDegraded != (deg != "") {
		t.Errorf("status on_degraded_interface %v with rhi1 %q", s.VIPs[0].OnDegraded, deg)
	}
}

// TestDegradedTierMoves: a VIP moves between the interfaces as its share
// crosses the threshold, after fall polls down and rise polls up, and is on
// exactly one of them at the end of every tick.
func TestDegradedTierMoves(t *testing.T) {
	r := newTierRig(t, newFakeLink(), newFakeLink())
	const ip = "10.0.0.100"
	r.tick(t, 4)
	r.expect(t, ip, "", decide.TierAnnounced)
	r.tick(t, 1) // below, 1 of fall 2
	r.expect(t, ip, "", decide.TierAnnounced)
	r.tick(t, 3) // back above: the run breaks
	r.expect(t, ip, "", decide.TierAnnounced)
	r.tick(t, 1)
	r.tick(t, 1)
	r.expect(t, "", ip, decide.TierDegraded)
	if got := r.d.confirmJob().In.VIPs[0].Tier; got != router.TierDegraded {
		t.Errorf("confirmation checks tier %q, want %q", got, router.TierDegraded)
	}
	if n := countLogs(r.logs, "vip below its healthy share: announcing it degraded"); n != 1 {
		t.Errorf("%d degrade log lines, want 1", n)
	}
	r.tick(t, 2) // exactly 50 %: not below; rise 1
	r.expect(t, ip, "", decide.TierAnnounced)
	if got := r.d.confirmJob().In.VIPs[0].Tier; got != router.TierFull {
		t.Errorf("confirmation checks tier %q, want %q", got, router.TierFull)
	}
	r.tick(t, 0) // down, 1 of fall 2
	r.expect(t, ip, "", decide.TierAnnounced)
	r.tick(t, 0) // withdrawn from both
	r.expect(t, "", "", decide.TierWithdrawn)
	r.tick(t, 1) // available again, below: straight to degraded
	r.expect(t, "", ip, decide.TierDegraded)
}

// TestDegradedTierDrainAndShutdown: a drain takes a degraded VIP off both
// interfaces; on_shutdown withdraw empties both.
func TestDegradedTierDrainAndShutdown(t *testing.T) {
	r := newTierRig(t, newFakeLink(), newFakeLink())
	r.tick(t, 1)
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	writeDrain(t, r.d.cfg.DrainFile, true)
	if u, ok := r.d.drains.drainW.Check(context.Background()); ok {
		r.d.takeDrain(context.Background(), u)
	}
	r.expect(t, "", "", decide.TierWithdrawn)
	writeDrain(t, r.d.cfg.DrainFile, false)
	if u, ok := r.d.drains.drainW.Check(context.Background()); ok {
		r.d.takeDrain(context.Background(), u)
	}
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	r.d.cfg.OnShutdown = config.ShutdownWithdraw
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	if r.main.text() != "" || r.deg.text() != "" {
		t.Errorf("after shutdown: rhi0 %q rhi1 %q", r.main.text(), r.deg.text())
	}
}

// TestDegradedTierStartUp: a VIP found on rhi1 at start-up is taken as
// announced degraded and not moved while its share stays below.
func TestDegradedTierStartUp(t *testing.T) {
	r := newTierRig(t, newFakeLink(), newFakeLink(tierVIP))
	r.tick(t, 1)
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	if w := r.deg.writeCount() + r.main.writeCount(); w != 0 {
		t.Errorf("%d writes at a start-up that changes nothing", w)
	}
}

// TestDegradedTierMissingInterface: without rhi1 a degraded VIP is
// announced at full weight and the error is logged once.
func TestDegradedTierMissingInterface(t *testing.T) {
	deg := newFakeLink()
	deg.exists = false
	r := newTierRig(t, newFakeLink(), deg)
	r.tick(t, 1)
	r.tick(t, 1)
	if got := r.main.text(); got != "10.0.0.100" {
		t.Errorf("rhi0 holds %q, want the VIP at full weight", got)
	}
	if n := countLogs(r.logs, "the degraded interface is missing"); n != 1 {
		t.Errorf("%d log lines about the missing interface, want 1", n)
	}
	// With no VIP needing it, a missing rhi1 says nothing.
	r2 := newTierRig(t, newFakeLink(), deg)
	r2.tick(t, 4)
	if n := countLogs(r2.logs, "the degraded interface is missing"); n != 0 {
		t.Errorf("%d log lines about a missing rhi1 nobody needs", n)
	}
}

// TestDegradedTierOrphanOnRhi1: a VIP dropped by a reload is withdrawn
// from rhi1 as well.
func TestDegradedTierOrphanOnRhi1(t *testing.T) {
	r := newTierRig(t, newFakeLink(), newFakeLink())
	r.tick(t, 1)
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	next := *r.d.cfg
	next.VIPs = nil
	r.d.applyReload(&next)
	r.tick(t, 1)
	if r.main.text() != "" || r.deg.text() != "" {
		t.Errorf("after the reload: rhi0 %q rhi1 %q", r.main.text(), r.deg.text())
	}
	if len(r.d.set.orphans) != 0 {
		t.Errorf("orphans left: %v", r.d.set.orphans)
	}
}

func countLogs(h *logtest.Hook, msg string) int {
	n := 0
	for _, e := range h.AllEntries() {
		if strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// TestDegradedTierReload: a reload that turns a VIP's tier off moves it
// back to full weight at once; one that lowers the threshold below its share
// restores it after its rise polls; a VIP that stays is not flapped.
func TestDegradedTierReload(t *testing.T) {
	r := newTierRig(t, newFakeLink(), newFakeLink())
	r.tick(t, 1)
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	lower := *r.d.cfg
	lower.VIPs = []config.VIP{lower.VIPs[0]}
	lower.VIPs[0].Degraded.Below = 20 // 25 % is not below 20 %
	r.d.applyReload(&lower)
	writes := r.main.writeCount() + r.deg.writeCount()
	r.d.reapply(context.Background())
	if w := r.main.writeCount() + r.deg.writeCount(); w != writes {
		t.Errorf("the reload itself wrote %d times", w-writes)
	}
	r.tick(t, 1) // rise 1: restored
	r.expect(t, "10.0.0.100", "", decide.TierAnnounced)
	r.tick(t, 0)
	r.tick(t, 0)
	r.tick(t, 1) // back, still above 20 %? 1 of 4 is 25 %: announced
	r.expect(t, "10.0.0.100", "", decide.TierAnnounced)
	off := lower
	off.VIPs = []config.VIP{lower.VIPs[0]}
	off.VIPs[0].Degraded.Below = 90
	r.d.applyReload(&off)
	r.tick(t, 1)
	r.tick(t, 1) // fall 2
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
	off.VIPs = []config.VIP{off.VIPs[0]}
	off.VIPs[0].Degraded.Below = 0
	r.d.applyReload(&off)
	r.tick(t, 1) // tier off: at full weight at once
	r.expect(t, "10.0.0.100", "", decide.TierAnnounced)
}

// TestDegradedTierOwnership: at start-up, an address the ownership record
// lists that is on rhi1 but no longer configured is withdrawn from rhi1;
// a host address on rhi1 that rhi neither has nor recorded is reported as
// unmanaged, and left in place under unmanaged_addresses: report.
func TestDegradedTierOwnership(t *testing.T) {
	main, deg := newFakeLink(), newFakeLink("10.0.0.9/32", "10.0.0.77/32")
	r := newTierRig(t, main, deg)
	rec := owned.File(filepath.Join(t.TempDir(), "owned"))
	if err := rec.Write(owned.Record{Iface: "rhi0", VIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.9/32")}}); err != nil {
		t.Fatal(err)
	}
	r.d.own.file = rec
	r.tick(t, 1)
	r.tick(t, 1)
	if got := deg.text(); got != "10.0.0.77 10.0.0.100" {
		t.Errorf("rhi1 holds %q, want the degraded VIP and the unmanaged address", got)
	}
	if got := r.d.Status().Interface.Unmanaged; !slices.Equal(got, []string{"10.0.0.77/32"}) {
		t.Errorf("unmanaged %v, want [10.0.0.77/32]", got)
	}
	if len(r.d.set.orphans) != 0 {
		t.Errorf("orphans left: %v", r.d.set.orphans)
	}
	r.d.cfg.Unmanaged = config.UnmanagedWithdraw
	r.tick(t, 1)
	r.tick(t, 1)
	if got := deg.text(); got != "10.0.0.100" {
		t.Errorf("under unmanaged_addresses: withdraw, rhi1 holds %q", got)
	}
}

// TestUnmanagedOnRhi1WithTierOff: with no VIP using the degraded tier (a
// host that runs tiers.conf for the fail-open guard only), a host address
// on rhi1 is still announced by BIRD, degraded, with no health check.
// rhi reports it, and under unmanaged_addresses: withdraw it must delete
// it, not only say that it does.
func TestUnmanagedOnRhi1WithTierOff(t *testing.T) {
	main, deg := newFakeLink(), newFakeLink("10.0.0.77/32")
	r := newTierRig(t, main, deg)
	r.d.cfg.VIPs[0].Degraded = config.Degraded{}
	r.d.cfg.Degraded.Below = 0
	r.d.cfg.Unmanaged = config.UnmanagedWithdraw
	for range 3 {
		r.tick(t, 4)
	}
	if got := deg.text(); got != "" {
		t.Errorf("under unmanaged_addresses: withdraw, rhi1 still holds %q", got)
	}
	if got := r.d.Status().Interface.Unmanaged; len(got) != 0 {
		t.Errorf("unmanaged %v after the withdrawal, want none", got)
	}
}

// TestDegradedStaysWhenRecordUnwritable: a degraded VIP found on rhi1 at
// start-up that the ownership record does not list stays there while the
// record cannot be written, as a VIP found on rhi0 does ("VIPs already on
// the interface stay as health says"): a full disk must not withdraw it.
func TestDegradedStaysWhenRecordUnwritable(t *testing.T) {
	main, deg := newFakeLink(), newFakeLink(tierVIP)
	r := newTierRig(t, main, deg)
	r.d.own.file = &fakeRecord{File: owned.File(filepath.Join(t.TempDir(), "owned")), link: main, fail: errors.New("no space left on device")}
	r.tick(t, 1)
	r.tick(t, 1)
	r.expect(t, "", "10.0.0.100", decide.TierDegraded)
}
