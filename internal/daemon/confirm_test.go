package daemon

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
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
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
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
	b.err = errors.New("dial unix /run/bird/bird.ctl: connect: no such file or directory")
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
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

// TestConfirmMissedNetlink plays BIRD missing the deletion of a VIP (the
// netlink overflow of SPEC §5): rhi reports it, renews the address after
// renewAfter, and BIRD then agrees.
func TestConfirmMissedNetlink(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)

	gone := netip.MustParsePrefix("10.0.0.100/32")
	b.missed[gone] = true // BIRD will not hear about the deletion
	r.health.set(apisix.Down, api)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if r.confirm(t) {
		t.Fatal("BIRD still has the VIP: should disagree")
	}
	if vb := r.d.Status().VIPs[0].Bird; vb == nil || vb.Agrees || !vb.InTable {
		t.Fatalf("vip bird = %+v, want a disagreement with the VIP in BIRD's table", vb)
	}
	r.clock.advance(renewAfter)
	r.confirm(t)
	var m map[netip.Prefix]bool
	select {
	case m = <-r.d.renewals:
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
	r.clock.advance(confirmGrace)
	r.expect(t, "10.0.0.101 10.0.0.102")
}

func TestConfirmWarnsAfterGrace(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
	stuck := netip.MustParsePrefix("10.0.0.101/32")
	b.missed[stuck] = false // BIRD never sees the add
	r.d.ann = noRenew{r.link}
	r.tick(t)
	r.confirm(t)
	if n := r.count(logrus.ErrorLevel, "BIRD disagrees"); n != 0 {
		t.Fatalf("warned before the grace period")
	}
	r.clock.advance(confirmGrace)
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
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
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
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
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
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	link.do(func(l *fakeLink) { l.down = true })
	for p := range link.addrs {
		b.missed[p] = false // BIRD dropped the down link's routes
	}
	r.tick(t)
	for range 3 {
		r.clock.advance(renewAfter)
		r.confirm(t)
	}
	select {
	case m := <-r.d.renewals:
		t.Fatalf("renewal requested on a down link: %v", m)
	default:
	}
	if len(link.renewed) != 0 {
		t.Errorf("renewed %v", link.renewed)
	}
}
