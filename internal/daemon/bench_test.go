package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/vip"
	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// staticHealth answers every poll with the same snapshot. It plans as the
// APISIX client does, so that the loop holds what it holds in production.
type staticHealth health.Snapshot

func (s staticHealth) Poll(context.Context, []health.Upstream) health.Snapshot {
	return health.Snapshot(s)
}

func (s staticHealth) Plan(ups []health.Upstream) health.Plan { return apisix.NewPlan(ups) }

func (s staticHealth) PollPlan(context.Context, health.Plan, health.PollOptions) (health.Snapshot, health.PollCost) {
	return health.Snapshot(s), health.PollCost{}
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
		cfg.VIPs = append(cfg.VIPs, config.VIP{Address: netip.PrefixFrom(addr, 32), Upstreams: health.Upstreams(keys[i]), Condition: config.All, Rise: 1, Fall: 1})
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

// BenchmarkDaemonTickSteady10000 is a tick that changes nothing at 10,000
// VIPs with the real vip.Announcer over a stand-in kernel (its dump a
// copy): Set finds the interface and what it is told as the previous Set
// left them.
func BenchmarkDaemonTickSteady10000(b *testing.B) {
	cfg, keys := manyVIPs(10000)
	snap := health.Snapshot{}
	for _, key := range keys {
		snap[key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 2}
	}
	quiet := logrus.New()
	quiet.Out = io.Discard
	a := vip.New(newBenchKernel(10000), "rhi0", quiet)
	d := New(cfg, Deps{Health: staticHealth(snap), Announcer: a, Log: quiet, Now: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	d.tick(ctx)
	d.tick(ctx)
	b.ReportAllocs()
	for b.Loop() {
		d.tick(ctx)
	}
}

// BenchmarkHealthz10000 is what the systemd watchdog and /healthz build to
// judge the loop at 10,000 VIPs: the Summary, against the whole Status
// they built before.
func BenchmarkHealthz10000(b *testing.B) {
	cfg, keys := manyVIPs(10000)
	hs := newFakeHealth()
	hs.set(health.Up, keys...)
	link := newFakeLink()
	d := New(cfg, Deps{Health: hs, Announcer: link, Confirmer: newFakeBird(link), Now: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	d.tick(ctx)
	d.conf.once(ctx, <-d.conf.jobs)
	b.Run("status", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d.Status().VIPs == nil {
				b.Fatal("no VIPs")
			}
		}
	})
	b.Run("summary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !d.Summary().Ready {
				b.Fatal("not ready")
			}
		}
	})
}

// BenchmarkLiveHeap10000 measures what a daemon with 10,000 VIPs over
// 10,000 upstreams keeps between ticks, confirmations included: the heap
// after a GC, less the heap before it was built (config and snapshot
// included, as the real daemon holds them). The interface is the real
// vip.Announcer over a stand-in for the kernel, so that its state counts
// as it does in rhi; the stand-ins for the kernel and the control API are
// built before the first measure (their memory is not rhi's). It is the
// floor under rhi's idle RSS at that size (< 30 MB); a tick's
// garbage comes on top. With -memprofile (and -memprofilerate=1) the
// profile shows the last daemon built, kept alive in liveHeapKept.
func BenchmarkLiveHeap10000(b *testing.B) {
	var before, after runtime.MemStats
	for b.Loop() {
		liveHeapKept = nil
		kernel := newBenchKernel(10000)
		hs := newFakeHealth()
		_, keys := manyVIPs(10000) // the stand-in's keys: the daemon's config is built below
		hs.set(health.Up, keys...)
		runtime.GC()
		runtime.ReadMemStats(&before)
		cfg, _ := manyVIPs(10000) // the config is the daemon's
		quiet := logrus.New()
		quiet.Out = io.Discard
		link := vip.New(kernel, "rhi0", quiet)
		d := New(cfg, Deps{Health: hs, Announcer: link, Confirmer: &fakeBird{missed: map[netip.Prefix]bool{}}, Now: func() time.Time { return time.Unix(0, 0) }})
		ctx := context.Background()
		for range 3 {
			d.tick(ctx)
			d.requestConfirm() // as the slow timer does
			d.conf.once(ctx, <-d.conf.jobs)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MiB")
		liveHeapKept = d
		runtime.KeepAlive(hs)
		runtime.KeepAlive(kernel)
	}
}

// liveHeapKept holds BenchmarkLiveHeap10000's last daemon for -memprofile.
var liveHeapKept *Daemon

// benchKernel is a stand-in for the kernel's side of one interface for
// benchmarks: its addresses in the order they were added, in storage
// sized up front so that it allocates nothing once built.
type benchKernel struct {
	link  netlink.Link
	addrs []netip.Prefix
	at    map[netip.Prefix]int
}

func newBenchKernel(n int) *benchKernel {
	return &benchKernel{
		link:  &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "rhi0", Index: 7, Flags: net.FlagUp, RawFlags: unix.IFF_LOWER_UP}},
		addrs: make([]netip.Prefix, 0, n),
		at:    make(map[netip.Prefix]int, n),
	}
}

func (k *benchKernel) LinkByName(name string) (netlink.Link, error) {
	if name != "rhi0" {
		return nil, netlink.LinkNotFoundError{}
	}
	return k.link, nil
}

func (k *benchKernel) AppendPrefixes(index int, into []netip.Prefix, peers []vip.Peer) ([]netip.Prefix, []vip.Peer, error) {
	return append(into, k.addrs...), peers, nil
}

func (k *benchKernel) WriteAddrs(ctx context.Context, index int, changes []rtnl.AddrChange) ([]error, error) {
	answers := make([]error, len(changes))
	for i, c := range changes {
		_, there := k.at[c.Prefix]
		switch {
		case c.Add && there:
			answers[i] = unix.EEXIST
		case c.Add:
			k.at[c.Prefix] = len(k.addrs)
			k.addrs = append(k.addrs, c.Prefix)
		case !there:
			answers[i] = unix.EADDRNOTAVAIL
		default:
			j := k.at[c.Prefix]
			delete(k.at, c.Prefix)
			k.addrs = append(k.addrs[:j], k.addrs[j+1:]...)
			for q, at := range k.at {
				if at > j {
					k.at[q] = at - 1
				}
			}
		}
	}
	return answers, nil
}
