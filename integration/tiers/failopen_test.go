//go:build integration

package tiers

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// foVIPs is the one VIP both sites serve, inside the guard's range.
var foVIPs = []site.VIP{{Address: vip4.Addr().String(), Upstreams: []string{"/apisix/upstreams/api"}}}

const failOpenYAML = "fail_open:\n  min_other_sites: 1\n  hold: 2s\n"

// foSites builds a two-DC tiers lab with a site on each, rhi running with
// fail_open when guarded.
func foSites(t *testing.T, guarded bool) (*lab.Lab, []*site.Site) {
	t.Helper()
	l := tierLab(t, 2, lab.Options{})
	// The processes live as long as ctx: the test's, not a bounded one.
	ctx := t.Context()
	bins, err := site.Build(ctx, "rhitiers-fo-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Remove() })
	var sites []*site.Site
	for _, d := range l.DCs {
		s, err := site.New(ctx, d, bins, site.Config{VIPs: foVIPs})
		if err != nil {
			t.Fatal(err)
		}
		if guarded {
			appendConfig(t, s.Config, failOpenYAML)
		}
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.StopRHI() })
		sites = append(sites, s)
	}
	waitRouterPaths(t, l, 2)
	return l, sites
}

func appendConfig(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// setAll sets the VIP's upstream on every site at once, each in its own
// goroutine, so that both sites see the change in the same poll.
func setAll(t *testing.T, sites []*site.Site, status string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(sites))
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The fake API's control socket may close an idle kept-alive
			// connection under the first request (EOF): try again.
			errs[i] = lab.Eventually(t.Context(), 5*time.Second, 20*time.Millisecond, func(context.Context) error {
				return s.SetAll(status, site.Keys(foVIPs)...)
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// routeLog samples the router's paths for the VIP every 200 ms.
type routeLog struct {
	at    []time.Duration
	paths []int
}

func observe(t *testing.T, l *lab.Lab, from time.Time, d time.Duration) routeLog {
	t.Helper()
	c := dial(t, l.Peer)
	var rl routeLog
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for time.Since(from) < d {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a failure bound: the look must succeed
		ps, err := routerPaths(ctx, c)
		cancel()
		if err != nil {
			t.Fatalf("router: %v", err)
		}
		rl.at, rl.paths = append(rl.at, time.Since(from)), append(rl.paths, len(ps))
		<-tk.C
	}
	return rl
}

// gaps reports how long the VIP was first without a route at the router,
// the first moment it had one again, and how many times its presence
// changed after that.
func (rl routeLog) gaps() (firstBack time.Duration, back bool, changesAfter int) {
	lost := false
	for i, n := range rl.paths {
		switch {
		case !lost && n == 0:
			lost = true
		case lost && !back && n > 0:
			firstBack, back = rl.at[i], true
		case back && (n > 0) != (rl.paths[i-1] > 0):
			changesAfter++
		}
	}
	return firstBack, back, changesAfter
}

func (rl routeLog) String() string {
	var b strings.Builder
	last := -1
	for i, n := range rl.paths {
		if n != last {
			fmt.Fprintf(&b, "%v:%d ", rl.at[i].Round(100*time.Millisecond), n)
			last = n
		}
	}
	return b.String()
}

// TestFailOpenOffWithdrawsEverywhere: without the guard, both sites going
// unhealthy withdraw the VIP everywhere, as before, and it stays
// withdrawn past the guard's hold.
func TestFailOpenOffWithdrawsEverywhere(t *testing.T) {
	l, sites := foSites(t, false)
	start := time.Now()
	setAll(t, sites, "unhealthy")
	waitRouterPaths(t, l, 0)
	rl := observe(t, l, start, 10*time.Second)
	if _, back, _ := rl.gaps(); back {
		t.Errorf("without the guard the VIP came back: %s", rl)
	}
}
