package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// memoHealth is stepHealth whose Plan gives the same plan again for the
// same keys in the same order, as a source that caches its plans may.
type memoHealth struct {
	*stepHealth
	plans map[string]health.Plan
}

func (m *memoHealth) Plan(ups []health.Upstream) health.Plan {
	var b strings.Builder
	for _, u := range ups {
		b.WriteString(u.Key)
		b.WriteByte(0)
	}
	if p, ok := m.plans[b.String()]; ok {
		return p
	}
	p := m.stepHealth.Plan(ups)
	m.plans[b.String()] = p
	return p
}

// TestFastPollsFollowAReloadOfTheSameKeys: a reload that keeps the keys,
// in their order, but changes which VIPs use them, may get the same plan
// from its source; the fast polls must still step the VIPs of the new
// configuration, not those of the old (here one that is gone).
func TestFastPollsFollowAReloadOfTheSameKeys(t *testing.T) {
	cfg := fastSeed()
	cfg.VIPs = []config.VIP{
		vipCfg("10.0.0.100/32", config.All, api),
		vipCfg("10.0.0.101/32", config.All, auth),
		vipCfg("10.0.0.102/32", config.All, api),
	}
	r := newFastRig(t, cfg, newFakeLink())
	r.d.health = &memoHealth{stepHealth: r.h, plans: map[string]health.Plan{}}
	r.d.setConfig(cfg) // planned by the memoizing source
	r.h.res[api], r.h.res[auth] = up(2, 2, 0), up(2, 2, 0)
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	next := fastSeed()
	next.VIPs = cfg.VIPs[:2] // 10.0.0.102 removed: the keys are the same
	plan := r.d.plan
	r.d.applyReload(next)
	if r.d.plan != plan {
		t.Fatal("the source gave a new plan; the test needs the same")
	}
	r.h.res[api] = up(2, 2, 1) // a node mostly_healthy: api moves
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
	r.expect(t, "10.0.0.100 10.0.0.101")
	if r.d.polls.fast.n != 1 {
		t.Fatalf("%d moving, want api", r.d.polls.fast.n)
	}
	r.h.res[api] = up(0, 2, 0)
	r.clock.advance(100 * time.Millisecond)
	r.d.fastTick(context.Background())
	r.expect(t, "10.0.0.101")
}
