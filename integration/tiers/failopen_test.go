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

const failOpenYAML = "fail_open:\n  min_other_sites: 1\n  hold: 2s\n  release: 30s\n"

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

// TestFailOpenEverySiteFails: both data centres go unhealthy in the same
// poll with fail_open {min_other_sites: 1}. The router may lose the VIP
// for a few seconds, then at least one site announces it, and it stays
// announced for 60 s (sampled every 200 ms, past a release period); health
// back, both sites announce it by health.
func TestFailOpenEverySiteFails(t *testing.T) {
	l, sites := foSites(t, true)
	start := time.Now()
	setAll(t, sites, "unhealthy")
	rl := observe(t, l, start, 65*time.Second)
	t.Logf("router paths over time: %s", rl)
	back, ok, changes := rl.gaps()
	switch {
	case !ok:
		t.Fatalf("the VIP never came back at the router: %s", rl)
	case back > 10*time.Second:
		t.Errorf("the VIP came back after %v, want within a few seconds (hold 2s)", back)
	case changes != 0:
		t.Errorf("the VIP's presence at the router changed %d times after it came back: %s", changes, rl)
	}
	t.Logf("withdrawn everywhere until %v after the failing poll", back)
	engaged := 0
	for _, s := range sites {
		st, err := s.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.VIPs[0].Tier == "last_resort" {
			engaged++
			if st.VIPs[0].Reason != "fail_open" {
				t.Errorf("%s: in last resort, reason %q", s.DC.Name, st.VIPs[0].Reason)
			}
		}
	}
	if engaged == 0 {
		t.Errorf("no site says its guard is engaged")
	}

	setAll(t, sites, "healthy")
	waitRouterPaths(t, l, 2)
	for _, s := range sites {
		err := lab.Eventually(t.Context(), 10*time.Second, 0, func(ctx context.Context) error {
			st, err := s.Status(ctx)
			if err == nil && (st.VIPs[0].Reason != "healthy" || st.VIPs[0].FailOpen == nil || st.VIPs[0].Tier != "announced") {
				err = fmt.Errorf("reason %q, fail_open %+v", st.VIPs[0].Reason, st.VIPs[0].FailOpen)
			}
			return err
		})
		if err != nil {
			t.Errorf("%s after health came back: %v", s.DC.Name, err)
		}
	}
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
