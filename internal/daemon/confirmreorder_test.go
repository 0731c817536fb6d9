package daemon

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestConfirmRecordsFollowTheirVIPAcrossAReorder: after a reload that
// reverses the VIPs, drops one and adds one, /status shows each VIP with
// its own confirmation record (the check before the reload was made in the
// old order), none with another VIP's, and the new VIP with none until a
// check names it; the next check carries each VIP's story (its latency)
// on by prefix, not by position.
func TestConfirmRecordsFollowTheirVIPAcrossAReorder(t *testing.T) {
	link := newFakeLink()
	r, b := newConfirmRig(t, link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	// BIRD missed 10.0.0.100's addition: it alone disagrees (at position 2
	// after the reorder, where the old check had 10.0.0.102, which agrees).
	b.mu.Lock()
	b.missed[netip.MustParsePrefix("10.0.0.100/32")] = false
	b.mu.Unlock()
	r.clock.advance(40 * time.Millisecond)
	r.confirm(t)
	before := map[string]bool{}
	lat := map[string]time.Duration{}
	for _, v := range r.d.Status().VIPs {
		if v.Bird == nil {
			t.Fatalf("%s: no record after a check", v.Address)
		}
		before[v.Address], lat[v.Address] = v.Bird.Agrees, v.Bird.Latency
	}
	if before["10.0.0.100/32"] || !before["10.0.0.101/32"] || !before["10.0.0.102/32"] {
		t.Fatalf("before the reload: agreement %v, want only 10.0.0.100 disagreeing", before)
	}

	next := seed(config.Withdraw)
	next.Bird.Socket = r.d.cfg.Bird.Socket
	vips := slices.Clone(next.VIPs)
	slices.Reverse(vips)                                                           // .102 .101 .100
	vips = append(vips[:1], vips[2:]...)                                           // .102 .100: .101 dropped
	vips = append([]config.VIP{vipCfg("10.0.0.103/32", config.All, api)}, vips...) // .103 .102 .100
	next.VIPs = vips
	r.d.applyReload(next)
	r.d.publish() // the view of the new config, before any check of it

	st := r.d.Status()
	got := map[string]*bool{}
	for _, v := range st.VIPs {
		if v.Bird == nil {
			got[v.Address] = nil
			continue
		}
		a := v.Bird.Agrees
		got[v.Address] = &a
		if v.Bird.Latency != lat[v.Address] {
			t.Errorf("%s shows latency %v, its own was %v", v.Address, v.Bird.Latency, lat[v.Address])
		}
	}
	if got["10.0.0.103/32"] != nil {
		t.Errorf("the new VIP 10.0.0.103 shows a record (agrees %v) before any check named it", *got["10.0.0.103/32"])
	}
	for _, a := range []string{"10.0.0.102/32", "10.0.0.100/32"} {
		switch {
		case got[a] == nil:
			t.Errorf("%s shows no record after the reorder, its own said agrees=%v", a, before[a])
		case *got[a] != before[a]:
			t.Errorf("%s shows agrees=%v after the reorder, its own record said agrees=%v", a, *got[a], before[a])
		}
	}

	// The next check, in the new order, keeps each VIP's latency (the
	// same change) rather than another VIP's.
	r.clock.advance(time.Second)
	r.tick(t)
	r.confirm(t)
	for _, v := range r.d.Status().VIPs {
		if v.Address == "10.0.0.103/32" || v.Bird == nil {
			continue
		}
		if v.Bird.Latency != lat[v.Address] {
			t.Errorf("after the next check %s has latency %v, its own was %v", v.Address, v.Bird.Latency, lat[v.Address])
		}
	}
}
