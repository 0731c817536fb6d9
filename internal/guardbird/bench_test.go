package guardbird

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird/birdtest"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// bigDump is a BIRD 2 dump of rhi_guard4 for n VIPs in the shape of the
// lab's (testdata/bird2.0.12-ebgp-guard4.txt): each VIP with this host's own
// route, a serving path of dc2 and a last-resort path of dc3.
func bigDump(n int) (string, []netip.Prefix) {
	var b strings.Builder
	b.Grow(715*n + 32) // 714 bytes a VIP: 7 MB for 10,000 built without regrowing
	b.WriteString("1007-Table rhi_guard4:\n")
	vips := make([]netip.Prefix, n)
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i / 250), byte(i%250 + 1)}), 32)
		vips[i] = p
		code := "1007-"
		if i == 0 {
			code = " "
		}
		fmt.Fprintf(&b, `%s%-20s unicast [rhi_degraded 06:53:11.465] * (245)
 	dev rhi1
1008-	Type: device univ
1007-                     unicast [peer_4 06:53:11.407] (100) [AS65002i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 65000 65002
 	BGP.next_hop: 10.99.1.1
 	BGP.local_pref: 100
 	BGP.large_community: (65002, 2, 174260738)
1007-                     unicast [peer_4 06:53:11.431] (100) [AS65003i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 65000 65003 65003 65003 65003 65003 65003 65003 65003 65003
 	BGP.next_hop: 10.99.1.1
 	BGP.local_pref: 100
 	BGP.community: (65535,0)
 	BGP.large_community: (65003, 1, 2) (65003, 2, 174260994)
`, code, p)
	}
	b.WriteString("0000 \n")
	return b.String(), vips
}

func bigReplies(t testing.TB, n int) (map[string]string, []netip.Prefix) {
	dump, vips := bigDump(n)
	return map[string]string{
		protocolsCommand:                  transcript(t, "bird2.0.12-ebgp-protocols-all.txt"),
		DumpCommand(birdconf.GuardTable4): dump,
	}, vips
}

// TestView10000: 10,000 VIPs are answered, every one, from one dump
// (about 190,000 lines, over package bird's default bounds).
func TestView10000(t *testing.T) {
	replies, vips := bigReplies(t, 10000)
	srv := birdtest.NewServer(t, replies)
	v := Viewer{Path: srv.Path, Timeout: 30 * time.Second, SiteID: site1}.View(context.Background(), vips)
	if v.Err != nil {
		t.Fatal(v.Err)
	}
	for _, p := range vips {
		if got, ok := v.Sites(p); !ok || !slices.Equal(got, []uint32{site2}) {
			t.Fatalf("%s: %v (known %v, %v)", p, got, ok, v.Unknown[p])
		}
	}
	if n := len(srv.Commands()); n != 3 {
		t.Errorf("%d commands for 10,000 VIPs, want 3: %q", n, srv.Commands())
	}
}

// BenchmarkView10000 is one round for 10,000 VIPs through the control
// socket: the dump's framing, parsing and judging.
func BenchmarkView10000(b *testing.B) {
	replies, vips := bigReplies(b, 10000)
	srv := birdtest.NewServer(b, replies)
	vw := Viewer{Path: srv.Path, Timeout: 30 * time.Second, SiteID: site1}
	b.ReportAllocs()
	for b.Loop() {
		if v := vw.View(context.Background(), vips); v.Err != nil || len(v.Serving) != len(vips) {
			b.Fatalf("err %v, %d answered", v.Err, len(v.Serving))
		}
	}
}
