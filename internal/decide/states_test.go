package decide

import (
	"math/rand"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rhi-daemon/rhi/internal/health"
)

// TestTickStatesIsTick replays random polls through Tick and TickStates
// side by side: the same changes in the same order after every poll, and
// the same state for every VIP.
func TestTickStatesIsTick(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	cfg := seedConfig()
	cfg.VIPs[0].Rise, cfg.VIPs[1].Fall = 2, 3
	keys := []string{"/apisix/upstreams/api", "/apisix/upstreams/auth", "/apisix/upstreams/admin", "/apisix/upstreams/app-primary", "/apisix/upstreams/app-reserve"}
	byPrefix := map[netip.Prefix]State{}
	inOrder := make([]State, len(cfg.VIPs))
	for i := range cfg.VIPs {
		present := i%2 == 0
		byPrefix[cfg.VIPs[i].Address] = Initial(present)
		inOrder[i] = Initial(present)
	}
	changed := 0
	for poll := 0; poll < 300; poll++ {
		snap := health.Snapshot{}
		for _, k := range keys {
			if rng.Intn(10) > 0 { // now and then missing: failed
				snap[k] = res(allVerdicts[rng.Intn(len(allVerdicts))])
			}
		}
		want := Tick(cfg, snap, byPrefix)
		got := TickStates(cfg, snap, nil, inOrder)
		if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
			t.Fatalf("poll %d: changes differ (-Tick +TickStates):\n%s", poll, diff)
		}
		changed += len(got)
		for i := range cfg.VIPs {
			if diff := cmp.Diff(byPrefix[cfg.VIPs[i].Address], inOrder[i]); diff != "" {
				t.Fatalf("poll %d: %s differs (-Tick +TickStates):\n%s", poll, cfg.VIPs[i].Address, diff)
			}
		}
	}
	if changed == 0 {
		t.Fatal("no poll changed anything: the comparison proved nothing")
	}
}
