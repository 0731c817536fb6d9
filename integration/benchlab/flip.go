package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
)

// bulkKey is the one upstream every VIP of a flip scenario depends on, so
// that one change of it flips all of them in the same poll.
const bulkKey = "/apisix/upstreams/bulk"

// flipPlan is one reaction scenario.
type flipPlan struct {
	n       int // VIPs flipping at once
	poll    time.Duration
	trials  int // each a withdrawal and an announcement
	idle    bool
	idleFor time.Duration
}

// sample is one timed change. wait is the time from the API change to the
// start of the poll that saw it; iface and peer are counted from that
// start; total from the API change.
type sample struct {
	wait, iface, peer, total time.Duration
}

// flipResult holds a scenario's samples by direction.
type flipResult struct {
	n        int
	poll     time.Duration
	withdraw []sample
	announce []sample
	// Changes not counted: the poll that acted was not the one predicted
	// from the grid (see trial).
	discarded int
}

// errMispredicted marks a trial whose acting poll was not the predicted
// one; its figures would not say what they claim.
var errMispredicted = errors.New("the poll that acted was not the predicted one")

func runFlips(ctx context.Context, bins site.Binaries, p flipPlan, rng *rand.Rand, r *report) (err error) {
	l, err := newLab(ctx)
	if err != nil {
		return err
	}
	defer closeLab(l, &err)
	vips := make([]site.VIP, p.n)
	for i := range vips {
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: []string{bulkKey}}
	}
	// No poll budget: the trials predict the acting poll from the
	// configured grid, which a stretch would move (the budget's own
	// figures are the cost scenarios').
	s, err := startSite(ctx, l, bins, site.Config{PollInterval: p.poll, VIPs: vips, Extra: noBudget})
	if err != nil {
		return err
	}
	defer s.StopRHI()
	g, err := findGrid(ctx, s)
	if err != nil {
		return err
	}
	res := flipResult{n: p.n, poll: p.poll}
	for i := range p.trials {
		for _, up := range []bool{false, true} {
			sm, err := trial(ctx, l, s, &g, p.n, up, rng)
			if errors.Is(err, errMispredicted) {
				fmt.Fprintf(os.Stderr, "   trial %d: %v; discarded\n", i+1, err)
				res.discarded++
				if err := settle(ctx, l, s, p.n, up, time.Minute); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("trial %d: %w", i+1, err)
			}
			if up {
				res.announce = append(res.announce, sm)
			} else {
				res.withdraw = append(res.withdraw, sm)
			}
			fmt.Fprintf(os.Stderr, "   trial %2d %-8s wait %6s ms  iface %6s ms  peer %6s ms  total %6s ms\n",
				i+1, direction(up), site.Ms(sm.wait), site.Ms(sm.iface), site.Ms(sm.peer), site.Ms(sm.total))
		}
	}
	r.flips = append(r.flips, res)
	if !p.idle {
		return nil
	}
	id, err := measureIdle(ctx, s, p.n, 1, p.poll, p.idleFor)
	if err != nil {
		return err
	}
	r.idles = append(r.idles, id)
	return nil
}

func direction(up bool) string {
	if up {
		return "announce"
	}
	return "withdraw"
}

// trial changes the bulk upstream at a random point between two polls and
// times the change through rhi's poll, rhi0 and the peer router.
func trial(ctx context.Context, l *lab.Lab, s *site.Site, g *grid, n int, up bool, rng *rand.Rand) (sample, error) {
	if err := g.refresh(ctx, s); err != nil {
		return sample{}, err
	}
	// Anywhere in the middle 80 % of an interval: far enough from a poll's
	// start that the poll which sees the change is certainly the next one.
	phase := g.interval/10 + time.Duration(rng.Int64N(int64(g.interval*8/10)))
	at := grid{anchor: g.anchor.Add(phase), interval: g.interval}.next(time.Now().Add(20 * time.Millisecond))
	if err := sleepUntil(ctx, at); err != nil {
		return sample{}, err
	}
	status := apisixStatus(up)
	changed := time.Now()
	if err := s.SetAll(status, bulkKey); err != nil {
		return sample{}, err
	}
	poll := g.next(changed)
	// Nothing can happen before that poll; look closely from just before it.
	if err := sleepUntil(ctx, poll.Add(-gridSlack)); err != nil {
		return sample{}, err
	}
	peerAt, err := waitPeer(ctx, l, n, up)
	if err != nil {
		return sample{}, err
	}
	ifaceAt, err := ifaceTime(ctx, s, up)
	if err != nil {
		return sample{}, err
	}
	sm := sample{wait: poll.Sub(changed), iface: ifaceAt.Sub(poll), peer: peerAt.Sub(poll), total: peerAt.Sub(changed)}
	switch {
	case sm.iface < 0:
		return sm, fmt.Errorf("%w: rhi0 changed %s before the predicted poll", errMispredicted, -sm.iface)
	case n == 1 && sm.iface > g.interval:
		// One address takes milliseconds: a change this late came from a
		// later poll (the predicted one was skipped or started late).
		return sm, fmt.Errorf("%w: rhi0 changed %s after the predicted poll", errMispredicted, sm.iface)
	}
	return sm, nil
}

func apisixStatus(up bool) string {
	if up {
		return "healthy"
	}
	return "unhealthy"
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// waitPeer polls the peer router until it holds all n routes (up) or none,
// and returns when it first saw that. The resolution is the polling period
// plus one exchange with BIRD: about 2 ms for one VIP, 5 ms for many.
func waitPeer(ctx context.Context, l *lab.Lab, n int, up bool) (time.Time, error) {
	every := 2 * time.Millisecond
	if n > 1 {
		every = 5 * time.Millisecond
	}
	var seen time.Time
	err := lab.Eventually(ctx, 60*time.Second, every, func(ctx context.Context) error {
		ok, err := peerHas(ctx, l, n, up)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("peer does not hold the state yet (want routes: %v)", up)
		}
		seen = time.Now()
		return nil
	})
	return seen, err
}

// peerHas reports whether the peer router holds all n routes (up) or none.
// For one VIP it asks for that prefix; for more, the table's route count.
func peerHas(ctx context.Context, l *lab.Lab, n int, up bool) (bool, error) {
	if n == 1 {
		v, err := site.Peer(ctx, l, netip.MustParsePrefix(site.VIPAddr(0)+"/32"))
		return (len(v.From) > 0) == up, err
	}
	got, err := peerCount(ctx, l)
	if err != nil {
		return false, err
	}
	want := 0
	if up {
		want = n
	}
	return got == want, nil
}

// peerCount is how many networks the peer router holds in master4, where
// only the ADCs' VIPs arrive.
func peerCount(ctx context.Context, l *lab.Lab) (int, error) {
	return l.Peer.RouteCount(ctx, "master4")
}

// ifaceTime waits until rhi reports every VIP desired and on rhi0 as up
// says, and returns when rhi0 last changed (VIPs[].since is set after the
// interface change, so it is when the change was done).
func ifaceTime(ctx context.Context, s *site.Site, up bool) (time.Time, error) {
	var at time.Time
	err := lab.Eventually(ctx, 60*time.Second, 20*time.Millisecond, func(ctx context.Context) error {
		var err error
		at, err = ifaceState(ctx, s, up)
		return err
	})
	return at, err
}

// ifaceState checks once that rhi reports every VIP desired and on rhi0 as
// up says, and returns the latest VIPs[].since.
func ifaceState(ctx context.Context, s *site.Site, up bool) (time.Time, error) {
	st, err := s.Status(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var at time.Time
	for _, v := range st.VIPs {
		if v.Desired != up || v.OnInterface != up {
			return time.Time{}, fmt.Errorf("vip %q: desired %v, on rhi0 %v; want %v", v.Address, v.Desired, v.OnInterface, up)
		}
		if v.Since.After(at) {
			at = v.Since
		}
	}
	return at, nil
}

// startSite starts the fake control API with every upstream of cfg healthy
// (two nodes each) and rhi with cfg, and waits until every VIP is on rhi0
// and at the peer router.
func startSite(ctx context.Context, l *lab.Lab, bins site.Binaries, cfg site.Config) (*site.Site, error) {
	// The upstreams are created over the control socket rather than on the
	// fake API's command line, which cannot hold 10,000 of them (an
	// argument is limited to 128 KiB).
	s, err := site.New(ctx, l.DCs[0], bins, site.Config{})
	if err != nil {
		return nil, err
	}
	for _, k := range site.Keys(cfg.VIPs) {
		ref, err := apisix.ParseRef(k)
		if err != nil {
			return nil, err
		}
		if err := s.API.SetNodes(ref, 2, "healthy"); err != nil {
			return nil, err
		}
	}
	if err := s.WriteConfig(cfg); err != nil {
		return nil, err
	}
	// ctx bounds rhi's life, not only its start.
	s.StartWait = 3 * time.Minute
	if err := s.StartRHI(ctx); err != nil {
		return nil, err
	}
	if err := settle(ctx, l, s, len(cfg.VIPs), true, 3*time.Minute); err != nil {
		s.StopRHI()
		return nil, err
	}
	return s, nil
}

// settle waits until the peer holds all n routes (up) or none and rhi
// reports every VIP accordingly.
func settle(ctx context.Context, l *lab.Lab, s *site.Site, n int, up bool, limit time.Duration) error {
	every := 50 * time.Millisecond
	if n > 1000 {
		every = time.Second // /status is megabytes at 10,000 VIPs
	}
	return lab.Eventually(ctx, limit, every, func(ctx context.Context) error {
		ok, err := peerHas(ctx, l, n, up)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("peer does not hold the state yet (want routes: %v)", up)
		}
		_, err = ifaceState(ctx, s, up)
		return err
	})
}
