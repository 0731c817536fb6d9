package guardbird

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// What the guard's reading of BIRD got wrong when it told sites apart by
// origin AS and asked one VIP at a time, each case in BIRD 2's words and
// what the view must conclude now. (TestViewFindings and
// TestViewUnknownFormat change the real lab dumps; these are the hand-made
// situations the lab does not produce.)

// findingsProtocols is "show protocols all" with one BGP session peer_4
// whose ipv4 channel imports into rhi_guard4, Established, local AS 65001,
// ADD-PATH receive negotiated when addPath; then extra.
func findingsProtocols(addPath bool, extra string) string {
	local, neighbour := "", ""
	if addPath {
		local = "      ADD-PATH\n        RX: ipv4\n        TX:\n"
		neighbour = "      ADD-PATH\n        RX:\n        TX: ipv4\n"
	}
	return `2002-Name       Proto      Table      State  Since         Info
1002-peer_4     BGP        ---        up     07:15:10.000  Established   
1006-  BGP state:          Established
    Neighbor address: 10.99.1.1
    Neighbor AS:      65000
    Local AS:         65001
    Local capabilities
      Multiprotocol
        AF announced: ipv4
      4-octet AS numbers
` + local + `    Neighbor capabilities
      Multiprotocol
        AF announced: ipv4
      Route refresh
      Graceful restart
      4-octet AS numbers
` + neighbour + `  Channel ipv4
    State:          UP
    Table:          rhi_guard4
    Preference:     100
 
` + extra + "0000 \n"
}

// findingsView reads one round of vips with this site's id self (0: the
// router id of "show status", 10.99.1.2).
func findingsView(t *testing.T, protocols, dump4 string, self uint32, vips ...netip.Prefix) View {
	t.Helper()
	v, _ := view(t, map[string]string{
		protocolsCommand:                  protocols,
		statusCommand:                     transcript(t, "bird2.0.12-ebgp-status.txt"),
		DumpCommand(birdconf.GuardTable4): dump4,
	}, self, vips...)
	return v
}

// ibgpPath is a reflected iBGP path (empty AS path) of the site whose next
// hop is nh, with the large communities lc ("" for none).
func ibgpPath(nh, lc string) string {
	s := `1007-                     unicast [peer_4 07:15:13.352] (100) [i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 
 	BGP.next_hop: ` + nh + `
 	BGP.local_pref: 100
 	BGP.originator_id: ` + nh + `
 	BGP.cluster_list: 10.99.1.1
`
	if lc != "" {
		s += " \tBGP.large_community: " + lc + "\n"
	}
	return s
}

const ownRoute = `1007-Table rhi_guard4:
 10.255.0.10/32       unicast [rhi_direct 07:15:13.381] * (240)
 	dev rhi0
1008-	Type: device univ
`

// TestFindingIBGP: two other sites reach this one over iBGP, their paths
// with an empty AS path. Tagged with their identities they are two serving
// sites; without identity (as every path was before sites tagged them)
// the VIP is unknown, never "known, nobody" (on which the guard withdrew
// at every failing site).
func TestFindingIBGP(t *testing.T) {
	tagged := ownRoute + ibgpPath("10.20.0.2", "(65001, 2, 7)") + ibgpPath("10.30.0.2", "(65001, 2, 9)") + "0000 \n"
	v := findingsView(t, findingsProtocols(true, ""), tagged, 0, vip4)
	if got, ok := v.Sites(vip4); v.Err != nil || !ok || !slices.Equal(got, []uint32{7, 9}) {
		t.Errorf("tagged iBGP paths: serving %v (known %v, err %v, unknown %v), want sites 7 and 9", got, ok, v.Err, v.Unknown[vip4])
	}
	untagged := ownRoute + ibgpPath("10.20.0.2", "") + ibgpPath("10.30.0.2", "") + "0000 \n"
	v = findingsView(t, findingsProtocols(true, ""), untagged, 0, vip4)
	if got, ok := v.Sites(vip4); ok || v.Unknown[vip4] == nil {
		t.Errorf("untagged iBGP paths: serving %v (known %v, unknown %v), want unknown", got, ok, v.Unknown[vip4])
	}
}

// TestFindingOwnEcho: the site's own path reflected back to it by a second
// router (sites sharing an AS, "allow local as") carries its own identity:
// it is not another site, so a lone failing site does not see "itself"
// serving and withdraw the last announcement. Read with site_id configured
// and with the router id.
func TestFindingOwnEcho(t *testing.T) {
	const routerID uint32 = 10<<24 | 99<<16 | 1<<8 | 2
	echo := ownRoute + `1007-                     unicast [peer_4 07:15:13.352] (100) [AS65001i]
 	via 10.99.2.1 on peer2
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 65000 65001
 	BGP.next_hop: 10.99.2.1
 	BGP.local_pref: 100
 	BGP.large_community: (65001, 2, 174260482)
0000 
`
	for _, self := range []uint32{0, routerID} {
		v := findingsView(t, findingsProtocols(true, ""), echo, self, vip4)
		if got, ok := v.Sites(vip4); v.Err != nil || !ok || len(got) != 0 {
			t.Errorf("site_id %d: the own path echoed back: serving %v (known %v, err %v, unknown %v), want known, nobody", self, got, ok, v.Err, v.Unknown[vip4])
		}
	}
}

// collector is an Established BGP session that does not fill the guard
// tables, with a local AS of its own.
const collector = `1002-collector  BGP        ---        up     07:15:10.000  Established   
1006-  BGP state:          Established
    Neighbor address: 10.77.0.1
    Neighbor AS:      65077
    Local AS:         64999
  Channel ipv4
    State:          UP
    Table:          master4
 
`

// TestFindingUnrelatedSession: a session that does not import into the
// guard table (a route collector) being Established while peer_4 is down
// does not make the empty guard table "known: nobody"; with peer_4 up, its
// other local AS changes nothing (sites are told apart by identity, and
// this site's is the router id).
func TestFindingUnrelatedSession(t *testing.T) {
	down := strings.Replace(findingsProtocols(true, collector), "up     07:15:10.000  Established", "start  07:15:10.000  Active     ", 1)
	down = strings.Replace(down, "BGP state:          Established", "BGP state:          Active", 1)
	v := findingsView(t, down, ownRoute+"0000 \n", 0, vip4)
	if got, ok := v.Sites(vip4); v.Err == nil || ok {
		t.Errorf("peer_4 down, a collector up: serving %v (known %v), err %v; want the round unknown", got, ok, v.Err)
	}
	served := ownRoute + ibgpPath("10.20.0.2", "(65002, 2, 7)") + "0000 \n"
	v = findingsView(t, findingsProtocols(true, collector), served, 0, vip4)
	if got, ok := v.Sites(vip4); v.Err != nil || !ok || !slices.Equal(got, []uint32{7}) || v.Self != 10<<24|99<<16|1<<8|2 {
		t.Errorf("peer_4 and a collector up: self %d, serving %v (known %v, err %v, unknown %v), want self 10.99.1.2 and site 7", v.Self, got, ok, v.Err, v.Unknown[vip4])
	}
}

// TestFindingUnreadableNet: one net's path cannot be read (BIRD 2 cuts an
// AS path longer than its buffer with "..."): that VIP is unknown, and the
// round goes on for the VIPs after it.
func TestFindingUnreadableNet(t *testing.T) {
	other := netip.MustParsePrefix("10.255.0.12/32")
	path := func(asPath string) string {
		return `1007-                     unicast [peer_4 07:15:13.352] (100) [AS65002i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: ` + asPath + `
 	BGP.next_hop: 10.99.1.1
 	BGP.local_pref: 100
 	BGP.large_community: (65002, 2, 7)
`
	}
	dump := ownRoute + path("65000 "+strings.Repeat("65002 ", 70)+"650...") +
		strings.Replace(path("65000 65002"), "1007-                    ", "1007-10.255.0.12/32      ", 1) + "0000 \n"
	v := findingsView(t, findingsProtocols(true, ""), dump, 0, vip4, other)
	if got, ok := v.Sites(vip4); ok || v.Unknown[vip4] == nil {
		t.Errorf("%s, its path cut: serving %v (known %v), want unknown", vip4, got, ok)
	}
	if got, ok := v.Sites(other); v.Err != nil || !ok || !slices.Equal(got, []uint32{7}) {
		t.Errorf("%s after it: serving %v (known %v, err %v, unknown %v), want site 7", other, got, ok, v.Err, v.Unknown[other])
	}
}

// TestFindingNoAddPath: the only session that fills the guard table has a
// neighbour that sends no ADD-PATH: the table holds its best path only, so
// the round is unknown, not "known, nobody".
func TestFindingNoAddPath(t *testing.T) {
	v := findingsView(t, findingsProtocols(false, ""), ownRoute+"0000 \n", 0, vip4)
	if got, ok := v.Sites(vip4); v.Err == nil || ok || !strings.Contains(v.Err.Error(), "ADD-PATH") {
		t.Errorf("no ADD-PATH: serving %v (known %v), err %v; want the round unknown for the missing ADD-PATH", got, ok, v.Err)
	}
	v = findingsView(t, findingsProtocols(true, ""), ownRoute+"0000 \n", 0, vip4)
	if got, ok := v.Sites(vip4); v.Err != nil || !ok || len(got) != 0 {
		t.Errorf("with ADD-PATH, only the own route: serving %v (known %v, err %v), want known, nobody", got, ok, v.Err)
	}
}
