package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/internal/config"
)

// TestCheckTier: with the real exports of tiers.conf, a VIP checked as
// degraded agrees only with the degraded export, and one checked as
// announced only with the full-weight export; a VIP without a tier asks the
// plain question and is not judged on attributes.
func TestCheckTier(t *testing.T) {
	announced := testdata(t, "bird2.0.12-tiers-show-route-export-peer_4-vip-all.announced.txt")
	degraded := testdata(t, "bird2.0.12-tiers-show-route-export-peer_4-vip-all.degraded.txt")
	mixed := strings.Replace(degraded, "\tBGP.as_path: 65003 65003 65003\n", "\tBGP.as_path: 65009\n", 1)
	if mixed == degraded {
		t.Fatal("the degraded transcript has no as_path line to change")
	}
	// BIRD 3.1.8 names the attributes bgp_path and bgp_large_community
	// (and the source among them): the same verdicts.
	announced3 := testdata(t, "bird3.1.8-tiers-show-route-export-peer_b.ipv4-vip-all.t1-healthy-2of2.txt")
	degraded3 := testdata(t, "bird3.1.8-tiers-show-route-export-peer_b.ipv4-vip-all.t2-degraded-1of2.txt")
	mixed3 := strings.Replace(degraded3, "\tbgp_path: 65001 65001 65001\n", "\tbgp_path: 65009\n", 1)
	if mixed3 == degraded3 {
		t.Fatal("the BIRD 3 degraded transcript has no bgp_path line to change")
	}
	for _, tc := range []struct {
		name, reply, tier string
		agrees            bool
		problem           string
	}{
		{"degraded as degraded", degraded, TierDegraded, true, ""},
		{"announced as announced", announced, TierFull, true, ""},
		{"degraded export, want announced", degraded, TierFull, false, "exported to peer_b as degraded, want announced"},
		{"announced export, want degraded", announced, TierDegraded, false, "exported to peer_b as announced, want degraded"},
		{"community without the prepend", mixed, TierDegraded, false, "degraded community (65003, 1, 1) without the prepended AS (path 65009)"},
		{"BIRD 3 degraded as degraded", degraded3, TierDegraded, true, ""},
		{"BIRD 3 announced as announced", announced3, TierFull, true, ""},
		{"BIRD 3 degraded export, want announced", degraded3, TierFull, false, "exported to peer_b as degraded, want announced"},
		{"BIRD 3 announced export, want degraded", announced3, TierDegraded, false, "exported to peer_b as announced, want degraded"},
		{"BIRD 3 community without the prepend", mixed3, TierDegraded, false, "degraded community (65001, 1, 1) without the prepended AS (path 65009)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := lab(t, "up-vip")
			replies[export4+" all"] = tc.reply
			srv := birdtest.NewServer(t, replies)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := bird.Dial(ctx, srv.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v := present(vip4)
			v.Tier = tc.tier
			rep := Check(ctx, c, Input{VIPs: []VIP{v, present(vip6)}})
			if rep.Err != nil {
				t.Fatal(rep.Err)
			}
			got := rep.VIPs[0]
			if got.Agrees != tc.agrees || !strings.Contains(got.Problem, tc.problem) {
				t.Errorf("agrees %v problem %q, want %v %q", got.Agrees, got.Problem, tc.agrees, tc.problem)
			}
			if got.Tier != tc.tier || len(got.ExportedTier) != 1 {
				t.Errorf("tier %q exported %v", got.Tier, got.ExportedTier)
			}
			if rep.VIPs[1].Tier != "" || rep.VIPs[1].ExportedTier != nil || !rep.VIPs[1].Agrees {
				t.Errorf("vip6 without a tier: %+v", rep.VIPs[1])
			}
			for _, cmd := range srv.Commands() {
				if cmd == export4 {
					t.Errorf("asked %q for a VIP whose tier is checked", cmd)
				}
			}
		})
	}
}

// TestCheckTierUnreadable: an export whose attributes rhi cannot read
// where it needs them (a path or community under a name no BIRD prints, no
// source line at all) is "could not check", never "exported as announced".
func TestCheckTierUnreadable(t *testing.T) {
	degraded3 := testdata(t, "bird3.1.8-tiers-show-route-export-peer_b.ipv4-vip-all.t2-degraded-1of2.txt")
	for name, reply := range map[string]string{
		"path renamed":      strings.Replace(degraded3, "\tbgp_path:", "\tbgp_as_path:", 1),
		"community renamed": strings.Replace(degraded3, "\tbgp_large_community:", "\tbgp_lcommunity:", 1),
		"no source":         strings.Replace(degraded3, " \tsource: device\n", "", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if reply == degraded3 {
				t.Fatal("the transcript has no line to change")
			}
			replies := lab(t, "up-vip")
			replies[export4+" all"] = reply
			srv := birdtest.NewServer(t, replies)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := bird.Dial(ctx, srv.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, tier := range []string{TierFull, TierDegraded} {
				v := present(vip4)
				v.Tier = tier
				rep := Check(ctx, c, Input{VIPs: []VIP{v}})
				if !errors.Is(rep.Err, bird.ErrUnreadable) || rep.ExitCode() != ExitUnchecked {
					t.Errorf("want %s: err %v, code %d; want bird.ErrUnreadable, could not check", tier, rep.Err, rep.ExitCode())
				}
			}
		})
	}
}

// TestExpectFromDaemonTier: the daemon's tier is checked for a present VIP
// whose degraded tier the config turns on, and only then.
func TestExpectFromDaemonTier(t *testing.T) {
	cfg := &config.Config{Interface: "rhi0", VIPs: []config.VIP{
		{Address: vip4, Degraded: config.Degraded{Below: 50}},
		{Address: vip6},
	}}
	w, err := ExpectFromDaemon(cfg, Running{VIPs: []RunningVIP{
		{Address: vip4.String(), Desired: true, Tier: TierDegraded},
		{Address: vip6.String(), Desired: true, Tier: TierFull},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := w.Input(nil, nil, 0)
	if in.VIPs[0].Tier != TierDegraded || in.VIPs[1].Tier != "" {
		t.Errorf("tiers %q %q, want %q and none", in.VIPs[0].Tier, in.VIPs[1].Tier, TierDegraded)
	}
	w, _ = ExpectFromDaemon(cfg, Running{VIPs: []RunningVIP{{Address: vip4.String(), Desired: false, Tier: "withdrawn"}}})
	if tier := w.Input(nil, nil, 0).VIPs[0].Tier; tier != "" {
		t.Errorf("withdrawn VIP checked for tier %q", tier)
	}
}
