//go:build integration

package bird

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRealBird runs the client against a real BIRD (the "bird" in PATH: BIRD
// 2 or BIRD 3, whose replies differ) with a throw-away config: no kernel
// protocol, so the host's routes are not touched, and a BGP session to a
// neighbour that never answers, so its channel is down.
func TestRealBird(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run bird")
	}
	birdPath, err := exec.LookPath("bird")
	if err != nil {
		t.Skip("bird is not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bird.ctl")
	conf := filepath.Join(dir, "bird.conf")
	config := fmt.Sprintf(`router id 10.0.0.1;
protocol device {}
protocol direct d1 { ipv4; interface "lo"; }
protocol static s1 { ipv4; route 192.0.2.0/24 blackhole; }
ipv4 table t2;
ipv4 table 'rhi-t.3';
protocol static s2 { ipv4 { table t2; }; route 198.51.100.0/24 blackhole; }
protocol static s3 { ipv4 { table 'rhi-t.3'; }; route 203.0.113.0/24 blackhole; }
protocol static s4 {
  ipv4;
  route 192.0.2.128/25 blackhole {
    bgp_path.prepend(65001); bgp_path.prepend(65001);
    bgp_community.add((65001, 5));
    bgp_large_community.add((65001, 1, 1));
    bgp_ext_community.add((rt, 65001, 7));
  };
}
protocol bgp peer1 {
  local 127.0.0.1 port %d as 65001;
  neighbor 127.0.0.2 port %d as 65002;
  multihop;
  ipv4 { import none; export where proto = "s1"; };
}
`, freePort(t), freePort(t))
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(birdPath, "-f", "-c", conf, "-s", sock, "-P", filepath.Join(dir, "bird.pid"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialWhenUp(ctx, t, sock)
	defer c.Close()

	if r, err := c.Exec(ctx, "show status"); err == nil && len(r.Lines) > 0 {
		t.Logf("%s", r.Lines[0].Text) // which BIRD ran: "BIRD 2.0.12", "BIRD 3.1.8"
	}
	r, err := c.Exec(ctx, "show protocols all")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseProtocolsAll(r)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Protocol{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	if p := byName["s1"]; p.Proto != "Static" || p.State != "up" {
		t.Errorf("s1 = %+v, want an up Static protocol", p)
	}
	peer := byName["peer1"]
	if peer.Proto != "BGP" || peer.Established() || peer.BGPState == "" {
		t.Errorf("peer1 = %+v, want BGP, not Established, with a BGP state", peer)
	}
	if ch, ok := peer.Channel("ipv4"); !ok || ch.Table != "master4" {
		t.Errorf("peer1 channels = %+v, want ipv4 on master4", peer.Channels)
	}

	static := netip.MustParsePrefix("192.0.2.0/24")
	r, err = c.Exec(ctx, RouteCommand(static))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := ParseRoutes(r)
	if err != nil || len(routes) != 1 || routes[0].Proto != "s1" || routes[0].Source != "static" {
		t.Errorf("routes = %+v, %v; want one route from s1", routes, err)
	}
	// BGP attributes, whatever this BIRD calls them ("BGP.as_path" or
	// "bgp_path", …).
	attrs := netip.MustParsePrefix("192.0.2.128/25")
	r, err = c.Exec(ctx, RouteCommand(attrs))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := ParsePaths(r)
	if err != nil || len(paths) != 1 {
		t.Fatalf("paths = %+v, %v; want one", paths, err)
	}
	if p := paths[0]; p.Source != "static" || !p.HasASPath || !slices.Equal(p.ASPath, []uint32{65001, 65001}) ||
		!slices.Equal(p.Communities, []Community{{65001, 5}}) || !slices.Equal(p.LargeCommunities, []LargeCommunity{{65001, 1, 1}}) {
		t.Errorf("path = %+v; want source static, path 65001 65001, community (65001,5), large community (65001,1,1)", p)
	}
	// Routes of a channel into another table: only the table form finds them,
	// a quoted table name included.
	for _, tc := range []struct {
		proto, table string
		prefix       netip.Prefix
	}{
		{"s1", "master4", static},
		{"s2", "t2", netip.MustParsePrefix("198.51.100.0/24")},
		{"s3", "rhi-t.3", netip.MustParsePrefix("203.0.113.0/24")},
	} {
		if ch, ok := byName[tc.proto].Channel("ipv4"); !ok || ch.Table != tc.table {
			t.Errorf("%s channels = %+v, want ipv4 on %s", tc.proto, byName[tc.proto].Channels, tc.table)
		}
		cmd := TableRouteCommand(tc.prefix, tc.table)
		r, err := c.Exec(ctx, cmd)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		routes, err := ParseRoutes(r)
		if err != nil || len(routes) != 1 || routes[0].Proto != tc.proto || routes[0].Table != tc.table {
			t.Errorf("%q: routes = %+v, %v; want one route from %s in %s", cmd, routes, err, tc.proto, tc.table)
		}
		if tc.table == "master4" {
			continue
		}
		var be *Error
		if _, err := c.Exec(ctx, RouteCommand(tc.prefix)); !errors.As(err, &be) || be.Code != CodeNetworkNotFound {
			t.Errorf("%q: err = %v, want 8001: the default tables do not hold it", RouteCommand(tc.prefix), err)
		}
	}
	// In the table but the session is down: the channel form says "not exported".
	if st, err := ParseExport(c.Exec(ctx, ExportCommand("peer1", static))); st != NotExported || err != nil {
		t.Errorf("export of %s = %v, %v; want not exported", static, st, err)
	}
	absent := netip.MustParsePrefix("198.51.100.1/32")
	if st, err := ParseExport(c.Exec(ctx, ExportCommand("peer1", absent))); st != NotInTable || err != nil {
		t.Errorf("export of %s = %v, %v; want not in table", absent, st, err)
	}
	// The connection is restricted: no state can change through it.
	var be *Error
	if _, err := c.Exec(ctx, "disable peer1"); !errors.As(err, &be) || be.Code != CodeAccessDenied {
		t.Errorf("disable: err = %v, want 8007 Access denied", err)
	}
}

// dialWhenUp dials until BIRD has created its socket.
func dialWhenUp(ctx context.Context, t *testing.T, sock string) *Conn {
	t.Helper()
	for {
		c, err := Dial(ctx, sock)
		if err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("bird did not come up: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port that was free a moment ago, so that the test's
// BIRD does not collide with another BIRD on port 179.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
