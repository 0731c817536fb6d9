package daemon

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/guardbird"
	"github.com/rhi-daemon/rhi/internal/health"
)

var v100 = netip.MustParsePrefix("10.0.0.100/32")

// fakeAsker answers as the test says: the origins of the other sites per
// VIP (none unless set), or an error. It records the VIPs it was asked about.
type fakeAsker struct {
	mu      sync.Mutex
	origins map[netip.Prefix][]uint32
	err     error
	asked   chan []netip.Prefix // receives every question, if not nil
}

func (f *fakeAsker) set(p netip.Prefix, others ...uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.origins[p] = others
}

func (f *fakeAsker) Ask(_ context.Context, vips []netip.Prefix) guardbird.Answer {
	f.mu.Lock()
	a := guardbird.Answer{Err: f.err, Self: 65001, Origins: map[netip.Prefix][]uint32{}}
	for _, p := range vips {
		if f.err == nil {
			a.Origins[p] = f.origins[p] // none unless set
		}
	}
	ch := f.asked
	f.mu.Unlock()
	if ch != nil {
		ch <- vips
	}
	return a
}

func guardRig(t *testing.T, fo config.FailOpen) (*rig, *fakeAsker) {
	t.Helper()
	cfg := seed(config.Withdraw)
	cfg.FailOpen = fo
	r := newRig(t, cfg, newFakeLink())
	a := &fakeAsker{origins: map[netip.Prefix][]uint32{}}
	r.d.fo.ask = a
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	return r, a
}

// answer has the asker answer now and the loop take the answer, as the
// asking goroutine and the loop do every guardEvery.
func (r *rig) answer(t *testing.T, a *fakeAsker) {
	t.Helper()
	ans := a.Ask(context.Background(), []netip.Prefix{v100, netip.MustParsePrefix("10.0.0.101/32"), netip.MustParsePrefix("10.0.0.102/32")})
	ans.At = r.clock.now()
	r.d.takeGuard(context.Background(), ans)
}

func (r *rig) vipStatus(t *testing.T, p netip.Prefix) (reason string, desired bool, fo *struct {
	engaged bool
	sites   int
	err     string
}) {
	t.Helper()
	for _, v := range r.d.Status().VIPs {
		if v.Address == p.String() {
			if v.FailOpen == nil {
				return string(v.Reason), v.Desired, nil
			}
			return string(v.Reason), v.Desired, &struct {
				engaged bool
				sites   int
				err     string
			}{v.FailOpen.Engaged, v.FailOpen.OtherSites, v.FailOpen.Error}
		}
	}
	t.Fatalf("no status for %s", p)
	return
}

var fo1 = config.FailOpen{MinOtherSites: 1, Hold: 2 * time.Second, Release: 30 * time.Second}

// TestGuardEngagesAfterHoldAndReleasesOnHealth: health withdraws the VIP
// while another site announces it; that site goes; after hold the guard
// announces the VIP again, says so in /status and the log, and lets go
// when health returns, without a withdrawal in between.
func TestGuardEngagesAfterHoldAndReleasesOnHealth(t *testing.T) {
	r, a := guardRig(t, fo1)
	a.set(v100, 65002)
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	r.health.set(health.Down, api)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")

	a.set(v100) // the other site withdraws too
	r.answer(t, a)
	r.clock.advance(time.Second)
	r.answer(t, a)
	r.expect(t, "10.0.0.101 10.0.0.102")
	r.clock.advance(time.Second)
	r.answer(t, a)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.count(logrus.ErrorLevel, "fail-open guard engaged"); n != 1 {
		t.Errorf("%d engage lines, want 1", n)
	}
	reason, desired, fo := r.vipStatus(t, v100)
	if reason != string(guard.Reason) || !desired || fo == nil || !fo.engaged || fo.sites != 0 {
		t.Errorf("status: reason %q desired %v fail_open %+v", reason, desired, fo)
	}

	// Polls that keep health down keep it announced; so does the other
	// site coming back for less than release.
	a.set(v100, 65002)
	for range 5 {
		r.tick(t)
		r.answer(t, a)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	before := r.link.writeCount()
	r.health.set(health.Up, api)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if w := r.link.writeCount() - before; w != 0 {
		t.Errorf("health back under an engaged guard cost %d writes, want 0 (no flap)", w)
	}
	if n := r.count(logrus.ErrorLevel, "fail-open guard released"); n != 1 {
		t.Errorf("%d release lines, want 1", n)
	}
	if reason, _, fo := r.vipStatus(t, v100); reason != "healthy" || fo.engaged {
		t.Errorf("after health came back: reason %q, fail_open %+v", reason, fo)
	}
}

// TestGuardReleasesWhenOthersAnnounce: an engaged guard lets go once
// another site has announced the VIP for release (twice that, here: this
// site, AS 65001, is above 65000 and so kept).
func TestGuardReleasesWhenOthersAnnounce(t *testing.T) {
	r, a := guardRig(t, fo1)
	r.tick(t)
	r.health.set(health.Down, api)
	r.answer(t, a)
	r.tick(t) // 3 s later: past hold
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	a.set(v100, 65000)
	r.answer(t, a)
	for range 19 { // 57 s
		r.tick(t)
		r.answer(t, a)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	r.tick(t)
	r.answer(t, a) // 60 s
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.ErrorLevel, "fail-open guard released"); n != 1 {
		t.Errorf("%d release lines, want 1", n)
	}
}

// TestGuardBirdUnreachable: without an answer from BIRD the guard never
// engages, and /status and one warning say why; an engaged guard holds
// while BIRD is away.
func TestGuardBirdUnreachable(t *testing.T) {
	r, a := guardRig(t, fo1)
	a.err = errors.New("bird: dial \"/run/bird/bird.ctl\": connection refused")
	r.tick(t)
	r.health.set(health.Down, api)
	for range 5 {
		r.answer(t, a)
		r.tick(t)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.WarnLevel, "fail-open guard cannot ask BIRD"); n != 1 {
		t.Errorf("%d warnings, want 1", n)
	}
	if _, _, fo := r.vipStatus(t, v100); fo == nil || fo.sites != -1 || fo.err == "" {
		t.Errorf("status: fail_open %+v, want other_sites -1 and the error", fo)
	}

	a.err = nil
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.count(logrus.InfoLevel, "fail-open guard can ask BIRD again"); n != 1 {
		t.Errorf("%d lines saying BIRD is back, want 1", n)
	}
	a.err = errors.New("timeout")
	for range 5 {
		r.answer(t, a)
		r.tick(t)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	// An answer that stops coming (a stuck asker) is as good as none.
	a.err = nil
	r.d.fo.last = guardbird.Answer{}
	r.health.set(health.Up, api)
	r.tick(t)
	r.health.set(health.Down, api)
	r.answer(t, a)
	r.clock.advance(guardStale)
	r.tick(t)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
}

// TestGuardDrainWins: a drained VIP is withdrawn whatever the guard says,
// and the guard lets go of it.
func TestGuardDrainWins(t *testing.T) {
	r, a := guardRig(t, fo1)
	r.tick(t)
	r.health.set(health.Down, api)
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	r.d.takeDrain(context.Background(), drain.Update{Set: drain.Set{VIPs: map[netip.Prefix]bool{v100: true}}})
	r.expect(t, "10.0.0.101 10.0.0.102")
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.ErrorLevel, "fail-open guard released"); n != 1 {
		t.Errorf("%d release lines, want 1", n)
	}
	if reason, desired, fo := r.vipStatus(t, v100); reason == string(guard.Reason) || desired || fo.engaged {
		t.Errorf("drained: reason %q desired %v fail_open %+v", reason, desired, fo)
	}
}

// TestGuardOffByReload: a reload that turns the guard off releases it and
// drops fail_open from /status; one that turns it on starts asking.
func TestGuardOffByReload(t *testing.T) {
	r, a := guardRig(t, fo1)
	r.tick(t)
	r.health.set(health.Down, api)
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	off := *r.d.cfg
	off.FailOpen.MinOtherSites = 0
	r.d.applyReload(&off)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if _, _, fo := r.vipStatus(t, v100); fo != nil {
		t.Errorf("guard off, status still has fail_open %+v", fo)
	}
	if vips := <-r.d.fo.vips; len(vips) != 0 {
		t.Errorf("guard off, the asker still asks about %v", vips)
	}
}

// TestGuardOff: with fail_open off (the default) the daemon neither asks
// nor engages.
func TestGuardOff(t *testing.T) {
	r, a := guardRig(t, config.FailOpen{Hold: time.Second, Release: time.Second})
	r.tick(t)
	r.health.set(health.Down, api)
	for range 3 {
		r.answer(t, a)
		r.tick(t)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
	if _, _, fo := r.vipStatus(t, v100); fo != nil {
		t.Errorf("fail_open in status while off: %+v", fo)
	}
}

// TestRunAsksBird runs the whole loop with the asking goroutine: the
// guard's ticker fires, the asker is asked about every VIP, and the answer
// engages the guard.
func TestRunAsksBird(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.FailOpen = config.FailOpen{MinOtherSites: 1, Hold: time.Nanosecond, Release: time.Minute}
	link := newFakeLink()
	link.sets = make(chan struct{}, 64)
	h := newFakeHealth()
	h.set(health.Up, auth, admin, primary, reserve)
	h.set(health.Down, api)
	a := &fakeAsker{origins: map[netip.Prefix][]uint32{}, asked: make(chan []netip.Prefix, 1)}
	for i := range cfg.VIPs {
		a.origins[cfg.VIPs[i].Address] = nil
	}
	d := New(cfg, Deps{Health: h, Announcer: link, Guard: a})
	// The drain watcher may tick at the same interval: every ticker of
	// guardEvery fires together.
	var mu sync.Mutex
	var tickers []*fakeTicker
	d.newTicker = func(every time.Duration) ticker {
		ft := newFakeTicker()
		if every == guardEvery {
			mu.Lock()
			tickers = append(tickers, ft)
			mu.Unlock()
		}
		return ft
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	<-link.sets // the first tick: 10.0.0.100 withdrawn
	// The loop takes each answer when it gets to it: keep the asker busy
	// until the guard shows, bounded by time, not by a count of rounds
	// (under -race on a loaded machine 100 rounds can pass before the
	// loop runs once).
	deadline := time.Now().Add(10 * time.Second) // a failure bound, not a wait
	for {
		mu.Lock()
		for _, ft := range tickers {
			ft.fire()
		}
		mu.Unlock()
		select {
		case vips := <-a.asked:
			if len(vips) != 3 {
				t.Fatalf("asked about %v, want the 3 VIPs", vips)
			}
		case <-time.After(10 * time.Second): // a failure bound, not a wait
			t.Fatal("the asker was never asked")
		}
		if time.Now().After(deadline) {
			t.Fatal("the guard never engaged")
		}
		if link.text() == "10.0.0.100 10.0.0.101 10.0.0.102" {
			break
		}
		select {
		case <-link.sets:
		default:
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGuardLastSiteNeverWithdraws: a site that has been the only one
// announcing the VIP for hold when its health fails keeps it announced:
// no withdrawal at all, and the log says why.
func TestGuardLastSiteNeverWithdraws(t *testing.T) {
	r, a := guardRig(t, fo1)
	r.tick(t)
	r.answer(t, a) // nobody else, from now on
	r.tick(t)
	r.answer(t, a)
	before := r.link.writeCount()
	r.health.set(health.Down, api)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if w := r.link.writeCount() - before; w != 0 {
		t.Errorf("%d interface writes, want none", w)
	}
	if n := r.count(logrus.WarnLevel, "fail-open guard keeps it announced"); n != 1 {
		t.Errorf("%d lines saying the guard keeps it, want 1", n)
	}
	if n := r.count(logrus.InfoLevel, "vip unavailable: withdrawing"); n != 0 {
		t.Errorf("%d lines saying it is withdrawn, want 0", n)
	}
}

// TestGuardStatusTier: a VIP the guard announces is on the main interface
// at full weight, and /status says so: tier "announced", not "withdrawn"
// (rhi verify reads the tier there, and would skip checking how BIRD
// exports the VIP).
func TestGuardStatusTier(t *testing.T) {
	r, a := guardRig(t, fo1)
	r.tick(t)
	r.health.set(health.Down, api)
	r.answer(t, a)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	for _, v := range r.d.Status().VIPs {
		if v.Address == v100.String() && (!v.Desired || v.Tier != decide.TierAnnounced || v.OnDegraded) {
			t.Errorf("engaged guard: desired %v tier %q on_degraded %v, want true %q false", v.Desired, v.Tier, v.OnDegraded, decide.TierAnnounced)
		}
	}
}
