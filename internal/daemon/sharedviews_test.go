package daemon

import (
	"context"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// TestSharedSlicesUnderReaders ticks a daemon on a real Announcer through
// health flips, drains, reapplies, reloads and outside changes while other
// goroutines read Status and Summary (run it with -race): every since,
// flips and Present slice a view was published with must still hold, many
// publishes later, what it held then, and Summary must judge as Status
// does.
func TestSharedSlicesUnderReaders(t *testing.T) {
	quiet := logrus.New()
	quiet.Out = io.Discard
	kernel := newBenchKernel(8)
	h, c := newFakeHealth(), &clock{t: time.Unix(1_700_000_000, 0)}
	cfg := seed(config.Withdraw)
	d := New(cfg, Deps{Health: h, Announcer: &counted{Announcer: vip.New(kernel, "rhi0", quiet)}, Log: quiet, Now: c.now})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, m := d.Status(), d.Summary()
				now := s.LastTick.Add(time.Second)
				if (status.Judge(m, now) == nil) != (status.Judge(s, now) == nil) && s.LastTick.Equal(m.LastTick) {
					t.Errorf("Summary and Status judge one tick apart: %v / %v", status.Judge(m, now), status.Judge(s, now))
				}
				for _, v := range s.VIPs {
					_ = v.Since
				}
			}
		}()
	}
	type held struct {
		since   []time.Time
		flips   []uint32
		present []netip.Prefix
		copies  [3]any
	}
	var hs []held
	rng := rand.New(rand.NewPCG(16, 15))
	keys := []string{api, auth, admin, primary, reserve}
	verdicts := []health.Verdict{health.Up, health.Down, health.NoChecker}
	for step := range 300 {
		switch rng.IntN(6) {
		case 0, 1:
			h.set(verdicts[rng.IntN(len(verdicts))], keys[rng.IntN(len(keys))])
		case 2:
			var ds drain.Set
			if rng.IntN(2) == 0 {
				ds.VIPs = map[netip.Prefix]bool{cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address: true}
			}
			d.drains.drained = ds
			d.reapply(context.Background())
		case 3:
			next := *cfg
			next.VIPs = slices.Clone(cfg.VIPs)
			rng.Shuffle(len(next.VIPs), func(i, j int) { next.VIPs[i], next.VIPs[j] = next.VIPs[j], next.VIPs[i] })
			cfg = &next
			d.applyReload(cfg)
		case 4:
			kernel.outside(cfg.VIPs[rng.IntN(len(cfg.VIPs))].Address, rng.IntN(2) == 0)
			d.reapply(context.Background())
		}
		c.advance(3 * time.Second)
		d.tick(context.Background())
		v := d.views.cur.Load()
		hs = append(hs, held{since: v.vips.since, flips: v.vips.flips, present: v.iface.Present,
			copies: [3]any{slices.Clone(v.vips.since), slices.Clone(v.vips.flips), slices.Clone(v.iface.Present)}})
		for i, x := range hs {
			if !slices.Equal(x.since, x.copies[0].([]time.Time)) || !slices.Equal(x.flips, x.copies[1].([]uint32)) ||
				!slices.Equal(x.present, x.copies[2].([]netip.Prefix)) {
				t.Fatalf("step %d: what publish %d shared has changed since", step, i)
			}
		}
	}
	close(stop)
	wg.Wait()
}
