package main

import (
	"testing"

	"github.com/rhi-daemon/rhi/internal/status"
)

func TestUpstreamAndProbeCells(t *testing.T) {
	tests := []struct{ got, want string }{
		{upstreamCell(status.UpstreamStatus{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 1, Nodes: 1}), "upstreams/api=up"},
		{upstreamCell(status.UpstreamStatus{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 1, Nodes: 10, MinHealthy: "50%", Needed: 5}), "upstreams/api=up(1/10<5, min 50%)"},
		{upstreamCell(status.UpstreamStatus{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 2, Nodes: 4, MinHealthy: "50%", Needed: 2}), "upstreams/api=up(2/4>=2, min 50%)"},
		{probeCell(&status.ProbeStatus{Result: "down", Status: 503, LatencySeconds: 0.0123}), "probe=down(503 12ms)"},
		{probeCell(&status.ProbeStatus{Result: "unreachable", LatencySeconds: 1}), "probe=unreachable(1s)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("cell %q, want %q", tt.got, tt.want)
		}
	}
}

func TestCapacityWhy(t *testing.T) {
	v := status.VIPStatus{
		Upstreams: []status.UpstreamStatus{
			{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 1, Nodes: 4, MinHealthy: "50%", Needed: 2},
			{Key: "/apisix/upstreams/web", Verdict: "up", Healthy: 2, Nodes: 4, MinHealthy: "50%", Needed: 2},
			{Key: "/apisix/upstreams/img", Verdict: "down", Healthy: 0, Nodes: 2},
		},
		Probe: &status.ProbeStatus{Result: "down", Status: 503, Error: "GET http://127.0.0.1:9080/ : status 503 (expected 200)"},
	}
	const want = "upstreams/api: 1 of 4 healthy, needs 50%; probe down: GET http://127.0.0.1:9080/ : status 503 (expected 200)"
	if got := capacityWhy(v); got != want {
		t.Errorf("capacityWhy = %q, want %q", got, want)
	}
	v.Desired = true
	if got := capacityWhy(v); got != "" {
		t.Errorf("capacityWhy of a desired VIP = %q, want empty", got)
	}
}
