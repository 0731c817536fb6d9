package expect

import (
	"net/netip"
	"testing"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/router"
)

var (
	tier4 = netip.MustParsePrefix("10.255.1.1/32")
	tier6 = netip.MustParsePrefix("2001:db8:ff::1/128")
)

// TestFromDaemonTier: the daemon's tier is checked for a present VIP
// whose degraded tier the config turns on, and only then.
func TestFromDaemonTier(t *testing.T) {
	cfg := &config.Config{Interface: "rhi0", VIPs: []config.VIP{
		{Address: tier4, Degraded: config.Degraded{Below: 50}},
		{Address: tier6},
	}}
	w, err := FromDaemon(cfg, Running{VIPs: []RunningVIP{
		{Address: tier4.String(), Desired: true, Tier: router.TierDegraded},
		{Address: tier6.String(), Desired: true, Tier: router.TierFull},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := w.Input(nil, nil, 0)
	if in.VIPs[0].Tier != router.TierDegraded || in.VIPs[1].Tier != "" {
		t.Errorf("tiers %q %q, want %q and none", in.VIPs[0].Tier, in.VIPs[1].Tier, router.TierDegraded)
	}
	w, _ = FromDaemon(cfg, Running{VIPs: []RunningVIP{{Address: tier4.String(), Desired: false, Tier: "withdrawn"}}})
	if tier := w.Input(nil, nil, 0).VIPs[0].Tier; tier != "" {
		t.Errorf("withdrawn VIP checked for tier %q", tier)
	}
}

// TestFromDaemonLastResort: a VIP the daemon keeps in last resort is
// checked present, exported at that tier, whatever its degraded tier; with
// the guard on, a VIP at full weight is checked for it too.
func TestFromDaemonLastResort(t *testing.T) {
	cfg := &config.Config{Interface: "rhi0", FailOpen: config.FailOpen{MinOtherSites: 1}, VIPs: []config.VIP{{Address: tier4}, {Address: tier6}}}
	w, err := FromDaemon(cfg, Running{VIPs: []RunningVIP{
		{Address: tier4.String(), Desired: true, Tier: router.TierLastResort},
		{Address: tier6.String(), Desired: true, Tier: router.TierFull},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := w.Input(nil, nil, 0)
	if in.VIPs[0].Tier != router.TierLastResort || in.VIPs[0].Expected != router.Present || in.VIPs[1].Tier != router.TierFull {
		t.Errorf("got %+v", in.VIPs)
	}
}
