package daemon

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/vip"
	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// planner is a vip.Announcer that remembers nothing between calls: each
// call is made by a new one, so every Set plans. It is what an Announcer
// that may skip its plan must always agree with.
type planner struct {
	nl  vip.Netlink
	log logrus.FieldLogger
}

func (p planner) fresh() *vip.Announcer { return vip.New(p.nl, "rhi0", p.log) }

func (p planner) Observe(ctx context.Context) (vip.State, error) { return p.fresh().Observe(ctx) }

func (p planner) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	return p.fresh().Set(ctx, want)
}

func (p planner) Renew(ctx context.Context, q netip.Prefix, present bool) error {
	return p.fresh().Renew(ctx, q, present)
}

func (p planner) DeletePeers(ctx context.Context, peers []vip.Peer) error {
	return p.fresh().DeletePeers(ctx, peers)
}

// counted is a vip.Announcer that counts the Sets that changed nothing
// and failed in nothing: those the Announcer may do without a plan.
type counted struct {
	*vip.Announcer
	steady int
}

func (c *counted) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	st, err := c.Announcer.Set(ctx, want)
	if err == nil && st.Changed == 0 {
		c.steady++
	}
	return st, err
}

// outside changes the bench kernel as someone else would.
func (k *benchKernel) outside(p netip.Prefix, add bool) {
	k.WriteAddrs(context.Background(), 0, []rtnl.AddrChange{{Prefix: p, Add: add}})
}

// TestSteadyTicksRandomly runs two daemons on real Announcers over two
// stand-in kernels through the same random events: health flips, drains,
// reloads (VIPs dropped and added, the same config again, as a new
// pointer and as the same one), addresses added and deleted by someone
// else, renewals, reapplies, unmanaged_addresses withdraw or report. One
// daemon's Announcer may skip its plan when nothing changed; the other's
// always plans (planner). After every event both interfaces must hold the
// same addresses and both daemons report the same status; enough ticks
// must change nothing for that to mean something.
func TestSteadyTicksRandomly(t *testing.T) {
	keys := []string{api, auth, admin, primary, reserve}
	verdicts := []health.Verdict{health.Up, health.Up, health.Down, health.NoChecker}
	extra := []config.VIP{vipCfg("10.0.0.103/32", config.Any, api, reserve), vipCfg("2001:db8::1/128", config.All, auth)}
	others := []netip.Prefix{netip.MustParsePrefix("10.0.0.200/32"), netip.MustParsePrefix("10.0.0.100/32"), netip.MustParsePrefix("2001:db8::1/128")}
	steadies, ticks := 0, 0
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 15))
		quiet := logrus.New()
		quiet.Out = io.Discard
		type side struct {
			d      *Daemon
			kernel *benchKernel
			health *fakeHealth
			clock  *clock
		}
		cfg := seed0(rng)
		var hinted *counted
		var sides [2]side
		for i := range sides {
			s := side{kernel: newBenchKernel(16), health: newFakeHealth(), clock: &clock{t: time.Unix(1_700_000_000, 0)}}
			a := vip.New(s.kernel, "rhi0", quiet)
			var ann Announcer = planner{s.kernel, quiet}
			if i == 0 {
				hinted = &counted{Announcer: a}
				ann = hinted
			}
			s.d = New(cfg, Deps{Health: s.health, Announcer: ann, Log: quiet, Now: s.clock.now})
			sides[i] = s
		}
		both := func(f func(s side)) {
			for _, s := range sides {
				f(s)
			}
		}
		for step := range 60 {
			switch rng.IntN(12) {
			case 0, 1:
				k, v := keys[rng.IntN(len(keys))], verdicts[rng.IntN(len(verdicts))]
				both(func(s side) { s.health.set(v, k) })
			case 2:
				var ds drain.Set
				if rng.IntN(2) == 0 {
					ds.VIPs = map[netip.Prefix]bool{cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address: true}
				}
				both(func(s side) { s.d.drains.drained = ds; s.d.reapply(context.Background()) })
			case 3:
				next := *cfg
				next.VIPs = slices.Clone(cfg.VIPs)
				switch rng.IntN(3) {
				case 0:
					if len(next.VIPs) > 1 {
						next.VIPs = slices.Delete(next.VIPs, 0, 1)
					}
				case 1:
					next.VIPs = append(next.VIPs, extra[rng.IntN(len(extra))])
					slices.SortFunc(next.VIPs, func(a, b config.VIP) int { return a.Address.Compare(b.Address) })
					next.VIPs = slices.CompactFunc(next.VIPs, func(a, b config.VIP) bool { return a.Address == b.Address })
				}
				cfg = &next
				both(func(s side) { s.d.applyReload(cfg) })
			case 4:
				both(func(s side) { s.d.applyReload(cfg) }) // the same pointer again
			case 5, 6:
				p, add := others[rng.IntN(len(others))], rng.IntN(2) == 0
				both(func(s side) { s.kernel.outside(p, add) })
			case 7:
				p := cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address
				present := rng.IntN(2) == 0
				both(func(s side) { s.d.renew(context.Background(), map[netip.Prefix]bool{p: present}) })
			case 8:
				both(func(s side) { s.d.reapply(context.Background()) })
			}
			both(func(s side) { s.clock.advance(3 * time.Second); s.d.tick(context.Background()) })
			ticks++
			a, b := slices.Clone(sides[0].kernel.addrs), slices.Clone(sides[1].kernel.addrs)
			slices.SortFunc(a, netip.Prefix.Compare)
			slices.SortFunc(b, netip.Prefix.Compare)
			if !slices.Equal(a, b) {
				t.Fatalf("seed %d step %d: the interfaces differ:\nsteady: %v\nplans:  %v", seed, step, a, b)
			}
			if a, b := sides[0].d.Status(), sides[1].d.Status(); !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d step %d: the statuses differ:\nsteady: %s\nplans:  %s", seed, step, statusJSON(t, sides[0].d), statusJSON(t, sides[1].d))
			}
		}
		steadies += hinted.steady
	}
	t.Logf("%d of %d ticks set the interface the steady way", steadies, ticks)
	if steadies < ticks/5 {
		t.Errorf("only %d of %d ticks went the steady way: the test shows little", steadies, ticks)
	}
}

// seed0 is the seed's config, under unmanaged_addresses: withdraw one
// time in two.
func seed0(rng *rand.Rand) *config.Config {
	cfg := seed(config.Withdraw)
	if rng.IntN(2) == 0 {
		cfg.Unmanaged = config.UnmanagedWithdraw
	}
	return cfg
}

func statusJSON(t *testing.T, d *Daemon) string {
	t.Helper()
	b, err := json.Marshal(d.Status())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
