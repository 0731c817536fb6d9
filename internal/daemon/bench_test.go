package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// staticHealth answers every poll with the same snapshot.
type staticHealth health.Snapshot

func (s staticHealth) Poll(context.Context, []health.Upstream) health.Snapshot {
	return health.Snapshot(s)
}

// manyVIPs is the seed's config with n VIPs, each on its own upstream
// (/apisix/upstreams/u<i>), and those upstreams' keys.
func manyVIPs(n int) (*config.Config, []string) {
	cfg := seed(config.Withdraw)
	cfg.VIPs = nil
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprintf("/apisix/upstreams/u%d", i)
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		cfg.VIPs = append(cfg.VIPs, config.VIP{Address: netip.PrefixFrom(addr, 32), Upstreams: health.MustUpstreams(keys[i]), Condition: config.All, Rise: 1, Fall: 1})
	}
	return cfg, keys
}

// BenchmarkDaemonTick10000 is one whole tick of the loop at 10,000 VIPs
// over 10,000 upstreams, the poll itself excepted (a fixed snapshot) and
// the interface a fake: decide, set, publish the status view.
func BenchmarkDaemonTick10000(b *testing.B) {
	cfg, keys := manyVIPs(10000)
	snap := health.Snapshot{}
	for _, key := range keys {
		snap[key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 2}
	}
	d := New(cfg, Deps{Health: staticHealth(snap), Announcer: newFakeLink(), Now: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	d.tick(ctx)
	b.ReportAllocs()
	for b.Loop() {
		d.tick(ctx)
	}
}

// BenchmarkLiveHeap10000 measures what a daemon with 10,000 VIPs over
// 10,000 upstreams keeps between ticks, confirmations included: the heap
// after a GC, less the heap before it was built (config and snapshot
// included, as the real daemon holds them). It is the floor under rhi's
// idle RSS at that size (SPEC §8: < 30 MB); a tick's garbage comes on top.
func BenchmarkLiveHeap10000(b *testing.B) {
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		cfg, keys := manyVIPs(10000)
		hs := newFakeHealth()
		hs.set(health.Up, keys...)
		link := newFakeLink()
		d := New(cfg, Deps{Health: hs, Announcer: link, Confirmer: newFakeBird(link), Now: func() time.Time { return time.Unix(0, 0) }})
		ctx := context.Background()
		for range 3 {
			d.tick(ctx)
			d.requestConfirm() // as the slow timer does
			d.conf.once(ctx, <-d.conf.jobs)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MiB")
		runtime.KeepAlive(d)
		runtime.KeepAlive(hs)
	}
}
