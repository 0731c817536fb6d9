package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/router"
)

func newConfirmRig(t *testing.T, link *fakeLink) (*rig, *fakeBird) {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &rig{health: newFakeHealth(), link: link, clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	b := newFakeBird(link)
	cfg := seed(config.Withdraw)
	cfg.Bird.Socket = "/run/bird/bird.ctl"
	r.d = New(cfg, Deps{Health: r.health, Announcer: link, Log: log, Now: r.clock.now, Confirmer: b})
	return r, b
}

// confirm runs what the confirmer goroutine would: one check of the job
// the last tick submitted.
func (r *rig) confirm(t *testing.T) bool {
	t.Helper()
	select {
	case r.job = <-r.d.conf.jobs:
	default:
	}
	return r.d.conf.once(context.Background(), r.job)
}

func TestConfirmAfterChange(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.clock.advance(40 * time.Millisecond)
	if !r.confirm(t) {
		t.Fatal("BIRD should agree")
	}
	st := r.d.Status()
	if st.Bird.Agree != 3 || st.Bird.Disagree != 0 || st.Bird.Error != "" {
		t.Errorf("bird status = %+v", st.Bird)
	}
	vb := st.VIPs[0].Bird
	if vb == nil || !vb.Agrees || vb.Latency != 40*time.Millisecond {
		t.Errorf("vip bird = %+v, want agreeing 40ms after the change", vb)
	}
	// Nothing changes: the next tick asks nothing.
	r.tick(t)
	select {
	case <-r.d.conf.jobs:
		t.Error("a tick without change requested a confirmation")
	default:
	}
	if b.checks != 1 {
		t.Errorf("%d checks, want 1", b.checks)
	}
}

func TestConfirmBirdAway(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	b.err = errors.New(`bird: dial "/run/bird/bird.ctl": connect: no such file or directory`)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	for range 3 {
		if r.confirm(t) {
			t.Fatal("an unreachable BIRD cannot agree")
		}
	}
	st := r.d.Status()
	if st.Bird.Error == "" {
		t.Errorf("status does not report BIRD away: %+v", st.Bird)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102") // the interface is managed regardless
	if n := r.count(logrus.WarnLevel, "cannot confirm through BIRD"); n != 1 {
		t.Errorf("BIRD away logged %d times, want once", n)
	}
	b.err = nil
	if !r.confirm(t) {
		t.Error("BIRD back: should agree")
	}
	if r.count(logrus.InfoLevel, "BIRD reachable again") != 1 {
		t.Error("recovery not logged")
	}
}

// TestConfirmMissedNetlink plays BIRD missing the deletion of a VIP (a
// netlink overflow): rhi reports it, renews the address after
// confirm.RenewAfter, and BIRD then agrees.
func TestConfirmMissedNetlink(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)

	gone := netip.MustParsePrefix("10.0.0.100/32")
	b.missed[gone] = true // BIRD will not hear about the deletion
	r.health.set(health.Down, api)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if r.confirm(t) {
		t.Fatal("BIRD still has the VIP: should disagree")
	}
	if vb := r.d.Status().VIPs[0].Bird; vb == nil || vb.Agrees || !vb.InTable {
		t.Fatalf("vip bird = %+v, want a disagreement with the VIP in BIRD's table", vb)
	}
	r.clock.advance(confirm.RenewAfter)
	r.confirm(t)
	var m map[netip.Prefix]bool
	select {
	case m = <-r.d.in.renewals:
	default:
		t.Fatal("no renewal requested")
	}
	if len(m) != 1 || m[gone] {
		t.Fatalf("renewal = %v, want %s absent", m, gone)
	}
	r.d.renew(context.Background(), m)
	if len(link.renewed) != 1 || link.renewed[0] != "10.0.0.100/32" {
		t.Fatalf("renewed %v", link.renewed)
	}
	r.clock.advance(time.Second)
	if !r.confirm(t) {
		t.Fatalf("after the renewal BIRD should agree: %+v", r.d.Status().Bird)
	}
	// Put right within the grace period: no error for the operator.
	if n := r.count(logrus.ErrorLevel, "BIRD disagrees"); n != 0 {
		t.Errorf("%d disagreement errors for a miss the renewal repaired in time", n)
	}
}

func TestConfirmWarnsAfterGrace(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	stuck := netip.MustParsePrefix("10.0.0.101/32")
	b.missed[stuck] = false // BIRD never sees the add
	r.d.ann = noRenew{r.link}
	r.tick(t)
	r.confirm(t)
	if n := r.count(logrus.ErrorLevel, "BIRD disagrees"); n != 0 {
		t.Fatalf("warned before the grace period")
	}
	r.clock.advance(confirm.Grace)
	r.confirm(t)
	r.clock.advance(time.Second)
	r.confirm(t)
	if n := r.count(logrus.ErrorLevel, "BIRD disagrees"); n != 1 {
		t.Errorf("disagreement logged %d times, want once", n)
	}
}

// noRenew is an interface whose renewals fail, as on a kernel that refuses.
type noRenew struct{ *fakeLink }

func (noRenew) Renew(context.Context, netip.Prefix, bool) error { return errors.New("refused") }

func TestShutdownWithdrawWaitsForBird(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.d.cfg.OnShutdown = "withdraw"
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "")
	if b.checks == 0 || r.count(logrus.InfoLevel, "BIRD confirms every VIP withdrawn") != 1 {
		t.Errorf("shutdown did not wait for BIRD (%d checks)", b.checks)
	}
}

// TestConfirmAfterRepair: a VIP deleted by hand and put back within one Set
// leaves the present set as it was, but BIRD saw it go: confirm again.
func TestConfirmAfterRepair(t *testing.T) {
	r, _ := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	r.tick(t)
	if n := len(r.d.conf.jobs); n != 0 {
		t.Fatal("a tick without change asked for a confirmation")
	}
	r.link.do(func(l *fakeLink) { delete(l.addrs, netip.MustParsePrefix("10.0.0.101/32")) })
	r.tick(t)
	if n := len(r.d.conf.jobs); n != 1 {
		t.Error("a repaired VIP was not confirmed")
	}
	r.confirm(t)
	r.link.do(func(l *fakeLink) { l.down = true })
	r.tick(t)
	if n := len(r.d.conf.jobs); n != 1 {
		t.Error("the link going down was not confirmed")
	}
}

// TestNoRenewalOnADownLink: BIRD has no route for any VIP of a down link;
// that is not a missed notification and renewing cannot help.
func TestNoRenewalOnADownLink(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	link.do(func(l *fakeLink) { l.down = true })
	for p := range link.addrs {
		b.missed[p] = false // BIRD dropped the down link's routes
	}
	r.tick(t)
	for range 3 {
		r.clock.advance(confirm.RenewAfter)
		r.confirm(t)
	}
	select {
	case m := <-r.d.in.renewals:
		t.Fatalf("renewal requested on a down link: %v", m)
	default:
	}
	if len(link.renewed) != 0 {
		t.Errorf("renewed %v", link.renewed)
	}
}

// takeRenewals hands the loop what the confirmer asked to renew, as Run
// would, and returns it.
func (r *rig) takeRenewals(t *testing.T) map[netip.Prefix]bool {
	t.Helper()
	select {
	case m := <-r.d.in.renewals:
		r.d.renew(context.Background(), m)
		return m
	default:
		return nil
	}
}

// TestRenewalGivesUp: BIRD that never takes an address from the interface
// (its direct protocol does not cover it) is not a missed notification.
// rhi renews at most confirm.MaxRenewals times, says so once, and leaves the
// serving address alone until the VIP changes.
func TestRenewalGivesUp(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	link.onRenew = nil // renewing does not help
	p := netip.MustParsePrefix("10.0.0.100/32")
	b.missed[p] = false
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	renewals := 0
	for range 10 {
		r.clock.advance(confirm.RenewAfter)
		r.confirm(t)
		renewals += len(r.takeRenewals(t))
	}
	if renewals != confirm.MaxRenewals {
		t.Errorf("%d renewals, want %d", renewals, confirm.MaxRenewals)
	}
	if n := r.count(logrus.ErrorLevel, "stops renewing"); n != 1 {
		t.Errorf("giving up logged %d times, want once", n)
	}
	if got := r.d.Status().VIPs[0].Bird.Renewed; got != confirm.MaxRenewals {
		t.Errorf("status counts %d renewals, want %d", got, confirm.MaxRenewals)
	}
	// A new change of the VIP may be a case renewing helps again.
	r.health.set(health.Down, api)
	r.tick(t)
	r.health.set(health.Up, api)
	r.tick(t)
	r.confirm(t)
	r.clock.advance(confirm.RenewAfter)
	r.confirm(t)
	if m := r.takeRenewals(t); len(m) != 1 {
		t.Errorf("after a new change: renewals %v, want %s", m, p)
	}
}

// TestRenewalsArePaced: a large batch BIRD missed is renewed confirm.RenewBatch
// addresses at a time, one confirmation after the other, not all at once.
func TestRenewalsArePaced(t *testing.T) {
	const n = 2*confirm.RenewBatch + confirm.RenewBatch/2
	cfg := seed(config.Withdraw)
	cfg.VIPs = nil
	for i := range n {
		cfg.VIPs = append(cfg.VIPs, vipCfg(fmt.Sprintf("10.1.%d.%d/32", i/250, i%250+1), config.All, api))
	}
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.d = New(cfg, Deps{Health: r.health, Announcer: link, Log: r.d.log, Now: r.clock.now, Confirmer: b})
	r.health.set(health.Up, api)
	r.tick(t)
	for i := range cfg.VIPs {
		b.missed[cfg.VIPs[i].Address] = false // BIRD missed every add
	}
	r.confirm(t)
	r.clock.advance(confirm.RenewAfter)
	var batches []int
	for range 5 {
		r.confirm(t)
		if m := r.takeRenewals(t); len(m) > 0 {
			batches = append(batches, len(m))
		}
	}
	if want := []int{confirm.RenewBatch, confirm.RenewBatch, confirm.RenewBatch / 2}; !slices.Equal(batches, want) {
		t.Errorf("renewal batches %v, want %v", batches, want)
	}
	if !r.confirm(t) {
		t.Errorf("BIRD should agree after the renewals: %+v", r.d.Status().Bird)
	}
}

// TestConfirmLatencyOfALaterDisagreement: once BIRD agreed with a change,
// the time to agree after a later disagreement (BIRD restarted, say)
// counts from that disagreement, not from the change an hour before.
func TestConfirmLatencyOfALaterDisagreement(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.clock.advance(30 * time.Millisecond)
	r.confirm(t)
	p := netip.MustParsePrefix("10.0.0.100/32")
	r.clock.advance(time.Hour)
	b.missed[p] = false // BIRD lost the route
	r.confirm(t)
	r.clock.advance(700 * time.Millisecond)
	delete(b.missed, p) // and has it again
	r.confirm(t)
	if vb := r.d.Status().VIPs[0].Bird; !vb.Agrees || vb.Latency != 700*time.Millisecond {
		t.Errorf("vip bird = %+v, want agreeing with a latency of 700ms", vb)
	}
}

// TestConfirmBirdAwayMarksStale: while BIRD cannot be reached, what it said
// before is marked stale, so nobody reads an old "agrees" as current.
func TestConfirmBirdAwayMarksStale(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	ok := r.d.Status().Bird.LastOK
	if ok.IsZero() || r.d.Status().VIPs[0].Bird.Stale {
		t.Fatalf("after a good check: %+v", r.d.Status().Bird)
	}
	b.err = errors.New("dial unix /run/bird/bird.ctl: connect: connection refused")
	r.clock.advance(time.Minute)
	r.confirm(t)
	st := r.d.Status()
	if vb := st.VIPs[0].Bird; !vb.Stale {
		t.Errorf("vip bird = %+v, want stale", vb)
	}
	if !st.Bird.LastOK.Equal(ok) || !st.Bird.LastCheck.After(ok) {
		t.Errorf("last ok %v, last check %v: want the ok unchanged and a later check", st.Bird.LastOK, st.Bird.LastCheck)
	}
	b.err = nil
	r.confirm(t)
	if vb := r.d.Status().VIPs[0].Bird; vb.Stale || !vb.Agrees {
		t.Errorf("BIRD back: vip bird = %+v", vb)
	}
}

// TestConfirmRecordsExpectation: a record says what it was checked
// against, so that `rhi drain` does not take a check made before the
// drain for its confirmation.
func TestConfirmRecordsExpectation(t *testing.T) {
	r, _ := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	if vb := r.d.Status().VIPs[0].Bird; vb.Expected != router.Present {
		t.Fatalf("vip bird = %+v, want expected present", vb)
	}
	r.health.set(health.Down, api)
	r.tick(t)
	r.confirm(t)
	if vb := r.d.Status().VIPs[0].Bird; vb.Expected != router.Absent || !vb.Agrees {
		t.Fatalf("vip bird = %+v, want agreeing on absent", vb)
	}
}

// TestNoRenewalWithoutDirect: with no direct protocol up in BIRD, no VIP can
// be in its table. That is BIRD's state, not a missed notification:
// renewing serving addresses cannot help, so rhi does not.
func TestNoRenewalWithoutDirect(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	b.directDown = true
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	for range 3 {
		if r.confirm(t) {
			t.Fatal("BIRD has none of the VIPs: should disagree")
		}
		r.clock.advance(confirm.RenewAfter)
	}
	select {
	case m := <-r.d.in.renewals:
		t.Fatalf("renewal requested with no direct protocol up: %v", m)
	default:
	}
	if len(link.renewed) != 0 {
		t.Errorf("renewed %v", link.renewed)
	}
	if n := r.count(logrus.ErrorLevel, "BIRD cannot announce VIPs"); n != 1 {
		t.Errorf("the missing direct protocol logged %d times, want once", n)
	}
	b.directDown = false
	if !r.confirm(t) {
		t.Errorf("direct protocol back: BIRD should agree: %+v", r.d.Status().Bird)
	}
	if n := r.count(logrus.InfoLevel, "BIRD problems cleared"); n != 1 {
		t.Errorf("the recovery logged %d times, want once", n)
	}
}

// TestConfirmLogsOneLinePerProblem: VIPs that disagree for the same reason
// (here BIRD never sees two of them; a session down does the same to all)
// are one error line, not one per VIP; a different problem has its own
// line; the VIPs agreeing again are one warning.
func TestConfirmLogsOneLinePerProblem(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)

	unseen := []netip.Prefix{netip.MustParsePrefix("10.0.0.101/32"), netip.MustParsePrefix("10.0.0.102/32")}
	for _, p := range unseen {
		b.missed[p] = false // BIRD lost them
	}
	stale := netip.MustParsePrefix("10.0.0.100/32")
	b.missed[stale] = true // BIRD misses the withdrawal
	r.d.ann = noRenew{r.link}
	r.health.set(health.Down, api)
	r.tick(t)
	r.confirm(t)
	r.clock.advance(confirm.Grace)
	r.confirm(t)
	r.clock.advance(time.Second)
	r.confirm(t)

	var lines []string
	for _, e := range r.logs.AllEntries() {
		if e.Message == "BIRD disagrees with the interface" {
			lines = append(lines, fmt.Sprintf("%v %v %v", e.Data["vip"], e.Data["vips"], e.Data["problem"]))
		}
	}
	want := []string{
		"10.0.0.100/32 <nil> interface false, bird table true",
		"10.0.0.101/32, 10.0.0.102/32 2 interface true, bird table false",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("disagreements logged (-want +got):\n%s", diff)
	}

	clear(b.missed)
	r.confirm(t)
	if n := r.count(logrus.WarnLevel, "BIRD agrees now"); n != 1 {
		t.Errorf("agreement logged %d times, want once for the 3 VIPs", n)
	}
}
