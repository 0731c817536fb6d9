//go:build integration

package tiers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// The ladder lab runs rhi itself on two sites with tiers.conf and the
// fail-open guard, and judges by what the router holds, sampled every
// sampleEvery: never by rhi's timers.
const (
	ladderPoll  = 200 * time.Millisecond // rhi's apisix_poll_interval
	ladderHold  = 2 * time.Second        // fail_open.hold
	sampleEvery = 20 * time.Millisecond  // the router's sampling
	// ladderYAML turns the guard on; the last-resort interface is the
	// default rhi2 and site_id BIRD's router id.
	ladderYAML = "fail_open:\n  min_other_sites: 1\n  hold: 2s\n"
)

// mark is one path the router holds for the VIP.
type mark struct {
	proto      string // the router's protocol it came from, e.g. "dc1_4"
	best       bool
	lastResort bool // GRACEFUL_SHUTDOWN and (AS, 1, 2)
}

// look is one sample of the router.
type look struct {
	at    time.Time
	paths []mark
}

func (l look) String() string {
	if len(l.paths) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range l.paths {
		s := p.proto
		if p.lastResort {
			s += "(lr)"
		}
		if p.best {
			s += "*"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// allLastResort: the router holds at least one path, every one last resort.
func (l look) allLastResort() bool {
	return len(l.paths) > 0 && !slices.ContainsFunc(l.paths, func(m mark) bool { return !m.lastResort })
}

// bestFrom: the router's best path is proto's, serving (not last resort).
func (l look) bestFrom(proto string) bool {
	return slices.ContainsFunc(l.paths, func(m mark) bool { return m.best && m.proto == proto && !m.lastResort })
}

func (l look) has(proto string) bool {
	return slices.ContainsFunc(l.paths, func(m mark) bool { return m.proto == proto })
}

// recorder samples the router's paths for vip4 every sampleEvery and keeps
// every look.
type recorder struct {
	mu    sync.Mutex
	looks []look
	err   error
}

// record starts sampling l's router until ctx ends; done closes when it
// has stopped.
func record(ctx context.Context, t *testing.T, l *lab.Lab) (*recorder, <-chan struct{}) {
	c := dial(t, l.Peer)
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ps, err := routerPaths(qctx, c)
			cancel()
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			if err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			lk := look{at: time.Now()}
			for _, p := range ps {
				lk.paths = append(lk.paths, mark{proto: p.Proto, best: p.Primary, lastResort: isLastResort(p)})
			}
			r.looks = append(r.looks, lk)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r, done
}

func isLastResort(p bird.Path) bool {
	gshut := slices.Contains(p.Communities, bird.Community{birdconf.GracefulShutdownAS, birdconf.GracefulShutdownValue})
	lr := slices.ContainsFunc(p.LargeCommunities, func(c bird.LargeCommunity) bool {
		return c[1] == birdconf.TierData1 && c[2] == birdconf.LastResortData2
	})
	return gshut && lr
}

// since returns the looks taken at or after from.
func (r *recorder) since(from time.Time) ([]look, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, _ := slices.BinarySearchFunc(r.looks, from, func(l look, t time.Time) int { return l.at.Compare(t) })
	return slices.Clone(r.looks[i:]), r.err
}

// until waits, bounded by ctx, for a look after from that satisfies ok, and
// returns it.
func (r *recorder) until(ctx context.Context, from time.Time, ok func(look) bool) (look, error) {
	tick := time.NewTicker(sampleEvery / 2)
	defer tick.Stop()
	next := from
	var last look
	for {
		looks, err := r.since(next)
		if err != nil {
			return look{}, err
		}
		for _, l := range looks {
			if ok(l) {
				return l, nil
			}
			last, next = l, l.at.Add(time.Nanosecond)
		}
		select {
		case <-ctx.Done():
			return look{}, fmt.Errorf("%w; last look: %s", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// gaps lists the looks after from without any path.
func (r *recorder) gaps(t *testing.T, from time.Time) []look {
	t.Helper()
	looks, err := r.since(from)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	var out []look
	for _, l := range looks {
		if len(l.paths) == 0 {
			out = append(out, l)
		}
	}
	return out
}

// story condenses the looks after from into their changes, for logs.
func (r *recorder) story(from time.Time) string {
	looks, _ := r.since(from)
	var b strings.Builder
	prev := "-"
	for _, l := range looks {
		if s := l.String(); s != prev {
			fmt.Fprintf(&b, "%v: %s; ", l.at.Sub(from).Round(time.Millisecond), s)
			prev = s
		}
	}
	return fmt.Sprintf("%s(%d looks)", b.String(), len(looks))
}

// ladderSites builds a two-DC tiers lab in topology top with rhi and the
// guard on each site, both healthy and serving at full weight.
func ladderSites(t *testing.T, opts lab.Options) (*lab.Lab, []*site.Site) {
	t.Helper()
	l := tierLab(t, 2, opts)
	ctx := t.Context()
	bins, err := site.Build(ctx, "rhitiers-ladder-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Remove() })
	var sites []*site.Site
	for _, d := range l.DCs {
		s, err := site.New(ctx, d, bins, site.Config{VIPs: foVIPs, PollInterval: ladderPoll})
		if err != nil {
			t.Fatal(err)
		}
		appendConfig(t, s.Config, ladderYAML)
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.StopRHI() })
		sites = append(sites, s)
	}
	waitRouterPaths(t, l, 2)
	return l, sites
}

// settle bounds the waits for what BGP and rhi do within a few polls.
const settle = 20 * time.Second

// TestLadder runs the ladder's lab scenarios with each way the sites reach
// the router: eBGP (an AS each), one AS shared (allow local as), iBGP; all
// on BIRD 2, and eBGP once more on BIRD 3 where its root is here.
func TestLadder(t *testing.T) {
	runs := slices.Clone(topologies)
	if argv, err := lab.Bird3(); err == nil {
		opts := topologies[0].opts
		opts.Bird = argv
		runs = append(runs, topology{"bird3-" + topologies[0].name, opts})
	} else {
		t.Logf("BIRD 3 not tested: %v", err)
	}
	for _, top := range runs {
		t.Run(top.name, func(t *testing.T) {
			l, sites := ladderSites(t, top.opts)
			ladderEverySiteFails(t, l, sites)
		})
	}
}

// ladderEverySiteFails: (1) both sites fail in the same poll: the router
// never lacks a path for the VIP, and once both have stepped down every
// path it holds is marked last resort, for longer than hold and several
// guard rounds. (2) dc2 recovers: the router's best path is dc2's, serving
// (the time from the health change is logged), and dc1, still failing,
// then withdraws. (3) the site holding the VIP alone in last resort is
// restarted: no gap.
func ladderEverySiteFails(t *testing.T, l *lab.Lab, sites []*site.Site) {
	ctx := t.Context()
	rctx, stop := context.WithCancel(ctx)
	rec, done := record(rctx, t, l)
	defer func() { stop(); <-done }()
	dc1, dc2 := l.DCs[0], l.DCs[1]
	p1, p2 := dc1.PeerProtos[0], dc2.PeerProtos[0]

	// (1) Both fail in the same poll.
	failed := time.Now()
	setAll(t, sites, "unhealthy")
	wctx, cancel := context.WithTimeout(ctx, settle)
	lr, err := rec.until(wctx, failed, func(l look) bool { return l.allLastResort() && len(l.paths) == 2 })
	cancel()
	if err != nil {
		t.Fatalf("(1) both sites failed: the router never held both paths in last resort: %v\n%s", err, rec.story(failed))
	}
	t.Logf("BENCH ladder (1): both sites in last resort at the router %v after the failing poll's health change", lr.at.Sub(failed).Round(time.Millisecond))
	// Hold, and a few rounds more: no site may let go.
	time.Sleep(ladderHold + 5*ladderPoll + 2*time.Second)
	looks, err := rec.since(lr.at)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range looks {
		if !l.allLastResort() || len(l.paths) != 2 {
			t.Errorf("(1) at %v after the failure the router holds %s, want both sites' paths in last resort\n%s", l.at.Sub(failed).Round(time.Millisecond), l, rec.story(failed))
			break
		}
	}
	if g := rec.gaps(t, failed); len(g) > 0 {
		t.Errorf("(1) the router had no path for the VIP in %d of its looks after both sites failed, first at %v\n%s", len(g), g[0].at.Sub(failed), rec.story(failed))
	}
	verifyLastResort(t, sites)

	// (2) dc2 recovers: its path is the only serving one and becomes best.
	back := time.Now()
	setHealth(t, sites[1], "healthy")
	wctx, cancel = context.WithTimeout(ctx, settle)
	best, err := rec.until(wctx, back, func(l look) bool { return l.bestFrom(p2) })
	cancel()
	if err != nil {
		t.Fatalf("(2) dc2 recovered: its path never became the router's best: %v\n%s", err, rec.story(back))
	}
	t.Logf("BENCH ladder (2): dc2 healthy again -> its path best at the router: %v (poll %v)", best.at.Sub(back).Round(time.Millisecond), ladderPoll)
	// dc1 still fails, and now sees dc2 serving: it withdraws after hold,
	// not before.
	wctx, cancel = context.WithTimeout(ctx, settle)
	gone, err := rec.until(wctx, back, func(l look) bool { return !l.has(p1) })
	cancel()
	if err != nil {
		t.Fatalf("(2) dc1, failing, with dc2 serving: it never withdrew: %v\n%s", err, rec.story(back))
	}
	if d := gone.at.Sub(best.at); d < ladderHold {
		t.Errorf("(2) dc1 withdrew %v after dc2's path was best at the router, before hold %v", d, ladderHold)
	}
	t.Logf("BENCH ladder (2): dc1 withdrawn %v after dc2's path was best (hold %v)", gone.at.Sub(best.at).Round(time.Millisecond), ladderHold)
	if g := rec.gaps(t, failed); len(g) > 0 {
		t.Errorf("(2) the router had no path in %d looks, first at %v\n%s", len(g), g[0].at.Sub(failed), rec.story(failed))
	}

	// (3) dc2 fails again: dc1, withdrawn, sees nobody serving and comes
	// back in last resort beside it. Then dc1 leaves (its rhi stopped,
	// the VIP taken off its interfaces), so dc2 holds the VIP alone, in
	// last resort, and dc2's rhi is restarted: the router never lacks a
	// path, and every path it holds stays last resort.
	again := time.Now()
	setHealth(t, sites[1], "unhealthy")
	wctx, cancel = context.WithTimeout(ctx, settle)
	_, err = rec.until(wctx, again, func(l look) bool { return l.allLastResort() && l.has(p1) && l.has(p2) })
	cancel()
	if err != nil {
		t.Fatalf("(3) dc2 failed again: the router never held both sites in last resort: %v\n%s", err, rec.story(again))
	}
	if err := sites[0].StopRHI(); err != nil {
		t.Fatal(err)
	}
	for _, iface := range []string{dc1.Iface, birdconf.DegradedInterface, birdconf.LastResortInterface} {
		_, _ = dc1.Run(ctx, "ip", "addr", "del", vip4.String(), "dev", iface) // on one of them
	}
	wctx, cancel = context.WithTimeout(ctx, settle)
	_, err = rec.until(wctx, again, func(l look) bool { return l.allLastResort() && !l.has(p1) && l.has(p2) })
	cancel()
	if err != nil {
		t.Fatalf("(3) dc1 gone: the router never held dc2's last-resort path alone: %v\n%s", err, rec.story(again))
	}
	restart := time.Now()
	if err := sites[1].StopRHI(); err != nil {
		t.Fatal(err)
	}
	if err := sites[1].StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the start, hold, and several guard rounds.
	time.Sleep(ladderHold + 5*ladderPoll)
	looks, err = rec.since(restart)
	if err != nil {
		t.Fatal(err)
	}
	for _, lk := range looks {
		if !lk.allLastResort() || !lk.has(p2) {
			t.Errorf("(3) dc2 restarted holding the VIP alone in last resort: at %v the router holds %s\n%s", lk.at.Sub(restart).Round(time.Millisecond), lk, rec.story(restart))
			break
		}
	}
	t.Logf("(3) dc2 restarted: %s", rec.story(restart))
}

// TestLadderOneSiteFails: (6) dc1 fails while dc2 is healthy: dc1 steps
// down to last resort and then withdraws (after hold, counted from an
// answer that may precede the failure); the router's best path is dc2's
// throughout and it never lacks a path. On BIRD 2, and on BIRD 3 where its
// root is here.
func TestLadderOneSiteFails(t *testing.T) {
	for _, v := range birdVersions(t) {
		t.Run(v.name, func(t *testing.T) { ladderOneSiteFails(t, lab.Options{Bird: v.argv}) })
	}
}

func ladderOneSiteFails(t *testing.T, opts lab.Options) {
	l, sites := ladderSites(t, opts)
	ctx := t.Context()
	rctx, stop := context.WithCancel(ctx)
	rec, done := record(rctx, t, l)
	defer func() { stop(); <-done }()
	p1, p2 := l.DCs[0].PeerProtos[0], l.DCs[1].PeerProtos[0]
	// Both serve; dc1 (the lowest router id) is best.
	wctx, cancel := context.WithTimeout(ctx, settle)
	_, err := rec.until(wctx, time.Now(), func(l look) bool { return l.bestFrom(p1) && l.has(p2) })
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	failed := time.Now()
	setHealth(t, sites[0], "unhealthy")
	wctx, cancel = context.WithTimeout(ctx, settle)
	gone, err := rec.until(wctx, failed, func(l look) bool { return !l.has(p1) })
	cancel()
	if err != nil {
		t.Fatalf("dc1 failing beside a healthy dc2 never withdrew: %v\n%s", err, rec.story(failed))
	}
	t.Logf("BENCH ladder (6): dc1 failed beside a healthy dc2 -> withdrawn at the router after %v (hold %v, poll %v): %s", gone.at.Sub(failed).Round(time.Millisecond), ladderHold, ladderPoll, rec.story(failed))
	time.Sleep(5 * ladderPoll)
	looks, err := rec.since(failed)
	if err != nil {
		t.Fatal(err)
	}
	for _, lk := range looks {
		if !lk.has(p2) || lk.has(p1) && !lk.bestFrom(p2) && !lk.bestFrom(p1) {
			t.Errorf("at %v after dc1 failed the router holds %s: want dc2's path, and a serving best path", lk.at.Sub(failed).Round(time.Millisecond), lk)
			break
		}
	}
}

// setHealth sets the VIP's upstream on one site.
func setHealth(t *testing.T, s *site.Site, status string) {
	t.Helper()
	err := lab.Eventually(t.Context(), 5*time.Second, 20*time.Millisecond, func(context.Context) error {
		return s.SetAll(status, site.Keys(foVIPs)...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLadderNoAddPathHolds: (5) the router sends the sites no ADD-PATH, so a
// site's guard table holds at most the router's best path and cannot tell
// who else serves. Each site's guard says its view is unknown (/status,
// rhi_fail_open_view_unknown 1, naming the missing ADD-PATH), and dc1,
// failing beside a healthy dc2, steps down to last resort and stays there
// past hold and several rounds: an unknown view never withdraws a VIP. On
// BIRD 2, and on BIRD 3 where its root is here.
func TestLadderNoAddPathHolds(t *testing.T) {
	for _, v := range birdVersions(t) {
		t.Run(v.name, func(t *testing.T) { ladderNoAddPathHolds(t, lab.Options{Bird: v.argv, PeerConfig: noAddPath(t)}) })
	}
}

func ladderNoAddPathHolds(t *testing.T, opts lab.Options) {
	l, sites := ladderSites(t, opts)
	ctx := t.Context()
	for _, s := range sites {
		err := lab.Eventually(ctx, settle, 0, func(ctx context.Context) error {
			st, err := s.Status(ctx)
			switch {
			case err != nil:
				return err
			case st.FailOpen == nil:
				return fmt.Errorf("no fail_open in /status")
			case st.FailOpen.Known || !strings.Contains(st.FailOpen.Error, "ADD-PATH"):
				return fmt.Errorf("fail_open known %v, error %q; want unknown for the missing ADD-PATH", st.FailOpen.Known, st.FailOpen.Error)
			}
			m, err := s.Metrics(ctx)
			if err != nil {
				return err
			}
			if !strings.Contains(m, "\nrhi_fail_open_view_unknown 1\n") {
				return fmt.Errorf("rhi_fail_open_view_unknown is not 1")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", s.DC.Name, err)
		}
	}
	st, _ := sites[0].Status(ctx)
	t.Logf("dc1's guard: %+v", *st.FailOpen)

	rctx, stop := context.WithCancel(ctx)
	rec, done := record(rctx, t, l)
	defer func() { stop(); <-done }()
	p1, p2 := l.DCs[0].PeerProtos[0], l.DCs[1].PeerProtos[0]
	failed := time.Now()
	setHealth(t, sites[0], "unhealthy")
	wctx, cancel := context.WithTimeout(ctx, settle)
	lr, err := rec.until(wctx, failed, func(l look) bool {
		return l.bestFrom(p2) && slices.ContainsFunc(l.paths, func(m mark) bool { return m.proto == p1 && m.lastResort })
	})
	cancel()
	if err != nil {
		t.Fatalf("dc1 failed: the router never held its path in last resort beside dc2's serving one: %v\n%s", err, rec.story(failed))
	}
	t.Logf("BENCH ladder (5): dc1 in last resort at the router %v after its health failed", lr.at.Sub(failed).Round(time.Millisecond))
	time.Sleep(ladderHold + 5*ladderPoll + 2*time.Second)
	looks, err := rec.since(lr.at)
	if err != nil {
		t.Fatal(err)
	}
	for _, lk := range looks {
		if !slices.ContainsFunc(lk.paths, func(m mark) bool { return m.proto == p1 && m.lastResort }) || !lk.bestFrom(p2) {
			t.Errorf("at %v after dc1 failed the router holds %s: want dc1's path in last resort and dc2's best; an unknown view must not withdraw\n%s", lk.at.Sub(failed).Round(time.Millisecond), lk, rec.story(failed))
			break
		}
	}
	st, err = sites[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.VIPs[0]; v.Tier != "last_resort" {
		t.Errorf("dc1's VIP: tier %q, reason %q; want last_resort", v.Tier, v.Reason)
	} else {
		t.Logf("dc1's VIP: tier %q, reason %q, fail_open %+v", v.Tier, v.Reason, v.FailOpen)
	}
}

// verifyLastResort: with each site's VIP in last resort, `rhi verify`
// finds it exported so (GRACEFUL_SHUTDOWN, the largest prepend, (AS, 1, 2))
// with the site's identity, from BIRD's own reply; and with a config whose
// site_id is another, it reports the export wrong.
func verifyLastResort(t *testing.T, sites []*site.Site) {
	t.Helper()
	ctx := t.Context()
	for _, s := range sites {
		out, code, err := s.RHICommand(ctx, "verify")
		if err != nil || code != 0 {
			t.Errorf("rhi verify on %s, in last resort: exit %d, %v\n%s", s.DC.Name, code, err, out)
		}
	}
	s := sites[0]
	cfg, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(filepath.Dir(s.Config), "wrong-site-id.yaml")
	if err := os.WriteFile(wrong, append(cfg, "site_id: 10.0.0.99\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, err := s.RHICommand(ctx, "verify", "--config", wrong)
	if err != nil || code == 0 || !strings.Contains(out, "not site_id") {
		t.Errorf("rhi verify on %s with another site_id: exit %d, %v; want a mismatch naming the site identity\n%s", s.DC.Name, code, err, out)
	} else {
		t.Logf("rhi verify with another site_id: exit %d\n%s", code, out)
	}
}
