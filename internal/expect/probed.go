package expect

import (
	"context"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probe"
)

// Prober sends the VIPs' data-path probes, as the daemon does
// (*probe.Prober).
type Prober interface {
	Probe(ctx context.Context, specs []probe.Spec) []probe.Result
}

// FromPollProbed is FromPoll that also sends each VIP's probe
// through pr, alongside the poll and under apisix_timeout, and judges the
// VIP as the daemon does (decide.WithProbe): a probe that is down makes it
// unavailable, one that is unreachable leaves it unjudged. A nil pr, or a
// config without probes, is FromPoll.
func FromPollProbed(ctx context.Context, cfg *config.Config, p Poller, pr Prober) (*Want, error) {
	var specs []probe.Spec
	var idx []int
	for i := range cfg.VIPs {
		if s := cfg.VIPs[i].Probe; s != nil {
			specs, idx = append(specs, *s), append(idx, i)
		}
	}
	if pr == nil || len(specs) == 0 {
		return FromPoll(ctx, cfg, p)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	done := make(chan []probe.Result, 1)
	go func() { done <- pr.Probe(pctx, specs) }()
	w, err := FromPoll(ctx, cfg, p)
	res := <-done
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		var r probe.Result
		if j < len(res) {
			r = res[j]
		}
		judgeProbe(&w.VIPs[i], r)
	}
	return w, nil
}

// judgeProbe folds a VIP's probe result r into its expectation, as
// decide.WithProbe does, with the probe's status and latency in Why.
func judgeProbe(wv *Wanted, r probe.Result) {
	avail := decide.Unknown
	switch {
	case wv.Judged && wv.Present:
		avail = decide.Available
	case wv.Judged:
		avail = decide.Unavailable
	}
	pr := decide.ProbeUnreachable
	switch r.Outcome {
	case probe.Up:
		pr = decide.ProbeUp
	case probe.Down:
		pr = decide.ProbeDown
	}
	switch decide.WithProbe(avail, pr) {
	case decide.Available:
		wv.Present, wv.Judged = true, true
	case decide.Unavailable:
		wv.Present, wv.Judged = false, true
		if pr == decide.ProbeDown {
			wv.Why = probeWhy(r)
		}
	default:
		wv.Present, wv.Judged = false, false // Input takes it from the interface
		wv.Why = strings.TrimPrefix(wv.Why+"; "+probeWhy(r), "; ")
	}
}

// probeWhy is a probe's result for a reason: "probe down: GET … status 503
// (expected 200), 12ms".
func probeWhy(r probe.Result) string {
	s := "probe " + r.Outcome.String()
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	return s + ", " + r.Latency.Round(time.Millisecond).String()
}

// thresholdWhy names the upstreams of v below their capacity threshold,
// for the reason of a VIP the poll found unavailable ("api: 1 of 10
// healthy, needs 50%"); "" when none is.
func thresholdWhy(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) string {
	var out []string
	for i := range v.Upstreams {
		u := &v.Upstreams[i]
		r, ok := snap[u.Key]
		if ok && !u.MinHealthy.IsZero() && decide.ClassifyUpstream(u, r, noChecker) == decide.UpstreamDown && decide.Classify(r, noChecker) == decide.UpstreamUp {
			out = append(out, decide.Describe(u, r))
		}
	}
	return strings.Join(out, "; ")
}
