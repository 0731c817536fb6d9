//go:build integration

package anycast

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
)

var bins site.Binaries

func TestMain(m *testing.M) {
	if err := lab.Available(); err != nil {
		fmt.Println("SKIP anycast lab tests:", err)
		os.Exit(m.Run()) // each test skips itself through lab.ForTest
	}
	ctx := context.Background()
	lab.Sweep(ctx, lab.DefaultPrefix)
	var err error
	if bins, err = site.Build(ctx, "rhi-anycast-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// world is a lab with a site per DC, each running rhi with its config.
type world struct {
	lab   *lab.Lab
	sites []*Site
}

func newWorld(t *testing.T, cfgs ...site.Config) *world {
	t.Helper()
	l := lab.ForTest(t, lab.Options{DCs: len(cfgs)})
	w := &world{lab: l}
	ctx := context.Background()
	for i, c := range cfgs {
		s, err := NewSite(ctx, l.DCs[i], bins, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		w.sites = append(w.sites, s)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range w.sites {
				for _, f := range []string{"rhi-main.log", "rhi-error.log"} {
					b, _ := os.ReadFile(filepath.Join(s.DC.Dir, f))
					t.Logf("%s %s (tail):\n%s", s.DC.Name, f, tail(string(b), 3000))
				}
			}
		}
		for _, s := range w.sites {
			s.StopRHI()
		}
	})
	return w
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// peerSees waits until the peer's view of every prefix is want (e.g.
// "via dc2 (paths from dc2)" or "no route").
func (w *world) peerSees(t *testing.T, want string, addrs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last []string
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		last = last[:0]
		ok := true
		for _, a := range addrs {
			v, err := site.Peer(ctx, w.lab, prefix(a))
			if err != nil {
				return err
			}
			last = append(last, a+": "+v.String())
			ok = ok && v.String() == want
		}
		if !ok {
			return errors.New("another view")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("peer never saw %q for %v: %v\nlast: %s", want, addrs, err, strings.Join(last, "; "))
	}
}

// holds waits until the site's interface holds exactly want (host prefixes
// and foreign ones, sorted, space-separated).
func (s *Site) holds(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last string
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		ps, err := s.Addrs(ctx)
		if err != nil {
			return err
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		last = strings.Join(out, " ")
		if last != want {
			return fmt.Errorf("holds %q", last)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: interface never held %q: %v", s.DC.Name, want, err)
	}
}

func prefix(a string) netip.Prefix {
	if strings.Contains(a, "/") {
		return netip.MustParsePrefix(a)
	}
	addr := netip.MustParseAddr(a)
	return netip.PrefixFrom(addr, addr.BitLen())
}

func seedAddrs() []string {
	var out []string
	for _, v := range site.Seed {
		out = append(out, v.Address)
	}
	return out
}

// TestAnycastFailover is the design note's story: both data centres
// announce the same VIPs; every backend of dc1 dies, so dc1 withdraws them
// and the peer routes to dc2; the backends return and dc1 is back.
func TestAnycastFailover(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed}, site.Config{VIPs: site.Seed})
	dc1 := w.sites[0]
	vips := seedAddrs()
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", vips...)

	if err := dc1.SetAll("unhealthy", site.Keys(site.Seed)...); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "via dc2 (paths from dc2)", vips...)
	dc1.holds(t, "")

	if err := dc1.SetAll("healthy", site.Keys(site.Seed)...); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", vips...)
	dc1.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
}

// TestConditions checks all and any on the seed's VIPs, end to end.
func TestConditions(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)

	steps := []struct {
		name   string
		status string
		keys   []string
		holds  string
	}{
		{"admin down: 101 (all) goes", "unhealthy", []string{"/apisix/upstreams/admin"}, "10.0.0.100/32 10.0.0.102/32"},
		{"primary down: 102 (any) stays", "unhealthy", []string{"/apisix/upstreams/app-primary"}, "10.0.0.100/32 10.0.0.102/32"},
		{"reserve down too: 102 goes", "unhealthy", []string{"/apisix/upstreams/app-reserve"}, "10.0.0.100/32"},
		{"mostly_healthy counts as up", "mostly_healthy", []string{"/apisix/upstreams/app-reserve", "/apisix/upstreams/admin"}, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32"},
		{"mostly_unhealthy does not", "mostly_unhealthy", []string{"/apisix/upstreams/api"}, "10.0.0.101/32 10.0.0.102/32"},
	}
	for _, st := range steps {
		if err := s.SetAll(st.status, st.keys...); err != nil {
			t.Fatal(err)
		}
		s.holds(t, st.holds)
	}
	w.peerSees(t, "no route", "10.0.0.100")
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.101", "10.0.0.102")
}

// TestFailurePolicies runs withdraw on dc1 and announce on dc2 against each
// kind of control-API fault, and checks what the peer sees.
func TestFailurePolicies(t *testing.T) {
	vips := []site.VIP{{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}}}
	w := newWorld(t,
		site.Config{VIPs: vips, Policy: "withdraw", Timeout: 300 * time.Millisecond},
		site.Config{VIPs: vips, Policy: "announce", Timeout: 300 * time.Millisecond})
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
	for _, fault := range []string{"refuse", "stall", "500", "503", "garbage", "html404", "truncated", "slow"} {
		t.Run(fault, func(t *testing.T) {
			for _, s := range w.sites {
				if err := s.API.Fault(apisix.Ref{}, fault); err != nil {
					t.Fatal(err)
				}
			}
			w.peerSees(t, "via dc2 (paths from dc2)", "10.0.0.100")
			// dc2 keeps announcing once its policy fires too.
			if err := lab.Eventually(context.Background(), 0, 0, func(context.Context) error {
				st, err := w.sites[1].Status(context.Background())
				if err == nil && st.VIPs[0].Reason != "policy_announce" {
					err = fmt.Errorf("dc2 reason %q", st.VIPs[0].Reason)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			w.peerSees(t, "via dc2 (paths from dc2)", "10.0.0.100")
			for _, s := range w.sites {
				if err := s.API.Fault(apisix.Ref{}, "none"); err != nil {
					t.Fatal(err)
				}
			}
			w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
		})
	}
}

// TestNoCheckerAndNotFound: an upstream without a checker counts as
// no_checker says; one that is gone is a failed poll, withdrawn by policy.
func TestNoCheckerAndNotFound(t *testing.T) {
	vips := []site.VIP{{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}}}
	w := newWorld(t, site.Config{VIPs: vips, NoChecker: "healthy"}, site.Config{VIPs: vips, NoChecker: "unhealthy"})
	api := apisix.Ref{Type: "upstreams", ID: "api"}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
	for _, s := range w.sites {
		if err := s.API.NoChecker(api); err != nil {
			t.Fatal(err)
		}
	}
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100")
	for _, s := range w.sites {
		if err := s.API.Remove(api); err != nil {
			t.Fatal(err)
		}
	}
	w.peerSees(t, "no route", "10.0.0.100")
	for _, s := range w.sites {
		if err := s.API.SetNodes(api, 2, "healthy"); err != nil {
			t.Fatal(err)
		}
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
}

// TestIPv6AndV2Format: an IPv6 VIP, with APISIX answering in the 2.x format.
func TestIPv6AndV2Format(t *testing.T) {
	vips := []site.VIP{
		{Address: "fd00:255::10", Upstreams: []string{"/apisix/upstreams/api"}},
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}},
	}
	w := newWorld(t, site.Config{VIPs: vips})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", "fd00:255::10", "10.0.0.100")
	api := apisix.Ref{Type: "upstreams", ID: "api"}
	if err := s.API.SetFormat(api, "v2", 2, "unhealthy"); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "no route", "fd00:255::10", "10.0.0.100")
	if err := s.API.SetFormat(api, "v2", 2, "healthy"); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "via dc1 (paths from dc1)", "fd00:255::10", "10.0.0.100")
}

// TestHandEditsOfTheInterface: a VIP deleted by hand is put back; an
// address rhi does not own is left alone.
func TestHandEditsOfTheInterface(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	if _, err := s.DC.Run(ctx, "ip", "addr", "add", "192.0.2.7/32", "dev", s.DC.Iface); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DC.Run(ctx, "ip", "addr", "del", "10.0.0.101/32", "dev", s.DC.Iface); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32 192.0.2.7/32")
	if err := s.SetAll("unhealthy", site.Keys(site.Seed)...); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "192.0.2.7/32")
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Interface.Foreign, []string{"192.0.2.7/32"}) {
		t.Errorf("status foreign = %v", st.Interface.Foreign)
	}
}

// TestRestartDoesNotFlap restarts rhi (on_shutdown: keep) while watching
// the peer: the routes must never leave it.
func TestRestartDoesNotFlap(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	vips := seedAddrs()
	w.peerSees(t, "via dc1 (paths from dc1)", vips...)
	ctx, cancel := context.WithCancel(context.Background())
	lost := make(chan string, 1)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for ctx.Err() == nil {
			for _, a := range vips {
				v, err := site.Peer(ctx, w.lab, prefix(a))
				if err == nil && len(v.From) == 0 {
					select {
					case lost <- a:
					default:
					}
				}
			}
		}
	}()
	for i := 0; i < 2; i++ {
		if err := s.StopRHI(); err != nil {
			t.Fatal(err)
		}
		s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
		if err := s.StartRHI(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Keep watching over a few polls of the new rhi.
	if err := lab.Eventually(context.Background(), 0, 0, func(context.Context) error {
		st, err := s.Status(context.Background())
		if err == nil && st.ControlAPI.Polls < 5 {
			err = fmt.Errorf("%d polls", st.ControlAPI.Polls)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-watching
	select {
	case a := <-lost:
		t.Fatalf("the peer lost %s during a restart", a)
	default:
	}
}
