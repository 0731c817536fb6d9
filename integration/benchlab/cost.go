package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// costResult is one window of data-path traffic through the fake with its
// cost model (2 workers, APISIX 3.18's per-request costs), with or without
// rhi polling it.
type costResult struct {
	upstreams int
	setting   string        // "no rhi", "defaults", "1s"
	effective time.Duration // rhi's effective poll interval at the end; 0 without rhi
	window    time.Duration
	share     float64            // rhi's control-API time over the window, share of one worker
	load      fakeapi.LoadResult // the latencies the client timed (wall clock)
	// loop is the data path's latencies in the fake's serving loops'
	// time: each request's wait for its worker plus its cost, free of
	// the host's scheduling noise, which the wall clock carries.
	loop apisixtest.Latency
}

// costGoal is the data-path goal at rhi's defaults: its p99 with rhi may
// rise by at most 10 % or 1 ms over the p99 without, whichever allows
// more. It returns the highest p99 allowed.
func costGoal(without time.Duration) time.Duration {
	return max(without+without/10, without+time.Millisecond)
}

// costDataAddr is the fake's data path inside the site's namespace.
const costDataAddr = "127.0.0.1:9080"

// runCost measures, for n upstreams in the fake (one VIP each, rhi in
// --dry-run), the data-path latency of a steady 500 requests/s without rhi,
// with rhi at its defaults (3 s, auto, budget 1 %) and at a configured 1 s
// interval, both as the client timed it and in the fake's loop time, and
// rhi's share of the fake's serving loops. A window lasts at
// least one and a half effective intervals, so that it holds a poll.
func runCost(ctx context.Context, bins site.Binaries, n int, window time.Duration, r *report) (err error) {
	l, err := newLab(ctx)
	if err != nil {
		return err
	}
	defer closeLab(l, &err)
	vips := make([]site.VIP, n)
	for i := range vips {
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: []string{fmt.Sprintf("/apisix/upstreams/%d", i+1)}}
	}
	cfg := site.Config{
		PollInterval: 3 * time.Second, Timeout: 5 * time.Second, PollMode: "auto",
		FakeUpstreams: n, VIPs: vips,
		FakeArgs: []string{"--cost", "--workers", "2", "--data-listen", costDataAddr},
	}
	s, err := site.New(ctx, l.DCs[0], bins, cfg)
	if err != nil {
		return err
	}
	if err := s.API.SetRoute("bench", apisix.Ref{Type: "upstreams", ID: "1"}, "", "/"); err != nil {
		return err
	}
	s.StartWait = 3 * time.Minute
	measure := func(setting string, w time.Duration, effective time.Duration) error {
		fmt.Fprintf(os.Stderr, "   %d upstreams, %s: %s of data-path load\n", n, setting, w.Round(time.Second))
		if err := s.API.ResetAccounting(); err != nil {
			return err
		}
		res, err := fakeapi.RunLoad(ctx, fakeapi.Load{
			URL: "http://" + costDataAddr + "/", Rate: 500, Conns: 4, Duration: w,
			Dial: func(_ context.Context, _, addr string) (net.Conn, error) { return site.DialIn(s.DC.NS, addr) },
		})
		if err != nil {
			return err
		}
		acc, err := s.API.Accounting()
		if err != nil {
			return err
		}
		share := 0.0
		if acc.Elapsed > 0 {
			share = float64(acc.Total().Control().Busy) / float64(acc.Elapsed)
		}
		r.costs = append(r.costs, costResult{upstreams: n, setting: setting, effective: effective, window: acc.Elapsed, share: share, load: res, loop: acc.DataLatency})
		return nil
	}
	if err := measure("no rhi", window, 0); err != nil {
		return err
	}
	for _, c := range []struct {
		name     string
		interval time.Duration
	}{{"defaults", 3 * time.Second}, {"1s configured", time.Second}} {
		cfg.PollInterval = c.interval
		if err := s.WriteConfig(cfg); err != nil {
			return err
		}
		if err := s.StartRHI(ctx, "--dry-run"); err != nil {
			return err
		}
		// Two polls (the first measures, the second is paced by it).
		if err := sleepUntil(ctx, time.Now().Add(2*c.interval+2*time.Second)); err != nil {
			return err
		}
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		eff := st.ControlAPI.Polling.EffectiveInterval
		if err := measure(c.name, max(window, eff*3/2), eff); err != nil {
			return err
		}
		if err := s.StopRHI(); err != nil {
			return err
		}
	}
	return nil
}
