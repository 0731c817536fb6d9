package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// noBudget turns apisix_poll_budget off, for the scenarios that measure
// rhi at its configured interval.
const noBudget = `apisix_poll_budget: "0%"`

// idleResult is rhi at rest: VIPs announced, health unchanged.
type idleResult struct {
	vips, upstreams int
	poll, window    time.Duration
	cpu             float64 // share of one core
	rss             int64
	threads         int
}

// measureIdle reads rhi's CPU over window, with nothing changing, and its
// RSS at the end.
func measureIdle(ctx context.Context, s *site.Site, vips, upstreams int, poll, window time.Duration) (idleResult, error) {
	// Let the last change's confirmation through BIRD finish first.
	if err := sleepUntil(ctx, time.Now().Add(3*poll+time.Second)); err != nil {
		return idleResult{}, err
	}
	fmt.Fprintf(os.Stderr, "   idle for %s with %d VIPs at a %s poll\n", window, vips, poll)
	pid := s.RHI().Pid()
	a, err := site.ReadProc(pid)
	if err != nil {
		return idleResult{}, err
	}
	if err := sleepUntil(ctx, time.Now().Add(window)); err != nil {
		return idleResult{}, err
	}
	b, err := site.ReadProc(pid)
	if err != nil {
		return idleResult{}, err
	}
	return idleResult{vips: vips, upstreams: upstreams, poll: poll, window: b.At.Sub(a.At), cpu: site.CPUShare(a, b), rss: b.RSS, threads: b.Threads}, nil
}

// scaleResult is a window of polls of many distinct upstreams.
type scaleResult struct {
	upstreams     int
	mode          string // apisix_poll_mode
	poll, timeout time.Duration
	window        time.Duration
	polls         int     // completed in the window
	failed        uint64  // failed polls in the window
	unreadable    int     // upstreams not read in the last poll
	wall          float64 // mean seconds per poll
	requests      float64 // per poll
	rhiCPU        float64 // seconds per poll
	rhiShare      float64 // share of one core over the window
	apiCPU        float64 // the fake API's seconds per poll
	rss           int64
}

// runScale polls n distinct upstreams (one VIP each) at a 1 s interval for
// window and reads the cost from rhi's metrics and /proc.
func runScale(ctx context.Context, bins site.Binaries, n int, mode string, window time.Duration, r *report) (err error) {
	l, err := newLab(ctx)
	if err != nil {
		return err
	}
	defer closeLab(l, &err)
	vips := make([]site.VIP, n)
	for i := range vips {
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: []string{fmt.Sprintf("/apisix/upstreams/u%d", i)}}
	}
	// SPEC's default timeout (5 s), so that a slow poll is measured rather
	// than cut at the lab's 1 s.
	// No poll budget: these rows measure what a poll of n upstreams costs
	// at 1 s, which a stretched interval would hide.
	cfg := site.Config{PollInterval: time.Second, Timeout: 5 * time.Second, VIPs: vips, PollMode: mode, Extra: noBudget}
	fmt.Fprintf(os.Stderr, "   starting rhi with %d VIPs over %d upstreams (%s)\n", n, n, mode)
	s, err := startSite(ctx, l, bins, cfg)
	if err != nil {
		return err
	}
	defer s.StopRHI()
	apiPid, err := site.FindPid(s.APISocket())
	if err != nil {
		return err
	}
	if err := sleepUntil(ctx, time.Now().Add(3*time.Second)); err != nil {
		return err
	}
	st0, err := s.Status(ctx)
	if err != nil {
		return err
	}
	a, err := between(ctx, s, apiPid, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "   measuring %s of polls\n", window)
	if err := sleepUntil(ctx, time.Now().Add(window)); err != nil {
		return err
	}
	b, err := between(ctx, s, apiPid, false)
	if err != nil {
		return err
	}
	st1, err := s.Status(ctx)
	if err != nil {
		return err
	}
	polls := b.polls - a.polls
	if polls <= 0 {
		return fmt.Errorf("no poll completed in %s", window)
	}
	r.scales = append(r.scales, scaleResult{
		mode:      mode,
		upstreams: n, poll: cfg.PollInterval, timeout: cfg.Timeout,
		window:     b.rhi.At.Sub(a.rhi.At),
		polls:      int(polls),
		failed:     st1.ControlAPI.FailedPolls - st0.ControlAPI.FailedPolls,
		unreadable: st1.ControlAPI.Unreadable,
		wall:       (b.pollSeconds - a.pollSeconds) / polls,
		requests:   float64(b.requests-a.requests) / polls,
		rhiCPU:     (b.rhi.CPU - a.rhi.CPU).Seconds() / polls,
		rhiShare:   site.CPUShare(a.rhi, b.rhi),
		apiCPU:     (b.api.CPU - a.api.CPU).Seconds() / polls,
		rss:        b.rhi.RSS,
	})
	return nil
}

// reading is the counters at one moment between two polls.
type reading struct {
	rhi, api    site.Proc
	requests    int
	polls       float64
	pollSeconds float64
}

// between takes a reading while no poll is running: once the fake API's
// request counter has stood still for 30 ms (a poll's requests follow
// each other more closely), so that counts of requests and polls agree.
// Rendering /metrics costs rhi CPU that belongs to no poll, so it is read
// outside the window: first at its start (metricsFirst), last at its end.
func between(ctx context.Context, s *site.Site, apiPid int, metricsFirst bool) (reading, error) {
	var rd reading
	api := fakeapi.NewClient(s.APISocket())
	last, still := -1, 0
	err := lab.Eventually(ctx, 30*time.Second, 10*time.Millisecond, func(ctx context.Context) error {
		n, err := api.Requests()
		if err != nil {
			return err
		}
		if n == last {
			still++
		} else {
			last, still = n, 0
		}
		if still < 3 {
			return fmt.Errorf("a poll is running (%d requests so far)", n)
		}
		rd.requests = n
		return nil
	})
	if err != nil {
		return rd, err
	}
	if metricsFirst {
		if err := readPolls(ctx, s, &rd); err != nil {
			return rd, err
		}
	}
	if rd.rhi, err = site.ReadProc(s.RHI().Pid()); err != nil {
		return rd, err
	}
	if rd.api, err = site.ReadProc(apiPid); err != nil {
		return rd, err
	}
	if !metricsFirst {
		err = readPolls(ctx, s, &rd)
	}
	return rd, err
}

// readPolls reads the count and total wall time of rhi's polls.
func readPolls(ctx context.Context, s *site.Site, rd *reading) error {
	text, err := s.Metrics(ctx)
	if err != nil {
		return err
	}
	if rd.polls, err = site.Metric(text, "rhi_poll_duration_seconds_count"); err != nil {
		return err
	}
	rd.pollSeconds, err = site.Metric(text, "rhi_poll_duration_seconds_sum")
	return err
}
