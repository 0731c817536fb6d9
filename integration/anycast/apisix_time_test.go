//go:build integration

package anycast

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
)

// These tests run rhi against the fake APISIX behaving as APISIX 3.18 does
// over time: nodes stepping healthy → mostly_healthy → unhealthy at the
// check interval, checkers per worker with one probing worker, restarts
// that refuse connections.

const dataAddr = "127.0.0.1:9080"

var up1 = apisix.Ref{Type: "upstreams", ID: "1"}

// announced reports whether vip is on the site's interface.
func announced(ctx context.Context, s *Site, vip string) (bool, error) {
	ps, err := s.Addrs(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(ps, netip.MustParsePrefix(vip+"/32")), nil
}

// dataGet sends one data-path request to the fake from inside the site's
// namespace, on a fresh connection (the fake hands each connection to the
// next worker), and returns the status.
func dataGet(t *testing.T, s *Site) int {
	t.Helper()
	c, err := site.DialIn(s.DC.NS, dataAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// With two workers and lazy checkers, a warm-up that reached only the
// worker that does not run the checks leaves a checker that says healthy
// for ever: the backends die and the VIP stays announced. A probe through
// the data path fails whatever the checkers say, and withdraws it.
func TestAPISIXWorkerDivergence(t *testing.T) {
	vip := site.VIP{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/1"}}
	cfg := site.Config{
		FakeUpstreams: 1, VIPs: []site.VIP{vip},
		FakeArgs: []string{"--checks", "--lazy", "--workers", "2", "--probing-worker", "2", "--data-listen", dataAddr},
	}
	_, s := newFaultSite(t, cfg, faultSite{before: func(t *testing.T, _ *world, s *Site) {
		if err := s.API.SetRoute("1", up1, "", "/"); err != nil {
			t.Fatal(err)
		}
		// The first connection goes to worker 1, which does not probe.
		if code := dataGet(t, s); code != 200 {
			t.Fatalf("warm-up: HTTP %d", code)
		}
		// APISIX's checker manager creates the checker on its next timer.
		err := lab.Eventually(context.Background(), 5*time.Second, 50*time.Millisecond, func(context.Context) error {
			ck, err := s.API.Checkers(up1)
			if err == nil && (!slices.Equal(ck.Workers, []int{1}) || ck.Probing == 1) {
				err = fmt.Errorf("checkers %+v, want one in worker 1 only, probed by another", ck)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}})
	ctx := context.Background()
	if err := s.API.SetBackends(up1, "dead"); err != nil {
		t.Fatal(err)
	}
	// Ten check intervals: a probed checker would have said unhealthy
	// within two.
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		on, err := announced(ctx, s, vip.Address)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			t.Fatal("withdrawn without a probe: the fake's checkers did not diverge as APISIX's do")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Log("backends dead for 10s, control API healthy, VIP announced (as APISIX 3.18 with 2 workers)")

	vip.Extra = "probe:\n  url: http://" + dataAddr + "/\n  timeout: 1s"
	cfg.VIPs = []site.VIP{vip}
	if err := s.WriteConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err := lab.Eventually(ctx, 10*time.Second, 50*time.Millisecond, func(ctx context.Context) error {
		on, err := announced(ctx, s, vip.Address)
		if err == nil && on {
			err = fmt.Errorf("%s still announced", vip.Address)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with a probe: withdrawn %v after the reload", time.Since(t0).Round(10*time.Millisecond))
}

// Fast polls: the fake steps a dying upstream's nodes healthy →
// mostly_healthy → unhealthy at APISIX's default check interval (1 s); at
// a 1 s poll (and, when a poll falls in that second, at 3 s) rhi sees mostly_healthy, polls that upstream alone every
// 100 ms and withdraws soon after the last node turns unhealthy. rhi's
// share (from that transition to the address gone from the interface) is
// logged as a figure; the test asserts the withdraw and the fast polls.
func TestFastPollsCatchStep(t *testing.T) {
	for _, poll := range []time.Duration{time.Second, 3 * time.Second} {
		t.Run(poll.String(), func(t *testing.T) { fastPollsCatchStep(t, poll) })
	}
}

func fastPollsCatchStep(t *testing.T, poll time.Duration) {
	vip := site.VIP{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/1"}}
	cfg := site.Config{
		PollInterval: poll, FakeUpstreams: 1, VIPs: []site.VIP{vip},
		FakeArgs: []string{"--checks"},
		Extra:    "fast_poll_interval: 100ms",
	}
	_, s := newFaultSite(t, cfg, faultSite{})
	ctx := context.Background()
	var shares []time.Duration
	caught := 0 // runs in which rhi read the upstream inside the mostly_healthy window
	for run := range 5 {
		if err := s.API.SetBackends(up1, "alive"); err != nil {
			t.Fatal(err)
		}
		err := lab.Eventually(ctx, 15*time.Second, 50*time.Millisecond, func(ctx context.Context) error {
			on, err := announced(ctx, s, vip.Address)
			if err == nil && !on {
				err = fmt.Errorf("%s not announced", vip.Address)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The backends die at another point of rhi's poll interval each run
		// (where rhi's polls fall against the checker's grid drifts anyway:
		// they come early by a random amount).
		time.Sleep(time.Duration(run) * poll / 5)
		moving0, err := s.API.MovingReads(up1)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.API.SetBackends(up1, "dead"); err != nil {
			t.Fatal(err)
		}
		var gone time.Time
		err = lab.Eventually(ctx, 15*time.Second, 5*time.Millisecond, func(ctx context.Context) error {
			on, err := announced(ctx, s, vip.Address)
			if err == nil && on {
				return fmt.Errorf("%s still announced", vip.Address)
			}
			gone = time.Now()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := s.API.Transitions(up1)
		if err != nil {
			t.Fatal(err)
		}
		var last time.Time
		for _, x := range tr {
			if x.To == "unhealthy" && x.Time.After(last) {
				last = x.Time
			}
		}
		if last.IsZero() {
			t.Fatalf("run %d: no node turned unhealthy in the fake (%d transitions)", run, len(tr))
		}
		shares = append(shares, gone.Sub(last))
		moving, err := s.API.MovingReads(up1)
		if err != nil {
			t.Fatal(err)
		}
		if moving > moving0 {
			caught++
		}
	}
	v, _ := s.metricValue(t, "rhi_fast_polls_total")
	if v == 0 {
		t.Error("rhi_fast_polls_total is 0: the steps were not fast-polled")
	}
	fast, all := withdrawLines(t, s, vip.Address)
	// Regular polls come a little early, so at a 1 s poll one reads the
	// upstream inside every 1 s mostly_healthy window, and from there
	// fast polls follow it (the withdraw is made by whichever poll reads
	// unhealthy first, fast or regular). At 3 s most windows fall
	// between polls.
	if poll == time.Second && caught != 5 {
		t.Errorf("rhi read the upstream inside the mostly_healthy window in %d of 5 runs, want 5", caught)
	}
	if poll == time.Second && fast == 0 {
		t.Errorf("no withdraw of %s made by a fast poll (%d withdraws)", vip.Address, all)
	}
	slices.Sort(shares)
	t.Logf("rhi's share of the withdraw at a %v poll, fast_poll_interval 100ms, 5 runs: median %v, worst %v (all %v); %v fast polls; window read in %d of 5 runs; %d of %d withdraws by a fast poll",
		poll, shares[len(shares)/2].Round(time.Millisecond), shares[len(shares)-1].Round(time.Millisecond), shares, v, caught, fast, all)
}

// withdrawLines counts the lines of the site's log that withdraw vip, and
// those of them a fast poll decided.
func withdrawLines(t *testing.T, s *Site, vip string) (fast, all int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.DC.Dir, "rhi-main.log"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, `msg="vip unavailable: withdrawing"`) && strings.Contains(line, "vip="+vip+"/32") {
			all++
			if strings.Contains(line, "poll=fast") {
				fast++
			}
		}
	}
	return fast, all
}

// A graceful APISIX restart refuses connections for ~3 s. At a 1 s poll
// with the documented max_failed_polls: 5 the VIP stays announced through
// it, though polls fail.
func TestAPISIXRestartNoFlap(t *testing.T) {
	vip := site.VIP{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/1"}}
	cfg := site.Config{
		PollInterval: time.Second, MaxFailedPolls: 5, FakeUpstreams: 1, VIPs: []site.VIP{vip},
		FakeArgs: []string{"--checks"},
	}
	_, s := newFaultSite(t, cfg, faultSite{})
	ctx := context.Background()
	time.Sleep(2 * time.Second) // the checker has probed
	if err := s.API.Restart(3*time.Second, false); err != nil {
		t.Fatal(err)
	}
	maxFailed := 0
	end := time.Now().Add(8 * time.Second)
	for time.Now().Before(end) {
		on, err := announced(ctx, s, vip.Address)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			t.Fatalf("withdrawn during a 3s restart at 1s × max_failed_polls 5")
		}
		if st, err := s.Status(ctx); err == nil {
			maxFailed = max(maxFailed, st.ControlAPI.ConsecutiveFailedPolls)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if maxFailed == 0 {
		t.Fatal("no poll failed: the restart was not seen")
	}
	t.Logf("3s restart: up to %d failed polls in a row, VIP announced throughout", maxFailed)
}

// With apisix_poll_interval 200ms at 3,000 upstreams in the fake with
// APISIX's cost model, rhi stretches the interval to keep within the
// budget, warns once, shows it in /status and /metrics, and takes about
// the budget of the fake's workers. The data path's p99 under a steady
// load, in the fake's loop time (each request's wait for its worker plus
// its cost, which this host's scheduling noise does not inflate), stays
// within the goal of a window without rhi measured first: at most 10 %
// or 1 ms more. Polling the list every 200 ms would block a worker about
// half of the time and break it. The client's wall-clock latencies are
// logged as a figure only.
func TestPollBudgetStretches(t *testing.T) {
	const n = 3000
	vips := make([]site.VIP, n)
	for i := range vips {
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: []string{fmt.Sprintf("/apisix/upstreams/%d", i+1)}}
	}
	cfg := site.Config{
		PollInterval: 200 * time.Millisecond, Timeout: 5 * time.Second, PollMode: "auto",
		FakeUpstreams: n, VIPs: vips, FakeArgs: []string{"--cost", "--workers", "2", "--data-listen", dataAddr},
	}
	l := lab.ForTest(t, lab.Options{DCs: 1})
	ctx := context.Background()
	s, err := NewSite(ctx, l.DCs[0], bins, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.API.SetRoute("1", up1, "", "/"); err != nil {
		t.Fatal(err)
	}
	// load runs 200 data-path requests/s over 4 connections (handed to
	// the workers in turn) for d, on a fresh accounting record.
	load := func(d time.Duration) (fakeapi.LoadResult, error) {
		if err := s.API.ResetAccounting(); err != nil {
			return fakeapi.LoadResult{}, err
		}
		return fakeapi.RunLoad(ctx, fakeapi.Load{
			URL: "http://" + dataAddr + "/", Rate: 200, Conns: 4, Duration: d,
			Dial: func(_ context.Context, _, addr string) (net.Conn, error) { return site.DialIn(s.DC.NS, addr) },
		})
	}
	resNo, err := load(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	accNo, err := s.API.Accounting()
	if err != nil {
		t.Fatal(err)
	}
	if accNo.DataLatency.Count < 1000 {
		t.Fatalf("window without rhi: %d data-path requests, want about 2,000", accNo.DataLatency.Count)
	}
	s.StartWait = 2 * time.Minute
	if err := s.StartRHI(ctx, "--dry-run"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.StopRHI() })
	var eff time.Duration
	err = lab.Eventually(ctx, 60*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		p := st.ControlAPI.Polling
		if p.EffectiveInterval <= cfg.PollInterval || p.StretchedSince.IsZero() {
			return fmt.Errorf("effective interval %v, stretched since %v", p.EffectiveInterval, p.StretchedSince)
		}
		eff = p.EffectiveInterval
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.metricValue(t, "rhi_poll_interval_effective_seconds"); v <= 0.2 {
		t.Errorf("rhi_poll_interval_effective_seconds = %v, want > 0.2", v)
	}
	b, err := os.ReadFile(filepath.Join(s.DC.Dir, "rhi-error.log"))
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(b), "apisix_poll_interval stretched"); c != 1 {
		t.Errorf("%d stretch warnings in the error log, want 1", c)
	}
	// Over two effective intervals, rhi's share of the fake's serving
	// loops (their virtual time, which host load does not inflate) stays
	// near the 1 % budget: 2 % allows a third poll inside the window.
	res, err := load(2 * eff)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := s.API.Accounting()
	if err != nil {
		t.Fatal(err)
	}
	share := float64(acc.Total().Control().Busy) / float64(acc.Elapsed)
	if share > 0.02 {
		t.Errorf("rhi took %.2f%% of one worker over %v, want about the 1%% budget", share*100, acc.Elapsed)
	}
	if acc.Total().List.Requests == 0 {
		t.Errorf("no list inside the %v window: the data path was not measured against a poll", acc.Elapsed)
	}
	without, with := accNo.DataLatency, acc.DataLatency
	if limit := dataP99Goal(without.P99); with.P99 > limit {
		t.Errorf("data-path p99 in loop time %v with rhi, %v without: over the goal of %v (max %v with, %v without)",
			with.P99, without.P99, limit, with.Max, without.Max)
	}
	st, _ := s.Status(ctx)
	perWorker := make([]int64, len(acc.Workers))
	for i, w := range acc.Workers {
		perWorker[i] = w.Data.Requests
	}
	t.Logf("3,000 upstreams at 200ms: effective interval %v, poll cost %v, list entries %d; over %v rhi took %.2f%% of one worker in %d lists",
		eff, st.ControlAPI.Polling.PollCost, st.ControlAPI.Polling.ListEntries, acc.Elapsed.Round(time.Second), share*100, acc.Total().List.Requests)
	t.Logf("data path in loop time (p50/p99/max): without rhi %v / %v / %v (%d requests), with %v / %v / %v (%d requests; per worker %v)",
		without.P50, without.P99, without.Max, without.Count, with.P50, with.P99, with.Max, with.Count, perWorker)
	t.Logf("data path wall clock, as the client timed it: without rhi %v; with %v", resNo, res)
}

// dataP99Goal is the highest data-path p99 rhi's polling may cause given
// the p99 without it: 10 % or 1 ms more, whichever allows more.
func dataP99Goal(without time.Duration) time.Duration {
	return max(without+without/10, without+time.Millisecond)
}
