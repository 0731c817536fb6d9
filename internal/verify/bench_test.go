package verify

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/internal/router"
)

// BenchmarkCheck checks 1,000 announced IPv4 VIPs with one Established
// session over a fake BIRD socket: 2,001 sequential exchanges on one
// connection. The fake answers instantly, so this is rhi's own cost per
// check (framing, parsing, syscalls); a real BIRD adds its lookup time.
func BenchmarkCheck(b *testing.B) {
	const n = 1000
	route := testdata(b, "bird2.0.12-show-route-vip-table-master4-all.up-vip.txt")
	export := testdata(b, "bird2.0.12-show-route-export-peer_b-vip.up-vip.txt")
	replies := map[string]string{showProtocols: testdata(b, "lab-show-protocols-all.up-vip.txt")}
	in := router.Input{}
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 255, byte(i / 250), byte(i%250 + 1)}), 32)
		replies[bird.TableRouteCommand(p, "master4")] = strings.ReplaceAll(route, vip4.String(), p.String())
		replies[bird.ExportCommand("peer_b", p)] = strings.ReplaceAll(export, vip4.String(), p.String())
		in.VIPs = append(in.VIPs, present(p))
	}
	srv := birdtest.NewServer(b, replies)
	ctx := context.Background()
	c, err := bird.Dial(ctx, srv.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		r := Check(ctx, c, in)
		if r.Err != nil || len(r.VIPs) != n {
			b.Fatal(r.Err, len(r.VIPs))
		}
		for _, v := range r.VIPs {
			if !v.Agrees {
				b.Fatalf("%+v", v)
			}
		}
	}
}
