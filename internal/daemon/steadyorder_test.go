package daemon

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/vip"
	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// rogueKernel is a benchKernel that can also refuse writes of chosen
// prefixes (EPERM), interrupt its next dumps (NLM_F_DUMP_INTR, with half
// the list), and hold point-to-point entries.
type rogueKernel struct {
	*benchKernel
	peers     []vip.Peer
	interrupt int
	fail      map[netip.Prefix]bool
}

func (k *rogueKernel) AppendPrefixes(index int, into []netip.Prefix, peers []vip.Peer) ([]netip.Prefix, []vip.Peer, error) {
	list, peers, _ := k.benchKernel.AppendPrefixes(index, into, peers)
	peers = append(peers, k.peers...)
	if k.interrupt > 0 {
		k.interrupt--
		return list[:len(list)/2], peers, netlink.ErrDumpInterrupted
	}
	return list, peers, nil
}

func (k *rogueKernel) WriteAddrs(ctx context.Context, index int, changes []rtnl.AddrChange) ([]error, error) {
	answers := make([]error, len(changes))
	for i, c := range changes {
		switch {
		case c.Peer.IsValid():
			j := slices.IndexFunc(k.peers, func(q vip.Peer) bool { return q.Local == c.Prefix.Addr() && q.Peer == c.Peer })
			if j < 0 {
				answers[i] = unix.EADDRNOTAVAIL
				continue
			}
			k.peers = slices.Delete(slices.Clone(k.peers), j, j+1)
		case k.fail[c.Prefix]:
			answers[i] = unix.EPERM
		default:
			a, _ := k.benchKernel.WriteAddrs(ctx, index, []rtnl.AddrChange{c})
			answers[i] = a[0]
		}
	}
	return answers, nil
}

// memRecord is an ownership record in memory that can be made to fail.
type memRecord struct {
	rec  *owned.Record
	fail bool
}

func (m *memRecord) Read() (owned.Record, error) {
	if m.rec == nil {
		return owned.Record{}, fs.ErrNotExist
	}
	return *m.rec, nil
}

func (m *memRecord) Write(r owned.Record) error {
	if m.fail {
		return errors.New("no space left on device")
	}
	r.VIPs = slices.Clone(r.VIPs)
	m.rec = &r
	return nil
}

func (m *memRecord) String() string { return "/run/rhi/owned" }

// TestSteadyTicksInAnyOrder is TestSteadyTicksRandomly with what its
// generator never produces: reloads that only reorder the VIPs, writes the
// kernel refuses, dumps interrupted (up to past the retries), point-to-point
// entries, a foreign non-host address, an ownership record that cannot be
// written, and restarts on the same interfaces. After every tick both
// interfaces must hold the same addresses and entries.
func TestSteadyTicksInAnyOrder(t *testing.T) {
	keys := []string{api, auth, admin, primary, reserve}
	verdicts := []health.Verdict{health.Up, health.Up, health.Down, health.NoChecker}
	extra := []config.VIP{vipCfg("10.0.0.103/32", config.Any, api, reserve), vipCfg("2001:db8::1/128", config.All, auth)}
	others := []netip.Prefix{netip.MustParsePrefix("10.0.0.200/32"), netip.MustParsePrefix("10.0.0.100/32"),
		netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("10.0.0.103/32"), netip.MustParsePrefix("10.9.0.0/24")}
	peer := vip.Peer{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.9.0.2/32")}
	steadies, ticks := 0, 0
	for seed := range uint64(40) { // 300 seeds passed when it was written (1.3 s; 11 s under -race)
		rng := rand.New(rand.NewPCG(seed, 16))
		quiet := logrus.New()
		quiet.Out = io.Discard
		type side struct {
			d      *Daemon
			kernel *rogueKernel
			rec    *memRecord
			health *fakeHealth
			clock  *clock
			hinted *counted
		}
		cfg := seed0(rng)
		var sides [2]*side
		boot := func(i int, s *side) {
			a := vip.New(s.kernel, "rhi0", quiet)
			var ann Announcer = planner{s.kernel, quiet}
			if i == 0 {
				if s.hinted != nil {
					steadies += s.hinted.steady
				}
				s.hinted = &counted{Announcer: a}
				ann = s.hinted
			}
			s.d = New(cfg, Deps{Health: s.health, Announcer: ann, Log: quiet, Now: s.clock.now, Record: s.rec})
		}
		for i := range sides {
			s := &side{kernel: &rogueKernel{benchKernel: newBenchKernel(16), fail: map[netip.Prefix]bool{}},
				rec: &memRecord{}, health: newFakeHealth(), clock: &clock{t: time.Unix(1_700_000_000, 0)}}
			boot(i, s)
			sides[i] = s
		}
		both := func(f func(s *side)) {
			for _, s := range sides {
				f(s)
			}
		}
		event := func() {
			switch rng.IntN(17) {
			case 0, 1:
				k, v := keys[rng.IntN(len(keys))], verdicts[rng.IntN(len(verdicts))]
				both(func(s *side) { s.health.set(v, k) })
			case 2:
				var ds drain.Set
				if rng.IntN(2) == 0 {
					ds.VIPs = map[netip.Prefix]bool{cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address: true}
				}
				both(func(s *side) { s.d.drains.drained = ds; s.d.reapply(context.Background()) })
			case 3:
				next := *cfg
				next.VIPs = slices.Clone(cfg.VIPs)
				if rng.IntN(2) == 0 && len(next.VIPs) > 1 {
					next.VIPs = slices.Delete(next.VIPs, 0, 1)
				} else {
					e := extra[rng.IntN(len(extra))]
					if !slices.ContainsFunc(next.VIPs, func(v config.VIP) bool { return v.Address == e.Address }) {
						next.VIPs = append(next.VIPs, e)
					}
				}
				cfg = &next
				both(func(s *side) { s.d.applyReload(cfg) })
			case 4:
				next := *cfg
				next.VIPs = slices.Clone(cfg.VIPs)
				rng.Shuffle(len(next.VIPs), func(i, j int) { next.VIPs[i], next.VIPs[j] = next.VIPs[j], next.VIPs[i] })
				cfg = &next
				both(func(s *side) { s.d.applyReload(cfg) }) // the same VIPs, reordered
				// and health moves before the next tick
				for range 2 {
					k, v := keys[rng.IntN(len(keys))], verdicts[rng.IntN(len(verdicts))]
					both(func(s *side) { s.health.set(v, k) })
				}
			case 5, 6:
				p, add := others[rng.IntN(len(others))], rng.IntN(2) == 0
				both(func(s *side) { s.kernel.outside(p, add) })
			case 7:
				p := cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address
				present := rng.IntN(2) == 0
				both(func(s *side) { s.d.renew(context.Background(), map[netip.Prefix]bool{p: present}) })
			case 8:
				both(func(s *side) { s.d.reapply(context.Background()) })
			case 9, 10:
				p := cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address
				f := rng.IntN(2) == 0
				both(func(s *side) { s.kernel.fail[p] = f })
			case 11:
				n := rng.IntN(6)
				both(func(s *side) { s.kernel.interrupt = n })
			case 12:
				add := rng.IntN(2) == 0
				both(func(s *side) {
					if add && len(s.kernel.peers) == 0 {
						s.kernel.peers = []vip.Peer{peer}
					} else if !add {
						s.kernel.peers = nil
					}
				})
			case 13:
				f := rng.IntN(2) == 0
				both(func(s *side) { s.rec.fail = f })
			case 14:
				for i, s := range sides {
					boot(i, s)
				}
			}
		}
		for step := range 80 {
			for range 1 + rng.IntN(3) { // events may meet in one tick
				event()
			}
			both(func(s *side) { s.clock.advance(3 * time.Second); s.d.tick(context.Background()) })
			ticks++
			a, b := slices.Clone(sides[0].kernel.addrs), slices.Clone(sides[1].kernel.addrs)
			slices.SortFunc(a, netip.Prefix.Compare)
			slices.SortFunc(b, netip.Prefix.Compare)
			if !slices.Equal(a, b) || len(sides[0].kernel.peers) != len(sides[1].kernel.peers) {
				t.Fatalf("seed %d step %d: the interfaces differ:\nsteady: %v %v\nplans:  %v %v", seed, step,
					a, sides[0].kernel.peers, b, sides[1].kernel.peers)
			}
			if x, y := sides[0].d.Status(), sides[1].d.Status(); !reflect.DeepEqual(x, y) {
				t.Fatalf("seed %d step %d: the statuses differ:\nsteady: %s\nplans:  %s", seed, step, statusJSON(t, sides[0].d), statusJSON(t, sides[1].d))
			}
		}
		steadies += sides[0].hinted.steady
	}
	t.Logf("%d of %d ticks set the interface the steady way", steadies, ticks)
	if steadies < ticks/20 {
		t.Errorf("only %d of %d ticks went the steady way: the test shows little", steadies, ticks)
	}
}

// TestSteadyReorderWithSwappedDesires reloads a config that only swaps two
// VIPs while their health swaps too: desired by position is then what the
// previous Set was told, but not VIP by VIP. The tick must not set the
// interface as before.
func TestSteadyReorderWithSwappedDesires(t *testing.T) {
	quiet := logrus.New()
	quiet.Out = io.Discard
	kernel := newBenchKernel(4)
	hinted := &counted{Announcer: vip.New(kernel, "rhi0", quiet)}
	h, c := newFakeHealth(), &clock{t: time.Unix(1_700_000_000, 0)}
	cfg := seed(config.Withdraw)
	h.set(health.Up, api, admin, primary, reserve)
	h.set(health.Down, auth)
	d := New(cfg, Deps{Health: h, Announcer: hinted, Log: quiet, Now: c.now})
	for range 3 {
		c.advance(3 * time.Second)
		d.tick(context.Background())
	}
	if hinted.steady == 0 {
		t.Fatal("no tick went the steady way: the test shows nothing")
	}
	next := *cfg
	next.VIPs = slices.Clone(cfg.VIPs)
	next.VIPs[0], next.VIPs[1] = next.VIPs[1], next.VIPs[0]
	d.applyReload(&next)
	h.set(health.Down, api)
	h.set(health.Up, auth)
	c.advance(3 * time.Second)
	d.tick(context.Background())
	got := slices.Clone(kernel.addrs)
	slices.SortFunc(got, netip.Prefix.Compare)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.101/32"), netip.MustParsePrefix("10.0.0.102/32")}
	if !slices.Equal(got, want) {
		t.Errorf("after the reorder the interface holds %v, want %v", got, want)
	}
}
