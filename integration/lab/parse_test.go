package lab

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// equateIP compares netip values by ==, as they are meant to be.
var equateIP = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

// reply reads a captured reply through package bird's client, as
// [Router.Routes] does, and returns its lines' text.
func reply(t *testing.T, name string) ([]string, error) {
	t.Helper()
	srv := fakeBird(t, map[string]string{"show route": name})
	r, err := (&Router{Name: "test", BirdSocket: srv.Path}).Query(t.Context(), "show route")
	var texts []string
	for _, l := range r.Lines {
		texts = append(texts, l.Text)
	}
	return texts, err
}

func TestParseRoutes(t *testing.T) {
	var (
		vip    = netip.MustParsePrefix("10.255.0.10/32")
		vip6   = netip.MustParsePrefix("fd00:255::10/128")
		a      = netip.MustParseAddr
		viaDC1 = Route{Prefix: vip, Protocol: "dc1_4", NextHop: a("10.99.1.2"), Iface: "dc1"}
		viaDC2 = Route{Prefix: vip, Protocol: "dc2_4", NextHop: a("10.99.2.2"), Iface: "dc2"}
		v6DC1  = Route{Prefix: vip6, Protocol: "dc1_6", NextHop: a("fd00:99:1::2"), Iface: "dc1"}
		v6DC2  = Route{Prefix: vip6, Protocol: "dc2_6", NextHop: a("fd00:99:2::2"), Iface: "dc2"}
		best   = func(r Route) Route { r.Best = true; return r }
	)
	tests := []struct {
		file string
		want []Route
	}{
		{"lab-peer-show-route-vip.dc1.txt", []Route{best(viaDC1)}},
		{"lab-peer-show-route-vip.both.txt", []Route{best(viaDC1), viaDC2}},
		{"lab-peer-show-route-vip.dc2.txt", []Route{best(viaDC2)}},
		{"lab-peer-show-route-vip6.both.txt", []Route{best(v6DC1), v6DC2}},
		{"lab-peer-show-route.both.txt", []Route{best(viaDC1), viaDC2, best(v6DC1), v6DC2}},
		{"bird2.0.12-peer-show-route-protocol-peer_a.up-vip.txt", []Route{
			{Prefix: vip, Protocol: "peer_a", NextHop: a("10.99.0.1"), Iface: "rs_vb", Best: true},
		}},
		{"bird2.0.12-show-route-for-vip.up-vip.txt", []Route{
			{Prefix: vip, Protocol: "rhi_direct", Iface: "rhi0", Best: true},
		}},
		{"bird2.0.12-show-route-for-vip6.up-vip.txt", []Route{
			{Prefix: vip6, Protocol: "rhi_direct", Iface: "rhi0", Best: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			lines, err := reply(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseRoutes(lines)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, equateIP); diff != "" {
				t.Errorf("parseRoutes() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRoutesMalformed(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
	}{
		{"next hop first", []string{"Table master4:", "\tvia 10.0.0.1 on x"}},
		{"bad prefix", []string{"Table master4:", "10.255.0.999/32  unicast [p 1] * (100)"}},
		{"continuation without prefix", []string{"Table master4:", "    unicast [p 1] * (100)"}},
		{"no protocol", []string{"Table master4:", "10.0.0.1/32  unicast * (100)"}},
		{"bad next hop", []string{"Table master4:", "10.0.0.1/32  unicast [p 1] * (100)", "\tvia 10.0.0 on x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := parseRoutes(tc.lines); err == nil {
				t.Errorf("parseRoutes() = %+v, want an error", got)
			}
		})
	}
}

func TestBest(t *testing.T) {
	a := Route{Protocol: "dc1_4"}
	b := Route{Protocol: "dc2_4", Best: true}
	if got, ok := Best([]Route{a, b}); !ok || got.Protocol != "dc2_4" {
		t.Errorf("Best() = %+v, %v; want dc2_4", got, ok)
	}
	if got, ok := Best([]Route{a}); ok {
		t.Errorf("Best() without a best path = %+v, want none", got)
	}
}
