//go:build integration

package tiers

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
)

// exportAllBase is base.conf with a kernel protocol that exports everything
// in master4, as Debian's stock one does: a guard route that leaked into
// master4 would then show up in the ADC's kernel table.
func exportAllBase(t *testing.T) string {
	t.Helper()
	base := birdconf.Base()
	if strings.Count(base, "export none;") != 1 {
		t.Fatal("base.conf: expected one \"export none;\" in its kernel protocol")
	}
	return strings.Replace(base, "export none;", "export all;", 1)
}

// announcers asks an ADC's guard table who announces vip.
func announcers(ctx context.Context, c *bird.Conn, vip netip.Prefix) (bird.Announcers, error) {
	table := birdconf.GuardTable4
	if vip.Addr().Is6() {
		table = birdconf.GuardTable6
	}
	r, err := c.Exec(ctx, bird.GuardCommand(vip, table))
	return bird.ParseAnnouncers(r, err, vip, table)
}

// waitSites waits until an ADC's guard table names exactly the origin ASes
// want for vip4.
func waitSites(t *testing.T, l *lab.Lab, c *bird.Conn, want ...uint32) {
	t.Helper()
	waitSitesOf(t, l, c, vip4, want...)
}

// waitSitesOf is waitSites for any VIP.
func waitSitesOf(t *testing.T, l *lab.Lab, c *bird.Conn, vip netip.Prefix, want ...uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var last bird.Announcers
	err := waitFor(ctx, func(ctx context.Context) (bool, error) {
		a, err := announcers(ctx, c, vip)
		last = a
		return err == nil && slices.Equal(a.Origins, want) && a.Unattributed == 0, err
	})
	if err != nil {
		dump(t, l)
		t.Fatalf("guard table: want origins %v for %s, last saw %+v: %v", want, vip, last, err)
	}
}

// notInstalled checks that dc1 has the VIP neither in master4 nor in any
// kernel table: the guard's routes stay in the guard table.
func notInstalled(t *testing.T, d *lab.DC, c *bird.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, bird.TableRouteCommand(vip4, "master4"))
	var be *bird.Error
	if !errors.As(err, &be) || be.Code != bird.CodeNetworkNotFound {
		t.Errorf("%s: master4 has a route for %s (or BIRD failed): %v", d.Name, vip4, err)
	}
	out, err := d.Run(ctx, "ip", "-4", "route", "show", "table", "all", vip4.String())
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "" {
		t.Errorf("%s: the kernel has a route for %s:\n%s", d.Name, vip4, out)
	}
}

// TestGuardTable: dc1's guard table sees dc2's and dc3's announcements of a
// VIP (dc3's degraded), never its own, and loses each as it is withdrawn;
// none of it reaches dc1's master4 or kernel, whose kernel protocol exports
// everything in master4.
func TestGuardTable(t *testing.T) {
	l := tierLab(t, 3, lab.Options{BaseConfig: exportAllBase(t)})
	dc1, dc2, dc3 := l.DCs[0], l.DCs[1], l.DCs[2]
	c1 := dial(t, dc1.Router)
	ctx := t.Context()

	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.none.txt", bird.GuardCommand(vip4, birdconf.GuardTable4))
	// A host route outside RHI_GUARD4, announced before the VIPs: the
	// router has it, dc1's guard drops it on arrival.
	ip(t, ctx, dc2, "addr", "add", outside.String(), "dev", "rhi0")
	ip(t, ctx, dc2, "addr", "add", vip4.String(), "dev", "rhi0")
	ip(t, ctx, dc3, "addr", "add", vip4.String(), "dev", birdconf.DegradedInterface)
	ip(t, ctx, dc2, "addr", "add", vip6.String(), "dev", "rhi0", "nodad")
	ip(t, ctx, dc3, "addr", "add", vip6.String(), "dev", birdconf.DegradedInterface, "nodad")
	waitSites(t, l, c1, uint32(dc2.ASN), uint32(dc3.ASN))
	waitSitesOf(t, l, c1, vip6, uint32(dc2.ASN), uint32(dc3.ASN))
	notInstalled(t, dc1, c1)
	outsideKept(t, l, c1)
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.two-sites.txt", bird.GuardCommand(vip4, birdconf.GuardTable4))
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip6-table-rhi_guard6-all.two-sites.txt", bird.GuardCommand(vip6, birdconf.GuardTable6))
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-table-master4-all.two-sites.txt", "show route table master4 all")
	capture(t, dc2.Router, "bird2.0.12-tiers-show-route-export-peer_4-vip-all.announced.txt", bird.ExportAllCommand("peer_4", vip4))
	capture(t, dc3.Router, "bird2.0.12-tiers-show-route-export-peer_4-vip-all.degraded.txt", bird.ExportAllCommand("peer_4", vip4))
	capture(t, dc3.Router, "bird2.0.12-tiers-show-route-export-peer_6-vip6-all.degraded.txt", bird.ExportAllCommand("peer_6", vip6))
	capture(t, dc3.Router, "bird2.0.12-tiers-show-route-vip-table-master4-all.degraded.txt", bird.TableRouteCommand(vip4, "master4"))
	capture(t, l.Peer, "bird2.0.12-tiers-peer-show-route-vip-all.two-sites.txt", "show route "+vip4.String()+" all")

	// dc1 announces too: its own path never comes back (eBGP loop
	// detection), its own route in the guard table is not an announcer.
	ip(t, ctx, dc1, "addr", "add", vip4.String(), "dev", "rhi0")
	waitRouterPaths(t, l, 3)
	waitSites(t, l, c1, uint32(dc2.ASN), uint32(dc3.ASN))
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-and-two-sites.txt", bird.GuardCommand(vip4, birdconf.GuardTable4))
	capture(t, l.Peer, "bird2.0.12-tiers-peer-show-route-vip-all.three-sites.txt", "show route "+vip4.String()+" all")

	ip(t, ctx, dc2, "addr", "del", vip4.String(), "dev", "rhi0")
	waitSites(t, l, c1, uint32(dc3.ASN))
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-and-one-site.txt", bird.GuardCommand(vip4, birdconf.GuardTable4))
	ip(t, ctx, dc3, "addr", "del", vip4.String(), "dev", birdconf.DegradedInterface)
	waitSites(t, l, c1)
	capture(t, dc1.Router, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-only.txt", bird.GuardCommand(vip4, birdconf.GuardTable4))
	ip(t, ctx, dc1, "addr", "del", vip4.String(), "dev", "rhi0")
	waitRouterPaths(t, l, 0)
	notInstalled(t, dc1, c1)
}

// waitRouterPaths waits until the router holds n paths for vip4.
func waitRouterPaths(t *testing.T, l *lab.Lab, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := dial(t, l.Peer)
	var last []bird.Path
	err := waitFor(ctx, func(ctx context.Context) (bool, error) {
		ps, err := routerPaths(ctx, c)
		last = ps
		return err == nil && len(ps) == n, err
	})
	if err != nil {
		t.Fatalf("router: want %d paths for %s, last saw %d: %v", n, vip4, len(last), err)
	}
}

// routerPaths lists the router's paths for vip4 with their attributes.
func routerPaths(ctx context.Context, c *bird.Conn) ([]bird.Path, error) {
	r, err := c.Exec(ctx, bird.RouteCommand(vip4))
	var be *bird.Error
	if errors.As(err, &be) && be.Code == bird.CodeNetworkNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return bird.ParsePaths(r)
}

// dump logs what BIRD holds on every host, for a failing test.
func dump(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range append([]*lab.Router{l.Peer}, routersOf(l)...) {
		for _, cmd := range []string{"show route all", "show route table " + birdconf.GuardTable4 + " all", "show protocols all"} {
			out, err := r.Birdc(ctx, cmd)
			t.Logf("%s: %s: %v\n%s", r.Name, cmd, err, out)
		}
	}
}

// routersOf lists the ADCs' routers.
func routersOf(l *lab.Lab) []*lab.Router {
	var rs []*lab.Router
	for _, d := range l.DCs {
		rs = append(rs, d.Router)
	}
	return rs
}

// outside is a host route dc2 announces outside the guard's range.
var outside = netip.MustParsePrefix("10.254.0.9/32")

// outsideKept checks that the router holds outside and that dc1's guard
// table does not.
func outsideKept(t *testing.T, l *lab.Lab, c1 *bird.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	peer := dial(t, l.Peer)
	if _, err := peer.Exec(ctx, bird.RouteCommand(outside)); err != nil {
		t.Fatalf("router: %s: %v", outside, err)
	}
	a, err := announcers(ctx, c1, outside)
	if err != nil || a.Paths != 0 {
		t.Errorf("dc1's guard table holds %s, outside RHI_GUARD4: %+v, %v", outside, a, err)
	}
}
