package expect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probe"
)

type snapPoller health.Snapshot

func (s snapPoller) Poll(context.Context, []health.Upstream) health.Snapshot {
	return health.Snapshot(s)
}

type urlProber map[string]probe.Result

func (u urlProber) Probe(_ context.Context, specs []probe.Spec) []probe.Result {
	out := make([]probe.Result, len(specs))
	for i, s := range specs {
		out[i] = u[s.URL]
	}
	return out
}

// TestFromPollProbed: the fresh poll judges thresholds and probes as
// the daemon does, and says what withdrew a VIP.
func TestFromPollProbed(t *testing.T) {
	withProbe := func(v config.VIP, url string) config.VIP {
		s := probe.Defaults()
		s.URL = url
		v.Probe = &s
		return v
	}
	gated := expectVIP(ex1, config.All, "/apisix/upstreams/a")
	gated.Upstreams[0].MinHealthy = health.MinHealthy{Percent: 50}
	cfg := expectConfig(
		gated,
		withProbe(expectVIP(ex2, config.All, "/apisix/upstreams/b"), "http://127.0.0.1:1/down"),
		withProbe(expectVIP(ex3, config.All, "/apisix/upstreams/b"), "http://127.0.0.1:1/gone"),
	)
	cfg.Timeout = time.Second
	snap := snapPoller{
		"/apisix/upstreams/a": {Verdict: health.Up, Healthy: 1, Total: 4},
		"/apisix/upstreams/b": {Verdict: health.Up, Healthy: 2, Total: 2},
	}
	pr := urlProber{
		"http://127.0.0.1:1/down": {Outcome: probe.Down, Status: 503, Latency: 12 * time.Millisecond, Err: errors.New("GET http://127.0.0.1:1/down: status 503 (expected 200)")},
		"http://127.0.0.1:1/gone": {Outcome: probe.Unreachable, Latency: 2 * time.Millisecond, Err: errors.New("connection refused")},
	}
	w, err := FromPollProbed(context.Background(), cfg, snap, pr)
	if err != nil {
		t.Fatal(err)
	}
	want := []Wanted{
		{Prefix: ex1, Judged: true, Why: "a: 1 of 4 healthy, needs 50%"},
		{Prefix: ex2, Judged: true, Why: "probe down: GET http://127.0.0.1:1/down: status 503 (expected 200), 12ms"},
		{Prefix: ex3, Judged: false, Why: "probe unreachable: connection refused, 2ms"},
	}
	if diff := cmp.Diff(want, w.VIPs, cmpWant); diff != "" {
		t.Errorf("VIPs (-want +got):\n%s", diff)
	}
	// Both probes up and 2 of 4 healthy: everything announced.
	snap["/apisix/upstreams/a"] = health.Result{Verdict: health.Up, Healthy: 2, Total: 4}
	pr["http://127.0.0.1:1/down"] = probe.Result{Outcome: probe.Up, Status: 200}
	pr["http://127.0.0.1:1/gone"] = probe.Result{Outcome: probe.Up, Status: 200}
	w, err = FromPollProbed(context.Background(), cfg, snap, pr)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range w.VIPs {
		if !v.Judged || !v.Present || v.Why != "" {
			t.Errorf("%s: %+v, want judged present", v.Prefix, v)
		}
	}
}
