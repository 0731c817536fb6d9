package lab

import (
	"bufio"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// equateIP compares netip values by ==, as they are meant to be.
var equateIP = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

// reply reads a captured reply the way birdExchange reads the socket.
func reply(t *testing.T, name string) ([]string, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return readReply(bufio.NewReader(strings.NewReader(string(data))))
}

func TestReadReply(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		want     []string
		wantCode int // BIRD error code expected, 0 for none
		wantErr  bool
	}{
		{name: "greeting", input: "0001 BIRD 2.0.12 ready.\n", want: []string{"BIRD 2.0.12 ready."}},
		{name: "continued lines", input: "1007-Table master4:\n 10.0.0.1/32 x\n \tdev rhi0\n0000 \n", want: []string{"Table master4:", "10.0.0.1/32 x", "\tdev rhi0"}},
		{name: "runtime error", input: "8001 Network not found\n", wantCode: 8001},
		{name: "syntax error", input: "9001 syntax error, unexpected CF_SYM_UNDEFINED\n", wantCode: 9001},
		{name: "cut off", input: "1007-Table master4:\n", wantErr: true},
		{name: "no code", input: "hello\n", wantErr: true},
		{name: "code not numeric", input: "10x7-Table\n", wantErr: true},
		{name: "empty", input: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readReply(bufio.NewReader(strings.NewReader(tc.input)))
			var be *BirdError
			switch {
			case tc.wantCode != 0:
				if !errors.As(err, &be) || be.Code != tc.wantCode {
					t.Fatalf("readReply() error = %v, want BIRD error %d", err, tc.wantCode)
				}
			case tc.wantErr:
				if err == nil || errors.As(err, &be) {
					t.Fatalf("readReply() = %q, %v; want a malformed-reply error", got, err)
				}
			case err != nil:
				t.Fatalf("readReply() error = %v", err)
			default:
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("readReply() (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestParseProtocols(t *testing.T) {
	tests := []struct {
		file string
		want []Protocol
	}{
		{"bird2.0.12-show-protocols.up-vip.txt", []Protocol{
			{Name: "device1", Proto: "Device", Table: "---", State: "up"},
			{Name: "rhi_direct", Proto: "Direct", Table: "---", State: "up"},
			{Name: "peer_b", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
			{Name: "peer_b6", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
			{Name: "lab_static", Proto: "Static", Table: "master4", State: "up"},
		}},
		{"bird2.0.12-show-protocols.peerdown-vip.txt", []Protocol{
			{Name: "device1", Proto: "Device", Table: "---", State: "up"},
			{Name: "rhi_direct", Proto: "Direct", Table: "---", State: "up"},
			{Name: "peer_b", Proto: "BGP", Table: "---", State: "start", Info: "Active Socket: Connection refused"},
			{Name: "peer_b6", Proto: "BGP", Table: "---", State: "start", Info: "Active Socket: Connection refused"},
			{Name: "lab_static", Proto: "Static", Table: "master4", State: "up"},
		}},
		{"bird2.0.12-show-protocols.isolong.up-vip.txt", []Protocol{
			{Name: "device1", Proto: "Device", Table: "---", State: "up"},
			{Name: "rhi_direct", Proto: "Direct", Table: "---", State: "up"},
			{Name: "peer_b", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
			{Name: "peer_b6", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
			{Name: "lab_static", Proto: "Static", Table: "master4", State: "up"},
		}},
		{"lab-dc1-show-protocols.txt", []Protocol{
			{Name: "device1", Proto: "Device", Table: "---", State: "up"},
			{Name: "rhi_kernel", Proto: "Kernel", Table: "master4", State: "up"},
			{Name: "rhi_direct", Proto: "Direct", Table: "---", State: "up"},
			{Name: "peer_4", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
			{Name: "peer_6", Proto: "BGP", Table: "---", State: "up", Info: "Established"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			lines, err := reply(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseProtocols(lines)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseProtocols() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProtocolEstablished(t *testing.T) {
	tests := []struct {
		name string
		p    Protocol
		want bool
	}{
		{"established", Protocol{Proto: "BGP", State: "up", Info: "Established"}, true},
		{"connecting", Protocol{Proto: "BGP", State: "start", Info: "Connect"}, false},
		{"refused", Protocol{Proto: "BGP", State: "start", Info: "Active Socket: Connection refused"}, false},
		{"disabled", Protocol{Proto: "BGP", State: "down"}, false},
		{"not bgp", Protocol{Proto: "Direct", State: "up"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Established(); got != tc.want {
				t.Errorf("Established() = %v, want %v", got, tc.want)
			}
		})
	}
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
