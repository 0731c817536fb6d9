package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
)

// stepsResult is one poll interval's withdraws behind the fake's checker.
type stepsResult struct {
	poll time.Duration
	// shares are rhi's share of each withdraw: from the fake's last node
	// turning unhealthy (when a poll could first see the VIP down) to the
	// route gone at the peer.
	shares []time.Duration
	// caught counts the trials in which rhi read the upstream while a
	// node was mostly_healthy, the window that starts fast polls.
	caught int
}

// stepsRef is the one upstream of the steps scenarios.
var stepsRef = apisix.Ref{Type: "upstreams", ID: "1"}

// runSteps kills the backends of one VIP's upstream while the fake's
// checker steps its nodes as APISIX 3.18 does with its defaults (a check a
// second, healthy → mostly_healthy → unhealthy), at a random point of
// rhi's poll interval, and times rhi's share of each withdraw, with fast polls at
// their default interval.
func runSteps(ctx context.Context, bins site.Binaries, poll time.Duration, trials int, rng *rand.Rand, r *report) (err error) {
	l, err := newLab(ctx)
	if err != nil {
		return err
	}
	defer closeLab(l, &err)
	cfg := site.Config{
		PollInterval: poll, FakeUpstreams: 1, FakeArgs: []string{"--checks"},
		VIPs: []site.VIP{{Address: site.VIPAddr(0), Upstreams: []string{"/apisix/upstreams/1"}}},
	}
	s, err := site.New(ctx, l.DCs[0], bins, cfg)
	if err != nil {
		return err
	}
	if err := s.StartRHI(ctx); err != nil {
		return err
	}
	defer s.StopRHI()
	res := stepsResult{poll: poll}
	for i := range trials {
		share, caught, err := stepTrial(ctx, l, s, poll, rng)
		if err != nil {
			return fmt.Errorf("trial %d: %w", i+1, err)
		}
		res.shares = append(res.shares, share)
		if caught {
			res.caught++
		}
		fmt.Fprintf(os.Stderr, "   trial %2d  rhi's share %6s ms  window read %v\n", i+1, site.Ms(share), caught)
	}
	r.steps = append(r.steps, res)
	return nil
}

// stepTrial brings the backends back, waits for the route at the peer,
// kills them at a random point of a poll interval and times the withdraw.
func stepTrial(ctx context.Context, l *lab.Lab, s *site.Site, poll time.Duration, rng *rand.Rand) (time.Duration, bool, error) {
	if err := s.API.SetBackends(stepsRef, "alive"); err != nil {
		return 0, false, err
	}
	if err := settle(ctx, l, s, 1, true, time.Minute); err != nil {
		return 0, false, err
	}
	if err := sleepUntil(ctx, time.Now().Add(time.Duration(rng.Int64N(int64(poll))))); err != nil {
		return 0, false, err
	}
	before, err := s.API.MovingReads(stepsRef)
	if err != nil {
		return 0, false, err
	}
	killed := time.Now()
	if err := s.API.SetBackends(stepsRef, "dead"); err != nil {
		return 0, false, err
	}
	gone, err := waitPeer(ctx, l, 1, false)
	if err != nil {
		return 0, false, err
	}
	tr, err := s.API.Transitions(stepsRef)
	if err != nil {
		return 0, false, err
	}
	var last time.Time
	for _, x := range tr {
		if x.To == "unhealthy" && x.Time.After(killed) && x.Time.After(last) {
			last = x.Time
		}
	}
	if last.IsZero() {
		return 0, false, errors.New("no node turned unhealthy in the fake")
	}
	after, err := s.API.MovingReads(stepsRef)
	return gone.Sub(last), after > before, err
}
