package decide

import (
	"net/netip"
	"testing"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

func TestWithProbe(t *testing.T) {
	A, U, K := Available, Unavailable, Unknown
	tests := []struct {
		a    Availability
		p    Probe
		want Availability
	}{
		{A, NoProbe, A}, {U, NoProbe, U}, {K, NoProbe, K},
		{A, ProbeUp, A}, {U, ProbeUp, U}, {K, ProbeUp, K},
		{A, ProbeDown, U}, {U, ProbeDown, U}, {K, ProbeDown, U},
		{A, ProbeUnreachable, K}, {U, ProbeUnreachable, U}, {K, ProbeUnreachable, K},
	}
	for _, tt := range tests {
		if got := WithProbe(tt.a, tt.p); got != tt.want {
			t.Errorf("WithProbe(%v, %v) = %v, want %v", tt.a, tt.p, got, tt.want)
		}
	}
}

// TestTickProbedSequences scripts a VIP with healthy upstreams through probe
// outcomes, under both failure policies: down withdraws at once (fall 1)
// whatever the policy; unreachable keeps the state until max_failed_polls,
// then the policy decides.
func TestTickProbedSequences(t *testing.T) {
	const key = "/apisix/upstreams/api"
	up := health.Snapshot{key: {Verdict: health.Up, Healthy: 2, Total: 2}}
	down := health.Snapshot{key: {Verdict: health.Down, Healthy: 0, Total: 2}}
	type step struct {
		snap  health.Snapshot
		probe Probe
		want  string // show(state) after the poll
	}
	tests := []struct {
		name   string
		action config.Action
		steps  []step
	}{
		{"down withdraws under withdraw", config.Withdraw, []step{
			{up, ProbeUp, "+healthy"}, {up, ProbeDown, "-unhealthy"}, {up, ProbeDown, "-unhealthy"}, {up, ProbeUp, "+healthy"},
		}},
		{"down withdraws under announce", config.Announce, []step{
			{up, ProbeUp, "+healthy"}, {up, ProbeDown, "-unhealthy"}, {up, ProbeUp, "+healthy"},
		}},
		{"unreachable then withdraw", config.Withdraw, []step{
			{up, ProbeUp, "+healthy"}, {up, ProbeUnreachable, "+unknown"}, {up, ProbeUnreachable, "+unknown"},
			{up, ProbeUnreachable, "-policy_withdraw"}, {up, ProbeUnreachable, "-policy_withdraw"}, {up, ProbeUp, "+healthy"},
		}},
		{"unreachable then announce", config.Announce, []step{
			{up, ProbeUp, "+healthy"}, {up, ProbeUnreachable, "+unknown"}, {up, ProbeUnreachable, "+unknown"},
			{up, ProbeUnreachable, "+policy_announce"}, {up, ProbeUp, "+healthy"},
		}},
		{"unreachable with upstream down is down", config.Announce, []step{
			{up, ProbeUp, "+healthy"}, {down, ProbeUnreachable, "-unhealthy"}, {up, ProbeUnreachable, "-unknown"},
		}},
		{"no probe follows the upstreams", config.Withdraw, []step{
			{up, NoProbe, "+healthy"}, {down, NoProbe, "-unhealthy"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := config.VIP{Address: netip.MustParsePrefix("192.0.2.10/32"), Upstreams: health.Upstreams(key), Condition: config.All, Rise: 1, Fall: 1}
			cfg := &config.Config{FailurePolicy: policy(tt.action, 3), VIPs: []config.VIP{v}}
			states := map[netip.Prefix]State{v.Address: Initial(false)}
			for i, s := range tt.steps {
				TickProbed(cfg, s.snap, []Probe{s.probe}, states)
				if got := show(states[v.Address]); got != s.want {
					t.Fatalf("poll %d (probe %v): %s, want %s", i, s.probe, got, s.want)
				}
			}
		})
	}
}

func TestTickProbedDetail(t *testing.T) {
	const key = "/apisix/upstreams/api"
	v := config.VIP{Address: netip.MustParsePrefix("192.0.2.10/32"), Upstreams: health.Upstreams(key), Condition: config.All, Rise: 1, Fall: 1}
	v.Upstreams[0].MinHealthy = health.MinHealthy{Percent: 50}
	cfg := &config.Config{FailurePolicy: policy(config.Withdraw, 3), VIPs: []config.VIP{v}}
	states := map[netip.Prefix]State{v.Address: Initial(true)}
	ch := TickProbed(cfg, health.Snapshot{key: {Verdict: health.Up, Healthy: 1, Total: 10}}, []Probe{ProbeDown}, states)
	if len(ch) != 1 || ch[0].Detail != "api: 1 of 10 healthy, needs 50%; probe: down" {
		t.Errorf("changes %+v, want one with detail %q", ch, "api: 1 of 10 healthy, needs 50%; probe: down")
	}
}
