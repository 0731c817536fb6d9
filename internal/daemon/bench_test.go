package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
)

// staticHealth answers every poll with the same snapshot.
type staticHealth apisix.Snapshot

func (s staticHealth) Poll(context.Context, []string) apisix.Snapshot { return apisix.Snapshot(s) }

// BenchmarkDaemonTick10000 is one whole tick of the loop at 10,000 VIPs
// over 10,000 upstreams, the poll itself excepted (a fixed snapshot) and
// the interface a fake: decide, set, publish the status view.
func BenchmarkDaemonTick10000(b *testing.B) {
	const n = 10000
	cfg := seed(config.Withdraw)
	cfg.VIPs = nil
	snap := apisix.Snapshot{}
	for i := range n {
		key := fmt.Sprintf("/apisix/upstreams/u%d", i)
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		cfg.VIPs = append(cfg.VIPs, config.VIP{Address: netip.PrefixFrom(addr, 32), Upstreams: []string{key}, Condition: config.All, Rise: 1, Fall: 1})
		snap[key] = apisix.Result{Verdict: apisix.Up, Healthy: 1, Total: 2}
	}
	d := New(cfg, Deps{Health: staticHealth(snap), Announcer: newFakeLink(), Now: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	d.tick(ctx)
	b.ReportAllocs()
	for b.Loop() {
		d.tick(ctx)
	}
}
