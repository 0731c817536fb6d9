package verify

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/internal/router"
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
		{"degraded as degraded", degraded, router.TierDegraded, true, ""},
		{"announced as announced", announced, router.TierFull, true, ""},
		{"degraded export, want announced", degraded, router.TierFull, false, "exported to peer_b as degraded, want announced"},
		{"announced export, want degraded", announced, router.TierDegraded, false, "exported to peer_b as announced, want degraded"},
		{"community without the prepend", mixed, router.TierDegraded, false, "degraded community (65003, 1, 1) without the prepended AS (path 65009)"},
		{"BIRD 3 degraded as degraded", degraded3, router.TierDegraded, true, ""},
		{"BIRD 3 announced as announced", announced3, router.TierFull, true, ""},
		{"BIRD 3 degraded export, want announced", degraded3, router.TierFull, false, "exported to peer_b as degraded, want announced"},
		{"BIRD 3 announced export, want degraded", announced3, router.TierDegraded, false, "exported to peer_b as announced, want degraded"},
		{"BIRD 3 community without the prepend", mixed3, router.TierDegraded, false, "degraded community (65001, 1, 1) without the prepended AS (path 65009)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := lab(t, "up-vip")
			replies[export4+" all"] = tc.reply
			ctx, c, srv := dialReplies(t, replies)
			v := present(vip4)
			v.Tier = tc.tier
			rep := Check(ctx, c, router.Input{VIPs: []router.VIP{v, present(vip6)}})
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
			ctx, c, _ := dialReplies(t, replies)
			for _, tier := range []string{router.TierFull, router.TierDegraded} {
				v := present(vip4)
				v.Tier = tier
				rep := Check(ctx, c, router.Input{VIPs: []router.VIP{v}})
				if !errors.Is(rep.Err, bird.ErrUnreadable) || rep.ExitCode() != router.ExitUnchecked {
					t.Errorf("want %s: err %v, code %d; want bird.ErrUnreadable, could not check", tier, rep.Err, rep.ExitCode())
				}
			}
		})
	}
}

// replyOf frames a transcript as the connection reads it.
func replyOf(t *testing.T, text string) bird.Reply {
	t.Helper()
	srv := birdtest.NewServer(t, map[string]string{"q": text})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bird.Dial(ctx, srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Exec(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExportedLadderTier: the real exports of tiers.conf's three tiers, by
// BIRD 2 and BIRD 3, over eBGP and iBGP (testdata/ladder-*), read as their
// tier with the site identity checked, and each mark taken away or changed
// read as what it is.
func TestExportedLadderTier(t *testing.T) {
	// The sites of the lab: dc1 degraded, dc2 full, dc3 last resort.
	sites := map[string]uint32{"degraded": 174260482, "full": 174260738, "lastresort": 174260994}
	tiers := map[string]string{"degraded": router.TierDegraded, "full": router.TierFull, "lastresort": router.TierLastResort}
	for _, version := range []string{"bird2.0.12", "bird3.1.8"} {
		for _, top := range []string{"ebgp", "ibgp"} {
			for name, want := range tiers {
				t.Run(version+"/"+top+"/"+name, func(t *testing.T) {
					text := testdata(t, "ladder-"+version+"-"+top+"-export-"+name+".txt")
					r := replyOf(t, text)
					for _, tc := range []struct {
						site uint32
						want string
					}{
						{0, want},
						{sites[name], want},
						{7, want + " with site identity [" + strconv.FormatUint(uint64(sites[name]), 10) + "], not site_id 7"},
					} {
						got, err := exportedTier(r, vip4, tc.site)
						if err != nil || got != tc.want {
							t.Errorf("site %d: %q, %v; want %q", tc.site, got, err, tc.want)
						}
					}
					untagged := regexp.MustCompile(`\(\d+, 2, \d+\) ?`).ReplaceAllString(text, "")
					if got, err := exportedTier(replyOf(t, untagged), vip4, sites[name]); err != nil || !strings.Contains(got, "without the site identity") {
						t.Errorf("without the site identity: %q, %v", got, err)
					}
				})
			}
		}
	}
	last := testdata(t, "ladder-bird2.0.12-ebgp-export-lastresort.txt")
	for _, tc := range []struct{ name, old, new, want string }{
		{"no GRACEFUL_SHUTDOWN", "\tBGP.community: (65535,0)\n", "", "last-resort community (65003, 1, 2) without GRACEFUL_SHUTDOWN"},
		{"GRACEFUL_SHUTDOWN alone", "(65003, 1, 2)", "", "GRACEFUL_SHUTDOWN without the last-resort community (AS, 1, 2)"},
		{"short prepend", "65003 65003 65003 65003 65003 65003 65003 65003", "65003 65003 65003", "last-resort community (65003, 1, 2) with 3 copies of the AS prepended, want 8 (path 65003 65003 65003)"},
		{"both tiers' marks", "(65003, 1, 2)", "(65003, 1, 2) (65003, 1, 1)", "degraded and last-resort marks together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(last, tc.old, tc.new, 1)
			if text == last {
				t.Fatalf("no %q in the transcript", tc.old)
			}
			if got, err := exportedTier(replyOf(t, text), vip4, 0); err != nil || got != tc.want {
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestCheckSiteID: Input.SiteID reaches the export check: a VIP exported
// with another site's identity disagrees, naming both.
func TestCheckSiteID(t *testing.T) {
	replies := lab(t, "up-vip")
	replies[export4+" all"] = testdata(t, "ladder-bird2.0.12-ebgp-export-full.txt")
	ctx, c, _ := dialReplies(t, replies)
	v := present(vip4)
	v.Tier = router.TierFull
	for site, problem := range map[uint32]string{
		174260738: "",
		7:         "exported to peer_b as announced with site identity [174260738], not site_id 7, want announced",
	} {
		rep := Check(ctx, c, router.Input{VIPs: []router.VIP{v}, SiteID: site})
		if rep.Err != nil {
			t.Fatal(rep.Err)
		}
		if got := rep.VIPs[0]; got.Agrees != (problem == "") || !strings.Contains(got.Problem, problem) {
			t.Errorf("site %d: agrees %v, problem %q; want %q", site, got.Agrees, got.Problem, problem)
		}
	}
}

// TestCheckSiteFromRouter: with no site_id configured, the site identity
// checked is BIRD's router id, read with "show status"; a BIRD that does
// not answer it leaves the check undone, never passed.
func TestCheckSiteFromRouter(t *testing.T) {
	status := testdata(t, "bird2.0.12-show-status.txt")
	v := present(vip4)
	v.Tier = router.TierFull
	for _, tc := range []struct {
		name, routerID, problem string
		noStatus                bool
	}{
		{name: "this site", routerID: "10.99.2.2"},
		{name: "another site", routerID: "10.99.1.2", problem: "with site identity [174260738], not site_id 174260482"},
		{name: "no answer", noStatus: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := lab(t, "up-vip")
			replies[export4+" all"] = testdata(t, "ladder-bird2.0.12-ebgp-export-full.txt")
			if !tc.noStatus {
				replies["show status"] = strings.Replace(status, "10.99.0.1", tc.routerID, 1)
			}
			ctx, c, _ := dialReplies(t, replies)
			rep := Check(ctx, c, router.Input{VIPs: []router.VIP{v}, SiteFromRouter: true})
			if tc.noStatus {
				if rep.Err == nil || !strings.Contains(rep.Err.Error(), "site identity") {
					t.Fatalf("err %v, want the site identity unknown", rep.Err)
				}
				return
			}
			if rep.Err != nil {
				t.Fatal(rep.Err)
			}
			if got := rep.VIPs[0]; got.Agrees != (tc.problem == "") || !strings.Contains(got.Problem, tc.problem) {
				t.Errorf("agrees %v, problem %q; want %q", got.Agrees, got.Problem, tc.problem)
			}
		})
	}
}

// dialReplies serves replies as a fake BIRD and dials it; the connection
// and its 10 s deadline end with the test.
func dialReplies(t *testing.T, replies map[string]string) (context.Context, *bird.Conn, *birdtest.Server) {
	t.Helper()
	srv := birdtest.NewServer(t, replies)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := bird.Dial(ctx, srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c, srv
}
