//go:build integration

package tiers

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// birdVersion is one BIRD the ladder's BIRD tests run with.
type birdVersion struct {
	name string   // "bird2.0.12", "bird3.1.8": the transcripts' prefix
	argv []string // lab.Options.Bird
}

// birdVersions lists BIRD 2 (from PATH) and BIRD 3 where its root is here.
func birdVersions(t *testing.T) []birdVersion {
	vs := []birdVersion{{name: "bird2", argv: []string{"bird"}}}
	if argv, err := lab.Bird3(); err == nil {
		vs = append(vs, birdVersion{name: "bird3", argv: argv})
	} else {
		t.Logf("BIRD 3 not tested: %v", err)
	}
	return vs
}

// topology is one way the sites reach the router.
type topology struct {
	name string
	opts lab.Options
}

var topologies = []topology{
	{"ebgp", lab.Options{}},
	{"sameas", lab.Options{ADCAS: 65001, ADCSession: "allow local as;"}},
	// The router reflects the sites' paths (rr client); it resolves their
	// next hops directly, the ADCs recursively (and fail to: their guard
	// tables hold the paths as unreachable, which is all the guard needs).
	{"ibgp", lab.Options{ADCAS: 65000, PeerSession: "rr client; direct;"}},
}

// noAddPath is peer.conf without ADD-PATH send: the router sends each ADC
// its best path only.
func noAddPath(t *testing.T) string {
	t.Helper()
	peer := birdconf.Peer()
	if strings.Count(peer, "add paths tx;") != 2 {
		t.Fatal("peer.conf: expected two \"add paths tx;\"")
	}
	return strings.ReplaceAll(peer, "add paths tx;", "")
}

// TestLadderExports: three sites announce one VIP, dc1 degraded (rhi1), dc2
// at full weight (rhi0), dc3 in last resort (rhi2). The router holds three
// paths, each tagged with its site's identity (AS, 2, router id); dc3's
// carries GRACEFUL_SHUTDOWN, (AS, 1, 2) and LOCAL_PREF 0, dc1's (AS, 1, 1);
// dc2's is best. dc1's guard table holds dc2's and dc3's paths with those
// marks, and dc1's guard view (guardbird.Viewer) has dc2 alone serving. With eBGP, with the sites in one AS (allow local as) and with
// iBGP, for BIRD 2 and BIRD 3. With RHI_LADDER_CAPTURE naming a directory,
// it writes the transcripts internal/guardbird/testdata holds.
func TestLadderExports(t *testing.T) {
	for _, v := range birdVersions(t) {
		for _, top := range topologies {
			t.Run(v.name+"/"+top.name, func(t *testing.T) {
				opts := top.opts
				opts.Bird = v.argv
				l := tierLab(t, 3, opts)
				ladderExports(t, l, v.name+"-"+top.name)
			})
		}
	}
}

func ladderExports(t *testing.T, l *lab.Lab, prefix string) {
	ctx := t.Context()
	dc1, dc2, dc3 := l.DCs[0], l.DCs[1], l.DCs[2]
	ip(t, ctx, dc2, "addr", "add", vip4.String(), "dev", birdconf.FullInterface)
	ip(t, ctx, dc3, "addr", "add", vip4.String(), "dev", birdconf.LastResortInterface)
	ip(t, ctx, dc1, "addr", "add", vip4.String(), "dev", birdconf.DegradedInterface)
	ip(t, ctx, dc2, "addr", "add", vip6.String(), "dev", birdconf.FullInterface, "nodad")
	ip(t, ctx, dc3, "addr", "add", vip6.String(), "dev", birdconf.LastResortInterface, "nodad")
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The lab's own parser judges: the router holds three paths, dc2's
	// best; dc1's guard table holds dc2's and dc3's.
	err := waitFor(wctx, func(ctx context.Context) (bool, error) {
		rs, err := l.Peer.Routes(ctx, vip4)
		if err != nil || len(rs) != 3 {
			return false, err
		}
		best, _ := lab.Best(rs)
		if best.From != dc2.Name {
			return false, fmt.Errorf("best path from %q", best.From)
		}
		g, err := dc1.Router.TableRoutes(ctx, birdconf.GuardTable4)
		n := 0
		for _, r := range g {
			if r.Prefix == vip4 && r.Protocol == dc1.Protocols[0] {
				n++
			}
		}
		return err == nil && n == 2, err
	})
	if err != nil {
		dump(t, l)
		t.Fatalf("want three paths at the router, dc2's best, and two in dc1's guard table: %v", err)
	}
	capture := func(r *lab.Router, name, cmd string) {
		t.Helper()
		out, err := raw(ctx, r.BirdSocket, cmd)
		if err != nil {
			t.Fatalf("%s: %q: %v", r.Name, cmd, err)
		}
		t.Logf("%s: %s\n%s", r.Name, cmd, out)
		if dir := os.Getenv("RHI_LADDER_CAPTURE"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, prefix+"-"+name+".txt"), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	capture(dc1.Router, "guard4", "show route table "+birdconf.GuardTable4+" all")
	capture(dc1.Router, "guard6", "show route table "+birdconf.GuardTable6+" all")
	capture(dc1.Router, "protocols-all", "show protocols all")
	capture(dc1.Router, "status", "show status")
	capture(dc1.Router, "export-degraded", bird.ExportAllCommand(dc1.Protocols[0], vip4))
	capture(dc2.Router, "export-full", bird.ExportAllCommand(dc2.Protocols[0], vip4))
	capture(dc3.Router, "export-lastresort", bird.ExportAllCommand(dc3.Protocols[0], vip4))
	capture(l.Peer, "peer-route", "show route "+vip4.String()+" all")
	checkMarks(t, l)
	checkView(t, l)
}

// checkView reads dc1's guard view as rhi does (guardbird.Viewer, site_id
// unset: BIRD's router id): dc2 serves the VIP, dc3 (last resort) does not.
func checkView(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dc1, dc2 := l.DCs[0], l.DCs[1]
	v := guardbird.Viewer{Path: dc1.BirdSocket, Timeout: 5 * time.Second}.View(ctx, []netip.Prefix{vip4})
	self, _ := birdconf.SiteID(dc1.RouterID)
	other, _ := birdconf.SiteID(dc2.RouterID)
	if got, ok := v.Sites(vip4); v.Self != self || !ok || !slices.Equal(got, []uint32{other}) {
		t.Errorf("dc1's view: self %d, %s served by %v (known %v, err %v, unknown %v); want self %d, served by dc2 %d only",
			v.Self, vip4, got, ok, v.Err, v.Unknown[vip4], self, other)
	}
}

// checkMarks reads the router's paths with their attributes and checks each
// site's marks: its identity on every path, the tier's communities, and
// LOCAL_PREF 0 on the last-resort path only.
func checkMarks(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	paths, err := routerPaths(ctx, dial(t, l.Peer))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("router: %d paths with attributes, want 3", len(paths))
	}
	gshut := bird.Community{birdconf.GracefulShutdownAS, birdconf.GracefulShutdownValue}
	for i, d := range l.DCs {
		proto := d.PeerProtos[0]
		k := slices.IndexFunc(paths, func(p bird.Path) bool { return p.Proto == proto })
		if k < 0 {
			t.Errorf("router: no path from %s", proto)
			continue
		}
		p := paths[k]
		site, _ := birdconf.SiteID(d.RouterID)
		var tier []bird.LargeCommunity
		hasSite := false
		for _, c := range p.LargeCommunities {
			switch {
			case c == bird.LargeCommunity{d.ASN, birdconf.SiteData1, site}:
				hasSite = true
			case c[1] == birdconf.TierData1:
				tier = append(tier, c)
			}
		}
		if !hasSite {
			t.Errorf("%s's path lacks its site identity (%d, %d, %d): %v", d.Name, d.ASN, birdconf.SiteData1, site, p.LargeCommunities)
		}
		lastResort := slices.Contains(p.Communities, gshut)
		var want []bird.LargeCommunity
		switch i {
		case 0: // degraded
			want = []bird.LargeCommunity{{d.ASN, birdconf.TierData1, birdconf.DegradedData2}}
		case 2: // last resort
			want = []bird.LargeCommunity{{d.ASN, birdconf.TierData1, birdconf.LastResortData2}}
		}
		if !slices.Equal(tier, want) || lastResort != (i == 2) {
			t.Errorf("%s's path: tier communities %v, GRACEFUL_SHUTDOWN %v; want %v, %v", d.Name, tier, lastResort, want, i == 2)
		}
	}
}

// TestLadderNoAddPath: a router that sends no ADD-PATH. The ADC's sessions
// still come up (ADD-PATH is a capability, not a requirement), and its
// `show protocols all` says that the neighbour will not send every path:
// dc1's guard view is unknown for it. With RHI_LADDER_CAPTURE,
// it writes that transcript.
func TestLadderNoAddPath(t *testing.T) {
	for _, v := range birdVersions(t) {
		t.Run(v.name, func(t *testing.T) {
			l := tierLab(t, 2, lab.Options{Bird: v.argv, PeerConfig: noAddPath(t)})
			ctx := t.Context()
			dc1, dc2 := l.DCs[0], l.DCs[1]
			ip(t, ctx, dc1, "addr", "add", vip4.String(), "dev", birdconf.LastResortInterface)
			ip(t, ctx, dc2, "addr", "add", vip4.String(), "dev", birdconf.FullInterface)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			err := waitFor(wctx, func(ctx context.Context) (bool, error) {
				rs, err := l.Peer.Routes(ctx, vip4)
				return err == nil && len(rs) == 2, err
			})
			if err != nil {
				dump(t, l)
				t.Fatal(err)
			}
			out, err := raw(ctx, dc1.BirdSocket, "show protocols all")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("dc1: show protocols all\n%s", out)
			view := guardbird.Viewer{Path: dc1.BirdSocket, Timeout: 5 * time.Second}.View(ctx, []netip.Prefix{vip4})
			if view.Err == nil || !strings.Contains(view.Err.Error(), "without ADD-PATH receive") {
				t.Errorf("dc1's view with a router that sends no ADD-PATH: err %v, served %v; want unknown for the missing ADD-PATH", view.Err, view.Serving)
			}
			if dir := os.Getenv("RHI_LADDER_CAPTURE"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, v.name+"-noaddpath-protocols-all.txt"), []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
