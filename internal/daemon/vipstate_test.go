package daemon

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
)

// TestVIPStatesReload: before seed nothing is known; a reload keeps the
// state of VIPs that stay (in their new positions), starts new ones from
// initial, and returns the dropped ones in their old order.
func TestVIPStatesReload(t *testing.T) {
	mk := func(addrs ...string) []config.VIP {
		var vs []config.VIP
		for _, a := range addrs {
			vs = append(vs, config.VIP{Address: netip.MustParsePrefix(a)})
		}
		return vs
	}
	p := netip.MustParsePrefix
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	var s vipStates
	s.index(mk("10.0.0.3/32", "10.0.0.1/32", "10.0.0.2/32"))
	if _, ok := s.at(p("10.0.0.1/32")); ok {
		t.Fatal("a VIP is known before seed")
	}
	s.seed(func(q netip.Prefix) bool { return q == p("10.0.0.1/32") }, t0)
	if i, ok := s.at(p("10.0.0.1/32")); !ok || i != 1 || !s.state[i].Announced {
		t.Fatalf("10.0.0.1 at %d (%v), state %+v", i, ok, s.get(p("10.0.0.1/32")))
	}
	if _, ok := s.at(p("10.0.0.9/32")); ok {
		t.Fatal("an unconfigured prefix is known")
	}
	s.state[1].Streak, s.flips[1] = 2, 5

	next := mk("10.0.0.4/32", "10.0.0.1/32", "2001:db8::1/128")
	gone, added := s.reload(next, func(netip.Prefix) decide.State { return decide.Initial(true) }, t1)
	s.index(next) // as setConfig does
	if want := []netip.Prefix{p("10.0.0.3/32"), p("10.0.0.2/32")}; !slices.Equal(gone, want) || added != 2 {
		t.Fatalf("dropped %v, added %d; want %v, 2", gone, added, want)
	}
	i, ok := s.at(p("10.0.0.1/32"))
	if !ok || i != 1 || s.state[i].Streak != 2 || s.flips[i] != 5 || !s.since[i].Equal(t0) {
		t.Errorf("kept VIP at %d (%v): %+v since %v flips %d", i, ok, s.state[i], s.since[i], s.flips[i])
	}
	for _, q := range []netip.Prefix{p("10.0.0.4/32"), p("2001:db8::1/128")} {
		i, ok := s.at(q)
		if !ok || s.state[i] != decide.Initial(true) || !s.since[i].Equal(t1) || s.flips[i] != 0 {
			t.Errorf("new VIP %s: at %d (%v), %+v since %v", q, i, ok, s.state[i], s.since[i])
		}
	}
	if _, ok := s.at(p("10.0.0.3/32")); ok {
		t.Error("a dropped VIP is still known")
	}
}
