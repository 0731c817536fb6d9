//go:build integration

package anycast

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// bulk is n VIPs that all depend on one upstream, so that one change of
// that upstream flips all of them in one tick.
func bulk(n int) []site.VIP {
	vips := make([]site.VIP, n)
	for i := range vips {
		vips[i] = site.VIP{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), Upstreams: []string{"/apisix/upstreams/bulk"}}
	}
	return vips
}

// peerRoutes is how many networks the peer router holds in master4.
func peerRoutes(ctx context.Context, l *lab.Lab) (int, error) {
	return l.Peer.RouteCount(ctx, "master4")
}

// settle waits until rhi on s reports that BIRD agrees about all n VIPs,
// each desired as want, and the peer holds peer networks; it returns the
// last status.
func settle(t *testing.T, w *world, s *Site, n int, want bool, peer int) status.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var st status.Status
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		var err error
		if st, err = s.Status(ctx); err != nil {
			return err
		}
		desired := 0
		for _, v := range st.VIPs {
			if v.Desired == want {
				desired++
			}
		}
		if desired != n || st.Bird.Agree != n {
			return fmt.Errorf("%d of %d desired %v, BIRD agrees on %d (error %q)", desired, n, want, st.Bird.Agree, st.Bird.Error)
		}
		got, err := peerRoutes(ctx, w.lab)
		if err == nil && got != peer {
			err = fmt.Errorf("peer holds %d networks, want %d", got, peer)
		}
		return err
	})
	if err != nil {
		t.Fatalf("never settled: %v", err)
	}
	return st
}

func maxLatency(st status.Status) (time.Duration, int) {
	var max time.Duration
	renewed := 0
	for _, v := range st.VIPs {
		if v.Bird != nil {
			max = maxDur(max, v.Bird.Latency)
			renewed += v.Bird.Renewed
		}
	}
	return max, renewed
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// flip1000 flips 1,000 VIPs at once, several times, and waits each time for
// rhi to report BIRD in agreement and the peer to hold (or not) the routes.
func flip1000(t *testing.T, w *world) (renewals int) {
	const n = 1000
	s := w.sites[0]
	settle(t, w, s, n, true, n)
	for i := 0; i < 4; i++ {
		status := map[bool]string{true: "healthy", false: "unhealthy"}
		up := i%2 == 1
		if err := s.SetAll(status[up], "/apisix/upstreams/bulk"); err != nil {
			t.Fatal(err)
		}
		peer := 0
		if up {
			peer = n
		}
		st := settle(t, w, s, n, up, peer)
		lat, ren := maxLatency(st)
		t.Logf("flip %d (%s): BIRD agreed on all %d VIPs, slowest %s after the change; %d renewals so far", i+1, status[up], n, lat.Round(time.Millisecond), ren)
		renewals = ren
	}
	return renewals
}

// TestBirdConfirms1000Flips: with the shipped BIRD configuration (large
// netlink buffer, short device scan), 1,000 VIPs flipping at once are
// confirmed through BIRD every time.
func TestBirdConfirms1000Flips(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: bulk(1000), PollInterval: 500 * time.Millisecond})
	flip1000(t, w)
}

// TestBirdMissedNetlinkIsRepaired runs BIRD with a tiny netlink receive
// buffer and no useful interface scan, so that it misses notifications when
// 1,000 addresses change at once; rhi must detect the disagreement and
// renew the addresses until BIRD agrees.
func TestBirdMissedNetlinkIsRepaired(t *testing.T) {
	// Every occurrence: base.conf's comments quote the settings too.
	small := strings.ReplaceAll(birdconf.Base(), "netlink rx buffer 8388608;", "netlink rx buffer 4096;")
	weak := strings.ReplaceAll(small, "scan time 5;", "scan time 3600;")
	if small == birdconf.Base() || weak == small {
		t.Fatal("the shipped base.conf changed: update this test's substitutions")
	}
	l := lab.ForTest(t, lab.Options{DCs: 1, BaseConfig: weak})
	w := &world{lab: l}
	s, err := NewSite(context.Background(), l.DCs[0], bins, site.Config{VIPs: bulk(1000), PollInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.StopRHI() })
	w.sites = []*Site{s}
	renewals := flip1000(t, w)
	t.Logf("renewals needed with a 4 KiB netlink buffer: %d", renewals)
	if renewals == 0 {
		t.Error("BIRD missed nothing with a 4 KiB buffer: this test no longer exercises the repair")
	}
}
