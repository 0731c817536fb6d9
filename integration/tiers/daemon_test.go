//go:build integration

package tiers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/status"
)

// api is the one upstream of the daemon test's VIP.
var api = apisix.Ref{Type: "upstreams", ID: "api"}

// daemonPoll is rhi's poll interval in TestDaemonDegraded: the shortest
// allowed, so the measured time is mostly the move, not the wait for a poll.
const daemonPoll = 100 * time.Millisecond

// TestDaemonDegraded: rhi itself, on dc1 and dc2 with tiers.conf and
// degraded.below 60%. When half of dc1's nodes fail (50% < 60%), rhi moves
// the VIP to rhi1: the router's best path goes to dc2 while dc1's path stays
// in its table, prepended and with the community; `rhi verify` on dc1
// confirms the degraded export. When the nodes recover, dc1 is best again.
// The router holds both sites' paths at every look throughout: there is no
// moment without a route. It logs the time from the health change to the
// router preferring the other site (BENCHMARKS.md; it includes the wait
// for rhi's next poll, up to daemonPoll).
func TestDaemonDegraded(t *testing.T) {
	l := tierLab(t, 2, lab.Options{})
	dc1, dc2 := l.DCs[0], l.DCs[1]
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	bins, err := site.Build(ctx, "rhi-tiers-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer bins.Remove()
	cfg := site.Config{PollInterval: daemonPoll, DegradedBelow: "60%",
		VIPs: []site.VIP{{Address: vip4.Addr().String(), Upstreams: []string{"/apisix/upstreams/api"}}}}
	var sites []*site.Site
	for _, dc := range []*lab.DC{dc2, dc1} { // dc2 first: dc1, added last, is the router's best
		s, err := site.New(ctx, dc, bins, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.StopRHI() })
		sites = append(sites, s)
	}
	s1 := sites[1]
	waitRouterPaths(t, l, 2)
	p1, p2 := dc1.PeerProtos[0], dc2.PeerProtos[0]
	wctx, stop := context.WithCancel(ctx)
	w, done := watch(wctx, dial(t, l.Peer), p1, p2)
	defer func() { stop(); <-done }()
	if _, err := w.until(ctx, time.Now(), func(s sample) bool { return s.best() == p1 && degradedAt(s, p1, dc1.ASN, false) }); err != nil {
		t.Fatalf("router: dc1 is not best at full weight before the moves: %v", err)
	}

	var down, up, downPoll, upPoll []time.Duration
	for i := 0; i < trials(t); i++ {
		d, fromPoll, err := degradeTrial(ctx, w, s1, 1, p2, true)
		if err != nil {
			t.Fatalf("trial %d, degrading: %v", i+1, err)
		}
		down, downPoll = append(down, d), append(downPoll, fromPoll)
		if i == 0 {
			checkDegradedSite(t, ctx, s1)
		}
		if d, fromPoll, err = degradeTrial(ctx, w, s1, 0, p1, false); err != nil {
			t.Fatalf("trial %d, recovering: %v", i+1, err)
		}
		up, upPoll = append(up, d), append(upPoll, fromPoll)
	}
	if out, code, err := s1.RHICommand(ctx, "verify"); err != nil || code != 0 {
		t.Errorf("rhi verify on dc1 at full weight: exit %d, %v\n%s", code, err, out)
	}
	stop()
	<-done
	w.check(t, 2*len(down))
	t.Logf("BENCH rhi degraded tier (poll %v), %d trials: health below -> router prefers dc2: median %v, worst %v; health back -> dc1 best: median %v, worst %v",
		daemonPoll, len(down), median(down), slices.Max(down), median(up), slices.Max(up))
	t.Logf("BENCH rhi degraded tier, from the end of the deciding poll (/status since): to dc2: median %v, worst %v; back to dc1: median %v, worst %v",
		median(downPoll), slices.Max(downPoll), median(upPoll), slices.Max(upPoll))
}

// degradeTrial makes `unhealthy` of s's two api nodes unhealthy and waits
// for the router to prefer bestAfter with s's path degraded (or not) in its
// table. It returns the time from the health change to the router's best
// path being bestAfter, and the time from the end of the poll that decided
// the move (the VIP's /status since) to then.
func degradeTrial(ctx context.Context, w *watcher, s *site.Site, unhealthy int, bestAfter string, degraded bool) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.API.SetMixed(api, 2-unhealthy, unhealthy); err != nil {
		return 0, 0, err
	}
	at, err := w.until(ctx, start, func(x sample) bool { return x.best() == bestAfter })
	if err != nil {
		return 0, 0, fmt.Errorf("router never preferred %s: %w", bestAfter, err)
	}
	proto := s.DC.PeerProtos[0]
	if _, err := w.until(ctx, start, func(x sample) bool { return degradedAt(x, proto, s.DC.ASN, degraded) }); err != nil {
		return 0, 0, fmt.Errorf("router: %s's path with degraded=%v: %w", proto, degraded, err)
	}
	// rhi publishes /status at the end of the tick whose Set the router
	// has just seen: on a loaded machine the read can come first, so it
	// is repeated (bounded) until the tier shows.
	var v status.VIPStatus
	err = lab.Eventually(ctx, 5*time.Second, 10*time.Millisecond, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		v = st.VIPs[0]
		if (v.Tier == decide.TierDegraded) != degraded {
			return fmt.Errorf("tier %q", v.Tier)
		}
		return nil
	})
	if err != nil || v.Since.Before(start) || v.Since.After(at) {
		return 0, 0, fmt.Errorf("status: tier %q since %v, the health changed at %v and the router moved at %v: %v", v.Tier, v.Since, start, at, err)
	}
	return at.Sub(start), at.Sub(v.Since), nil
}

// checkDegradedSite checks a degraded site from rhi's side: /status says
// degraded and on rhi1, the VIP is on rhi1 only, and `rhi verify` confirms
// that BIRD exports it with the degraded attributes.
func checkDegradedSite(t *testing.T, ctx context.Context, s *site.Site) {
	t.Helper()
	err := lab.Eventually(ctx, 10*time.Second, 0, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		v := st.VIPs[0]
		if v.Tier != decide.TierDegraded || !v.OnDegraded || !v.OnInterface {
			return fmt.Errorf("status: tier %q, on_degraded_interface %v, on_interface %v", v.Tier, v.OnDegraded, v.OnInterface)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for iface, want := range map[string]bool{"rhi0": false, "rhi1": true} {
		out, err := s.DC.Run(ctx, "ip", "-4", "-o", "addr", "show", "dev", iface)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out, vip4.String()); got != want {
			t.Errorf("%s holds %s: %v, want %v (%s)", iface, vip4, got, want, out)
		}
	}
	out, code, err := s.RHICommand(ctx, "verify", "--json")
	compact := strings.Join(strings.Fields(out), "")
	if err != nil || code != 0 || !strings.Contains(compact, `"tier":"degraded"`) || !strings.Contains(compact, `"exported_tier":{"`+s.DC.Protocols[0]+`":"degraded"}`) {
		t.Errorf("rhi verify --json on the degraded site: exit %d, %v\n%s", code, err, out)
	}
}
