package vip

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
)

// BenchmarkDecideAndSet is one tick's work after the poll, at rhi's
// target scale: decide over 10,000 VIPs of 10,000 upstreams, then Set the result
// on the (fake) kernel. "steady" changes nothing; "flip1000" turns 1,000
// VIPs' upstreams down and up on alternate ticks.
func BenchmarkDecideAndSet(b *testing.B) {
	const n = 10000
	cfg := &config.Config{FailurePolicy: config.FailurePolicy{ControlAPIUnreachable: config.Withdraw, MaxFailedPolls: 3, NoChecker: "healthy"}}
	up, down := health.Snapshot{}, health.Snapshot{}
	for i := range n {
		key := fmt.Sprintf("/apisix/upstreams/u%d", i)
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		cfg.VIPs = append(cfg.VIPs, config.VIP{Address: netip.PrefixFrom(addr, 32), Upstreams: health.Upstreams(key), Condition: config.All, Rise: 1, Fall: 1})
		up[key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 2}
		down[key] = up[key]
		if i < 1000 {
			down[key] = health.Result{Verdict: health.Down, Total: 2}
		}
	}
	run := func(b *testing.B, snaps ...health.Snapshot) {
		f := newFakeKernel()
		f.addLink(iface)
		log, _ := logtest.NewNullLogger()
		log.SetLevel(logrus.InfoLevel)
		a := New(f, iface, log)
		states := map[netip.Prefix]decide.State{}
		var want Desired // refilled in place, as the daemon does
		tick := func(snap health.Snapshot) {
			decide.Tick(cfg, snap, states)
			want.Present, want.Absent = want.Present[:0], want.Absent[:0]
			for i := range cfg.VIPs { // in address order
				if p := cfg.VIPs[i].Address; states[p].Announced {
					want.Present = append(want.Present, p)
				} else {
					want.Absent = append(want.Absent, p)
				}
			}
			if _, err := a.Set(context.Background(), want); err != nil {
				b.Fatal(err)
			}
		}
		tick(up)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			tick(snaps[i%len(snaps)])
			i++
		}
	}
	b.Run("steady", func(b *testing.B) { run(b, up) })
	b.Run("flip1000", func(b *testing.B) { run(b, down, up) })
}
