package verify

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/internal/router"
)

var (
	vip4  = netip.MustParsePrefix("10.255.0.10/32")
	vip6  = netip.MustParsePrefix("fd00:255::10/128")
	agg   = netip.MustParsePrefix("10.255.0.0/24")    // lab_static's blackhole: in master4, never exported
	vip6b = netip.MustParsePrefix("fd00:255::11/128") // a second IPv6 VIP, in no table
)

const (
	showProtocols = "show protocols all"
	route4        = "show route 10.255.0.10/32 table master4 all"
	route6        = "show route fd00:255::10/128 table master6 all"
	export4       = "show route export peer_b.ipv4 10.255.0.10/32"
	export6       = "show route export peer_b6.ipv6 fd00:255::10/128"
	routeAgg      = "show route 10.255.0.0/24 table master4 all"
	route6b       = "show route fd00:255::11/128 table master6 all"
	routeVip4     = "show route 10.255.0.10/32 table vip4 all" // the viptable lab: rhi_direct's ipv4 channel imports into vip4
	exportAgg     = "show route export peer_b.ipv4 10.255.0.0/24"
)

func testdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lab returns the replies of the lab speaker in one situation (see
// testdata/README.md): up-vip, up-novip, peerdown-vip, disabled-vip.
func lab(t testing.TB, situation string) map[string]string {
	routes := situation
	if situation == "disabled-vip" {
		routes = "peerdown-vip" // the table is the same; only the session changed
	}
	exports := map[string]string{
		"up-vip":       "up-vip",
		"up-novip":     "up-novip",
		"peerdown-vip": "peerdown-vip",
		"disabled-vip": "peerdown-vip",
	}[situation]
	m := map[string]string{
		showProtocols: testdata(t, "lab-show-protocols-all."+situation+".txt"),
		route4:        testdata(t, "bird2.0.12-show-route-vip-table-master4-all."+routes+".txt"),
		route6:        testdata(t, "bird2.0.12-show-route-vip6-table-master6-all."+routes+".txt"),
		routeAgg:      testdata(t, "bird2.0.12-show-route-aggregate-table-master4-all.up-vip.txt"),
		exportAgg:     testdata(t, "bird2.0.12-show-route-export-peer_b-aggregate.up-vip.txt"),
	}
	if exports == "peerdown-vip" {
		// Never asked while the sessions are down; answer as BIRD would.
		m[export4] = testdata(t, "bird2.0.12-show-route-export-peer_b.ipv4-vip.peerdown-vip.txt")
		m[export6] = testdata(t, "bird2.0.12-show-route-export-peer_b.ipv4-vip.peerdown-vip.txt")
	} else {
		m[export4] = testdata(t, "bird2.0.12-show-route-export-peer_b-vip."+exports+".txt")
		m[export6] = testdata(t, "bird2.0.12-show-route-export-peer_b6-vip6."+exports+".txt")
	}
	return m
}

func present(p netip.Prefix) router.VIP {
	return router.VIP{Prefix: p, Expected: router.Present, OnInterface: true}
}
func absent(p netip.Prefix) router.VIP {
	return router.VIP{Prefix: p, Expected: router.Absent, OnInterface: false}
}

var (
	peerBUp   = router.ProtocolState{Name: "peer_b", State: "up", BGPState: "Established", Established: true}
	peerB6Up  = router.ProtocolState{Name: "peer_b6", State: "up", BGPState: "Established", Established: true}
	peerBDown = router.ProtocolState{Name: "peer_b", State: "start", BGPState: "Active", Info: "Socket: Connection refused", Problem: "not Established"}
	peerB6Dn  = router.ProtocolState{Name: "peer_b6", State: "start", BGPState: "Active", Info: "Socket: Connection refused", Problem: "not Established"}
)

type checkCase struct {
	name      string
	situation string
	replies   map[string]string // overrides of the situation's replies
	stall     string            // a command never answered
	in        router.Input
	want      router.Report // Err compared by wantErr
	wantErr   string        // substring of Report.Err
	wantCmds  []string
	wantExit  int
}

func checkCases() []checkCase {
	return []checkCase{
		{
			name:      "S1 announced, consistent",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{present(vip4), present(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true},
					{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b6": true}, Agrees: true},
				},
			},
			// Each session is asked only about its own family.
			wantCmds: []string{"restrict", showProtocols, route4, export4, route6, export6},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "S2 withdrawn, consistent",
			situation: "up-novip",
			in:        router.Input{VIPs: []router.VIP{absent(vip4), absent(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b": false}, Agrees: true},
					{Prefix: vip6, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b6": false}, Agrees: true},
				},
			},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "withdrawn but BIRD still announces (missed netlink removal)",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{absent(vip4), present(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Absent, DirectUp: true, InTable: true, Exported: map[string]bool{"peer_b": true},
						Problem: "still in BIRD's table; still exported to peer_b"},
					{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b6": true}, Agrees: true},
				},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "announced but BIRD has not seen it (missed netlink add)",
			situation: "up-novip",
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, Exported: map[string]bool{"peer_b": false},
					Problem: "not in BIRD's table from a direct protocol; not exported to peer_b"}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "address removed from the interface by someone else",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{{Prefix: vip4, Expected: router.Present}}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, InTable: true, Exported: map[string]bool{"peer_b": true},
					Problem: "not on the interface"}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "withdrawn but still on the interface",
			situation: "up-novip",
			in:        router.Input{VIPs: []router.VIP{{Prefix: vip4, Expected: router.Absent, OnInterface: true}}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Absent, DirectUp: true, OnInterface: true, Exported: map[string]bool{"peer_b": false},
					Problem: "still on the interface"}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "S3 peer down: sessions not asked, no VIP carried",
			situation: "peerdown-vip",
			replies:   map[string]string{route6b: testdataNoT("bird2.0.12-show-route-vip6-table-master6-all.up-novip.txt")},
			in:        router.Input{VIPs: []router.VIP{present(vip4), present(vip6), absent(vip6b)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBDown, peerB6Dn},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{},
						Problem: "no Established BGP session carries it"},
					{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{},
						Problem: "no Established BGP session carries it"},
					// Withdrawn: exported nowhere is what is wanted.
					{Prefix: vip6b, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{}, Agrees: true},
				},
			},
			wantCmds: []string{"restrict", showProtocols, route4, route6, route6b},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "S4 peer_b disabled: its family is carried by no other session",
			situation: "disabled-vip",
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{
					{Name: "peer_b", State: "down", BGPState: "Down", Problem: "not Established"},
					peerB6Dn,
				},
				VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{},
					Problem: "no Established BGP session carries it"}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "selected protocols only",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{present(vip4), present(vip6)}, Protocols: []string{"peer_b", "peer_b"}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true},
					// peer_b is IPv4 only.
					{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{},
						Problem: "none of bird.protocols has an ipv6 channel"},
				},
			},
			wantCmds: []string{"restrict", showProtocols, route4, export4, route6},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "one of two sessions down: the other carries the VIP",
			situation: "up-vip",
			replies:   map[string]string{showProtocols: withPeerC(testdataNoT("lab-show-protocols-all.up-vip.txt"), testdataNoT("lab-show-protocols-all.peerdown-vip.txt"))},
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up, {Name: "peer_c", State: "start", BGPState: "Active", Info: "Socket: Connection refused", Problem: "not Established"}},
				VIPs:      []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true}},
			},
			wantCmds: []string{"restrict", showProtocols, route4, export4},
			wantExit: router.ExitMismatch, // peer_c is not Established
		},
		{
			name:      "selected names that are missing or not BGP",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{present(vip6)}, Protocols: []string{"nosuch", "peer_b6", "rhi_direct"}},
			want: router.Report{
				Protocols: []router.ProtocolState{
					{Name: "nosuch", Problem: "no such protocol in BIRD"},
					peerB6Up,
					{Name: "rhi_direct", State: "up", Problem: "not a BGP protocol (Direct)"},
				},
				VIPs: []router.VIPReport{{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b6": true}, Agrees: true}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "no BGP protocol at all",
			situation: "up-vip",
			replies: map[string]string{showProtocols: "2002-Name       Proto      Table      State  Since         Info\n" +
				"1002-device1    Device     ---        up     14:07:33.693  \n1006-\n" +
				"1002-rhi_direct Direct     ---        up     14:07:33.693  \n1006-  Channel ipv4\n     State:          UP\n     Table:          master4\n \n0000 \n"},
			in: router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				VIPs: []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{},
					Problem: "no BGP protocol in BIRD has an ipv4 channel"}},
				Problems: []string{"no BGP protocol in BIRD: nothing can announce the VIPs"},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "direct protocol imports into another table",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols: testdataNoT("bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
				// The default tables do not hold it: BIRD's real answer.
				"show route 10.255.0.10/32 all": testdataNoT("bird2.0.12-show-route-vip-all.viptable-up-vip.txt"),
				route4:                          testdataNoT("bird2.0.12-show-route-vip-table-master4-all.up-novip.txt"),
				routeVip4:                       testdataNoT("bird2.0.12-show-route-vip-table-vip4-all.viptable-up-vip.txt"),
				route6:                          testdataNoT("bird2.0.12-show-route-vip6-table-master6-all.viptable-up-vip.txt"),
				export4:                         testdataNoT("bird2.0.12-show-route-export-peer_b.ipv4-vip.viptable-up-vip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{present(vip4), present(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true},
					{Prefix: vip6, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b6": true}, Agrees: true},
				},
			},
			// Each VIP is looked up in the table of its family's channel.
			wantCmds: []string{"restrict", showProtocols, routeVip4, export4, route6, export6},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "withdrawn from another table: consistent",
			situation: "up-novip",
			replies: map[string]string{
				showProtocols: testdataNoT("bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
				routeVip4:     testdataNoT("bird2.0.12-show-route-vip-table-vip4-all.viptable-up-novip.txt"),
				route6:        testdataNoT("bird2.0.12-show-route-vip6-table-master6-all.viptable-up-novip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{absent(vip4), absent(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b": false}, Agrees: true},
					{Prefix: vip6, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b6": false}, Agrees: true},
				},
			},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "two direct tables: each asked until one holds the VIP",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols: withDirect(testdataNoT("bird2.0.12-show-protocols-all.viptable-up-vip.txt"), "other_direct", "master4", true),
				route4:        testdataNoT("bird2.0.12-show-route-vip-table-master4-all.up-novip.txt"),
				routeVip4:     testdataNoT("bird2.0.12-show-route-vip-table-vip4-all.viptable-up-vip.txt"),
				export4:       testdataNoT("bird2.0.12-show-route-export-peer_b.ipv4-vip.viptable-up-vip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs:      []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true}},
			},
			wantCmds: []string{"restrict", showProtocols, route4, routeVip4, export4},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "two direct tables: the first that holds the VIP ends the search",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols: withDirect(testdataNoT("bird2.0.12-show-protocols-all.viptable-up-vip.txt"), "other_direct", "master4", false),
				routeVip4:     testdataNoT("bird2.0.12-show-route-vip-table-vip4-all.viptable-up-vip.txt"),
				export4:       testdataNoT("bird2.0.12-show-route-export-peer_b.ipv4-vip.viptable-up-vip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs:      []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true}},
			},
			wantCmds: []string{"restrict", showProtocols, routeVip4, export4},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "direct channel whose table the reply does not name: the default tables",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols:                   strings.Replace(testdataNoT("lab-show-protocols-all.up-vip.txt"), "     Table:          master4\n", "", 1),
				"show route 10.255.0.10/32 all": testdataNoT("bird2.0.12-show-route-vip-all.up-vip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{present(vip4)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs:      []router.VIPReport{{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true}},
			},
			wantCmds: []string{"restrict", showProtocols, "show route 10.255.0.10/32 all", export4},
			wantExit: router.ExitConsistent,
		},
		{
			name:      "direct protocol down: said once for the report, and per VIP",
			situation: "up-novip", // the table is empty, as BIRD says once rhi_direct is down
			replies: map[string]string{
				showProtocols: testdataNoT("bird2.0.12-show-protocols-all.viptable-directdown-vip.txt"),
				routeVip4:     testdataNoT("bird2.0.12-show-route-vip-table-vip4-all.viptable-directdown-vip.txt"),
			},
			in: router.Input{VIPs: []router.VIP{present(vip4), present(vip6)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, OnInterface: true, Exported: map[string]bool{"peer_b": false},
						Problem: "not in BIRD's table: no direct protocol imports ipv4 routes; not exported to peer_b"},
					{Prefix: vip6, Expected: router.Present, OnInterface: true, Exported: map[string]bool{"peer_b6": false},
						Problem: "not in BIRD's table: no direct protocol imports ipv6 routes; not exported to peer_b6"},
				},
				Problems: []string{
					"no direct protocol in BIRD imports ipv4 routes: IPv4 VIPs cannot be announced",
					"no direct protocol in BIRD imports ipv6 routes: IPv6 VIPs cannot be announced",
				},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "no direct channel of the VIP's family",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols: withoutDirectIPv6(testdataNoT("lab-show-protocols-all.up-vip.txt")),
				export6:       testdataNoT("bird2.0.12-show-route-export-peer_b6-vip6.up-novip.txt"),
				"show route export peer_b6.ipv6 fd00:255::11/128": "8001 Network not found\n",
			},
			in: router.Input{VIPs: []router.VIP{present(vip4), present(vip6), absent(netip.MustParsePrefix("fd00:255::11/128"))}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{
					{Prefix: vip4, Expected: router.Present, DirectUp: true, OnInterface: true, InTable: true, Exported: map[string]bool{"peer_b": true}, Agrees: true},
					{Prefix: vip6, Expected: router.Present, OnInterface: true, Exported: map[string]bool{"peer_b6": false},
						Problem: "not in BIRD's table: no direct protocol imports ipv6 routes; not exported to peer_b6"},
					{Prefix: netip.MustParsePrefix("fd00:255::11/128"), Expected: router.Absent, Exported: map[string]bool{"peer_b6": false}, Agrees: true},
				},
				Problems: []string{"no direct protocol in BIRD imports ipv6 routes: IPv6 VIPs cannot be announced"},
			},
			// No table to look the IPv6 VIPs up in.
			wantCmds: []string{"restrict", showProtocols, route4, export4, export6, "show route export peer_b6.ipv6 fd00:255::11/128"},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "route reply from another table",
			situation: "up-vip",
			replies: map[string]string{
				showProtocols: testdataNoT("bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
				routeVip4:     testdataNoT("bird2.0.12-show-route-vip-table-master4-all.up-vip.txt"),
			},
			in:       router.Input{VIPs: []router.VIP{present(vip4)}},
			want:     router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:  `"show route 10.255.0.10/32 table vip4 all": reply lists a route of table "master4"`,
			wantExit: router.ExitUnchecked,
		},
		{
			name:      "a static route is not a direct one",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{present(agg)}},
			want: router.Report{
				Protocols: []router.ProtocolState{peerBUp, peerB6Up},
				VIPs: []router.VIPReport{{Prefix: agg, Expected: router.Present, DirectUp: true, OnInterface: true, Exported: map[string]bool{"peer_b": false},
					Problem: "not in BIRD's table from a direct protocol; not exported to peer_b"}},
			},
			wantExit: router.ExitMismatch,
		},
		{
			name:      "export answers an error: not taken for withdrawn",
			situation: "up-vip",
			replies:   map[string]string{export4: "9001 No valid tables\n"},
			in:        router.Input{VIPs: []router.VIP{absent(vip4)}},
			want:      router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:   `vip "10.255.0.10/32": "show route export peer_b.ipv4 10.255.0.10/32": bird error 9001: No valid tables`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "route query answers an error",
			situation: "up-vip",
			replies:   map[string]string{route4: "9001 syntax error, unexpected CF_SYM_UNDEFINED\n"},
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			want:      router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:   `vip "10.255.0.10/32": "show route 10.255.0.10/32 table master4 all": bird error 9001`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "route reply for another prefix",
			situation: "up-novip",
			replies:   map[string]string{route4: testdataNoT("bird2.0.12-show-route-for-vip.up-novip.txt")},
			in:        router.Input{VIPs: []router.VIP{absent(vip4)}},
			want:      router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:   `"show route 10.255.0.10/32 table master4 all": reply lists "10.255.0.0/24"`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "export reply for another prefix",
			situation: "up-vip",
			replies:   map[string]string{export4: testdataNoT("bird2.0.12-show-route-for-vip.up-novip.txt")},
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			want:      router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:   `"show route export peer_b.ipv4 10.255.0.10/32": reply lists "10.255.0.0/24"`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "show protocols does not parse",
			situation: "up-vip",
			replies:   map[string]string{showProtocols: "0000 \n"},
			in:        router.Input{VIPs: []router.VIP{present(vip4)}},
			wantErr:   `"show protocols all": show protocols: no header line`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "BIRD stalls: each exchange has its own deadline",
			situation: "up-vip",
			stall:     export4,
			in:        router.Input{VIPs: []router.VIP{present(vip4)}, ExchangeTimeout: 10 * time.Second}, // a failure bound: the exchanges before the stall must succeed within it, on a loaded machine too (see ownDeadlines)
			want:      router.Report{Protocols: []router.ProtocolState{peerBUp, peerB6Up}},
			wantErr:   `vip "10.255.0.10/32": "show route export peer_b.ipv4 10.255.0.10/32": bird: read reply: context deadline exceeded`,
			wantExit:  router.ExitUnchecked,
		},
		{
			name:      "unknown expectation",
			situation: "up-vip",
			in:        router.Input{VIPs: []router.VIP{{Prefix: vip4, Expected: "maybe"}}},
			wantErr:   `vip "10.255.0.10/32": unknown expectation "maybe"`,
			wantCmds:  []string{"restrict"},
			wantExit:  router.ExitUnchecked,
		},
	}
}

// withDirect adds a Direct protocol with an UP ipv4 channel into table to a
// "show protocols all" reply, before the others when first, else after them.
func withDirect(reply, name, table string, first bool) string {
	block := fmt.Sprintf("1002-%-10s Direct     ---        up     19:47:45.126  \n"+
		"1006-  Channel ipv4\n     State:          UP\n     Table:          %s\n \n", name, table)
	if first {
		header, rest, _ := strings.Cut(reply, "\n")
		return header + "\n" + block + rest
	}
	return strings.TrimSuffix(reply, "0000 \n") + block + "0000 \n"
}

// withPeerC adds to a "show protocols all" reply of the lab a second IPv4
// session, peer_c: peer_b's block of down (a reply of the lab with the
// peer down), renamed.
func withPeerC(reply, down string) string {
	start := strings.Index(down, "1002-peer_b ")
	end := strings.Index(down, " \n1002-peer_b6 ")
	if start < 0 || end < start {
		panic("withPeerC: not the lab's reply")
	}
	block := strings.Replace(down[start:end+len(" \n")], "1002-peer_b ", "1002-peer_c ", 1)
	return strings.TrimSuffix(reply, "0000 \n") + block + "0000 \n"
}

// withoutDirectIPv6 drops rhi_direct's ipv6 channel from a "show protocols
// all" reply of the lab, as for "protocol direct { ipv4; }".
func withoutDirectIPv6(reply string) string {
	start := strings.Index(reply, "   Channel ipv6\n")
	end := strings.Index(reply, " \n1002-peer_b ")
	if start < 0 || end < start {
		panic("withoutDirectIPv6: not the lab's reply")
	}
	return reply[:start] + reply[end:]
}

// testdataNoT reads a file for a table built before t exists.
func testdataNoT(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// runCase runs Check against a fake BIRD socket playing the case's
// situation.
func runCase(t *testing.T, tc checkCase) (router.Report, *birdtest.Server) {
	t.Helper()
	replies := lab(t, tc.situation)
	for cmd, r := range tc.replies {
		replies[cmd] = r
	}
	srv := birdtest.NewServer(t, replies)
	// Longer than any case's ExchangeTimeout, so that ownDeadlines can
	// tell the two apart; it bounds a failing run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := bird.Dial(ctx, srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc.stall == "" {
		return Check(ctx, c, tc.in), srv
	}
	srv.Stall(tc.stall)
	own := &ownDeadlines{Bird: c, Deadlines: birdtest.Deadlines{Timeout: tc.in.ExchangeTimeout, Stalled: srv.Stalled()}}
	rep := Check(ctx, own, tc.in)
	for _, p := range own.Problems {
		t.Error(p)
	}
	return rep, srv
}

// ownDeadlines passes each exchange on to BIRD through Deadlines, which
// checks that it has a deadline of its own. The stalled exchange's
// deadline comes when the server has read its command and stalls: a stall
// never ends by itself, so that is where any deadline would end it, and
// the exchanges before it keep their generous one.
type ownDeadlines struct {
	Bird
	birdtest.Deadlines
}

func (o *ownDeadlines) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	ctx, cancel := o.Enter(ctx, cmd)
	defer cancel()
	return o.Bird.Exec(ctx, cmd)
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, srv := runCase(t, tc)
			switch {
			case tc.wantErr == "" && got.Err != nil:
				t.Fatalf("Err = %v", got.Err)
			case tc.wantErr != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.wantErr)):
				t.Fatalf("Err = %v, want it to contain %q", got.Err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(router.Report{}, "Err"), cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if code := got.ExitCode(); code != tc.wantExit {
				t.Errorf("ExitCode() = %d, want %d", code, tc.wantExit)
			}
			if ok := got.Consistent(); ok != (tc.wantExit == router.ExitConsistent) {
				t.Errorf("Consistent() = %v with exit code %d", ok, tc.wantExit)
			}
			if tc.wantCmds != nil {
				if diff := cmp.Diff(tc.wantCmds, srv.Commands()); diff != "" {
					t.Errorf("commands (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// errBird fails every exchange, as a connection that broke would.
type errBird struct{ err error }

func (e errBird) Exec(context.Context, string) (bird.Reply, error) { return bird.Reply{}, e.err }

func TestCheckBirdGone(t *testing.T) {
	broken := errors.New("read reply: connection reset by peer")
	got := Check(context.Background(), errBird{broken}, router.Input{VIPs: []router.VIP{present(vip4)}})
	if !errors.Is(got.Err, broken) || got.ExitCode() != router.ExitUnchecked || got.VIPs != nil {
		t.Errorf("Check = %+v, want Err wrapping %v, exit 2, no VIPs", got, broken)
	}
}

func TestCheckCancelled(t *testing.T) {
	srv := birdtest.NewServer(t, lab(t, "up-vip"))
	ctx, cancel := context.WithCancel(context.Background())
	c, err := bird.Dial(ctx, srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	got := Check(ctx, c, router.Input{VIPs: []router.VIP{present(vip4)}})
	if !errors.Is(got.Err, context.Canceled) {
		t.Errorf("Err = %v, want context.Canceled", got.Err)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		r    router.Report
		want int
	}{
		{"empty", router.Report{}, router.ExitConsistent},
		{"error wins", router.Report{Err: errors.New("x"), Problems: []string{"y"}}, router.ExitUnchecked},
		{"report problem", router.Report{Problems: []string{"y"}}, router.ExitMismatch},
		{"protocol problem", router.Report{Protocols: []router.ProtocolState{{Name: "p", Problem: "not Established"}}}, router.ExitMismatch},
		{"vip disagrees", router.Report{VIPs: []router.VIPReport{{Agrees: true}, {Agrees: false}}}, router.ExitMismatch},
		{"all agree", router.Report{Protocols: []router.ProtocolState{peerBUp}, VIPs: []router.VIPReport{{Agrees: true}}}, router.ExitConsistent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.ExitCode(); got != tc.want {
				t.Errorf("ExitCode() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSocketUnreachable(t *testing.T) {
	rep := Socket{Path: filepath.Join(t.TempDir(), "missing.ctl")}.Check(context.Background(), router.Input{ExchangeTimeout: time.Second})
	if rep.Err == nil || rep.ExitCode() != router.ExitUnchecked || strings.Count(rep.Err.Error(), "missing.ctl") != 1 {
		t.Fatalf("report = %+v, want could-not-check naming the socket once", rep)
	}
}
