package lab

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPlan(t *testing.T) {
	l := &Lab{Name: "rhi-42-0badcafe", Dir: "/tmp/rhi-42-0badcafe"}
	l.opts.DCs = 2
	plan(l)
	var got []string
	for _, r := range l.routers() {
		got = append(got, fmt.Sprintf("%s ns=%s as=%d id=%s sock=%s", r.Name, r.NS, r.ASN, r.RouterID, r.BirdSocket))
		for _, s := range r.sessions {
			got = append(got, fmt.Sprintf("  %s from %s: %s as %d -> %s as %d (%s)", s.Name, s.Template, s.Local, s.LocalASN, s.Neighbor, s.NeighborAS, s.Host))
		}
	}
	for _, d := range l.DCs {
		got = append(got, fmt.Sprintf("%s: %s on %s, link %s(%s %s) - %s(%s %s), protocols %v, at peer %v",
			d.Name, d.Iface, d.NS, d.ADCIface, d.ADCAddr4, d.ADCAddr6, d.PeerIface, d.PeerAddr4, d.PeerAddr6, d.Protocols, d.PeerProtos))
	}
	want := []string{
		"peer ns=rhi-42-0badcafe-peer as=65000 id=10.99.0.1 sock=/tmp/rhi-42-0badcafe/peer/bird.ctl",
		"  dc1_4 from rhi_adc4: 10.99.1.1 as 65000 -> 10.99.1.2 as 65001 (dc1)",
		"  dc1_6 from rhi_adc6: fd00:99:1::1 as 65000 -> fd00:99:1::2 as 65001 (dc1)",
		"  dc2_4 from rhi_adc4: 10.99.2.1 as 65000 -> 10.99.2.2 as 65002 (dc2)",
		"  dc2_6 from rhi_adc6: fd00:99:2::1 as 65000 -> fd00:99:2::2 as 65002 (dc2)",
		"dc1 ns=rhi-42-0badcafe-dc1 as=65001 id=10.99.1.2 sock=/tmp/rhi-42-0badcafe/dc1/bird.ctl",
		"  peer_4 from rhi_peer4: 10.99.1.2 as 65001 -> 10.99.1.1 as 65000 (peer)",
		"  peer_6 from rhi_peer6: fd00:99:1::2 as 65001 -> fd00:99:1::1 as 65000 (peer)",
		"dc2 ns=rhi-42-0badcafe-dc2 as=65002 id=10.99.2.2 sock=/tmp/rhi-42-0badcafe/dc2/bird.ctl",
		"  peer_4 from rhi_peer4: 10.99.2.2 as 65002 -> 10.99.2.1 as 65000 (peer)",
		"  peer_6 from rhi_peer6: fd00:99:2::2 as 65002 -> fd00:99:2::1 as 65000 (peer)",
		"dc1: rhi0 on rhi-42-0badcafe-dc1, link peer(10.99.1.2 fd00:99:1::2) - dc1(10.99.1.1 fd00:99:1::1), protocols [peer_4 peer_6], at peer [dc1_4 dc1_6]",
		"dc2: rhi0 on rhi-42-0badcafe-dc2, link peer(10.99.2.2 fd00:99:2::2) - dc2(10.99.2.1 fd00:99:2::1), protocols [peer_4 peer_6], at peer [dc2_4 dc2_6]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan() (-want +got):\n%s", diff)
	}
}

// TestConfigsParse renders the host files of labs of several sizes and runs
// BIRD's own parser over each, shared files included.
func TestConfigsParse(t *testing.T) {
	bird, err := exec.LookPath("bird")
	if err != nil {
		t.Skip("bird is not installed")
	}
	for _, dcs := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("%d DCs", dcs), func(t *testing.T) {
			l := &Lab{Name: "rhi-42-0badcafe"}
			l.Dir = filepath.Join(t.TempDir(), l.Name)
			l.opts.DCs = dcs
			plan(l)
			if err := writeConfigs(l); err != nil {
				t.Fatal(err)
			}
			for _, r := range l.routers() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				out, err := exec.CommandContext(ctx, bird, "-p", "-c", r.BirdConfig).CombinedOutput()
				cancel()
				if err != nil {
					t.Errorf("bird -p -c %s: %v\n%s", r.BirdConfig, err, out)
				}
			}
		})
	}
}
