package decide

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// benchConfig is n VIPs, each over an upstream of its own, all up; with
// threshold, each upstream needs half its nodes and has 1 to 4 of 4
// healthy.
func benchConfig(n int, threshold bool) (*config.Config, health.Snapshot) {
	cfg := &config.Config{FailurePolicy: policy(config.Withdraw, 3)}
	snap := health.Snapshot{}
	for i := range n {
		key := fmt.Sprintf("/apisix/upstreams/u%d", i)
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		ups := health.Upstreams(key)
		snap[key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 2}
		if threshold {
			ups[0].MinHealthy = health.MinHealthy{Percent: 50}
			snap[key] = health.Result{Verdict: health.Up, Healthy: int32(1 + i%4), Total: 4}
		}
		cfg.VIPs = append(cfg.VIPs, config.VIP{Address: netip.PrefixFrom(addr, 32), Upstreams: ups, Condition: config.All, Rise: 1, Fall: 1})
	}
	return cfg, snap
}

// BenchmarkTick10000 decides 10,000 VIPs over 10,000 upstreams (target:
// decision + diff < 5 ms a tick; the diff is in vip's BenchmarkDecideAndSet).
func BenchmarkTick10000(b *testing.B) { benchTick(b, false) }

// BenchmarkTick10000Thresholds is BenchmarkTick10000 with a share
// threshold on every upstream (still under 5 ms a tick).
func BenchmarkTick10000Thresholds(b *testing.B) { benchTick(b, true) }

func benchTick(b *testing.B, threshold bool) {
	cfg, snap := benchConfig(10000, threshold)
	states := map[netip.Prefix]State{}
	Tick(cfg, snap, states)
	b.ReportAllocs()
	for b.Loop() {
		Tick(cfg, snap, states)
	}
}

// BenchmarkTickStates10000 is BenchmarkTick10000 with the states in
// config order (the daemon's representation).
func BenchmarkTickStates10000(b *testing.B) {
	cfg, snap := benchConfig(10000, false)
	states := make([]State, len(cfg.VIPs))
	TickStates(cfg, snap, nil, states)
	b.ReportAllocs()
	for b.Loop() {
		TickStates(cfg, snap, nil, states)
	}
}
