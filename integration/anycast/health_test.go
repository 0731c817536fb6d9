//go:build integration

package anycast

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// metricValue reads one unlabelled sample (or one whose name and labels are
// given whole) from /metrics; found is false when there is no such series.
func (s *Site) metricValue(t *testing.T, series string) (v float64, found bool) {
	t.Helper()
	code, body, err := s.Get(context.Background(), "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", l, err)
			}
			return v, true
		}
	}
	return 0, false
}

// TestHealthzNoNetAdmin: rhi without CAP_NET_ADMIN cannot put a VIP on the
// interface; once max_failed_polls ticks have all failed to write,
// /healthz answers 503 naming the interface and the error, rhi_ready is 0,
// and the failed writes are counted.
func TestHealthzNoNetAdmin(t *testing.T) {
	const maxFailed = 3
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed, MaxFailedPolls: maxFailed}, faultSite{
		wrap: []string{"setpriv", "--bounding-set", "-net_admin"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reason string
	var ticks uint64
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		// /status first: /healthz, asked after, has seen at least as
		// many ticks, every one of which failed to write.
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		code, body, err := s.Get(ctx, "/healthz")
		if err != nil {
			return err
		}
		if st.ControlAPI.Polls < maxFailed {
			return errorf("%d ticks", st.ControlAPI.Polls)
		}
		if code != 503 || !strings.Contains(body, `interface rhi0 could not be written`) || !strings.Contains(body, "operation not permitted") {
			return lab.Stop(errorf("after %d ticks that all failed to write: /healthz %d %q", st.ControlAPI.Polls, code, body))
		}
		reason, ticks = strings.TrimSpace(body), st.ControlAPI.Polls
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/healthz after %d ticks: 503 %q", ticks, reason)
	if v, ok := s.metricValue(t, "rhi_ready"); !ok || v != 0 {
		t.Errorf("rhi_ready = %v (present %v), want 0", v, ok)
	}
	if v, ok := s.metricValue(t, "rhi_interface_write_errors_total"); !ok || v < maxFailed {
		t.Errorf("rhi_interface_write_errors_total = %v (present %v), want at least %d", v, ok, maxFailed)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Interface.FailedWrites < maxFailed || st.Interface.WriteErrors < maxFailed {
		t.Errorf("/status interface: consecutive_failed_writes %d, write_errors_total %d; want both at least %d",
			st.Interface.FailedWrites, st.Interface.WriteErrors, maxFailed)
	}
	s.alive(t)
}

// TestBirdStoppedNoBGPSeries: with BIRD gone, the next check drops every
// rhi_bgp_established series rather than repeat what BIRD said before;
// rhi_bird_up says why, and /healthz stays 200 (BIRD is not rhi's health).
func TestBirdStoppedNoBGPSeries(t *testing.T) {
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, p := range st.Bird.Protocols {
		series = append(series, `rhi_bgp_established{protocol="`+p.Name+`"} 1`)
	}
	s.metricsHave(t, series...)
	signalBird(t, s.DC, syscall.SIGKILL)
	// A change makes rhi check at once, rather than at the next slow
	// confirmation up to 30 s away.
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.statusWhen(t, "reported BIRD unreachable", func(st status.Status) error {
		if st.Bird.Error == "" {
			return errorf("no BIRD error yet")
		}
		return nil
	})
	code, body, err := s.Get(context.Background(), "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	if strings.Contains(body, "rhi_bgp_established{") {
		t.Errorf("/metrics keeps rhi_bgp_established with BIRD gone:\n%s", grepLines(body, "rhi_bgp_established"))
	}
	if !strings.Contains(body, "\nrhi_bird_up 0\n") {
		t.Errorf("/metrics lacks rhi_bird_up 0")
	}
	if code, body, err := s.Get(context.Background(), "/healthz"); err != nil || code != 200 {
		t.Errorf("/healthz with BIRD gone: %d %q %v; want 200", code, body, err)
	}
}

// TestDryRunQuietAboutItself: a dry run on an empty interface that would
// add every VIP holds BIRD to the interface as it is, so BIRD agrees on
// every VIP (it would disagree on all three if held to what rhi wants) and
// nothing is logged as a disagreement; /status and /metrics say it is a
// dry run.
func TestDryRunQuietAboutItself(t *testing.T) {
	l := lab.ForTest(t, lab.Options{DCs: 1})
	ctx := context.Background()
	s, err := NewSite(ctx, l.DCs[0], bins, site.Config{VIPs: site.Seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.StopRHI() })
	if err := s.StartRHI(ctx, "--dry-run"); err != nil {
		t.Fatal(err)
	}
	st := s.statusWhen(t, "confirmed through BIRD", func(st status.Status) error {
		if st.Bird.LastCheck.IsZero() {
			return errorf("no check yet")
		}
		return nil
	})
	if !st.DryRun || st.Bird.Agree != len(site.Seed) || st.Bird.Disagree != 0 {
		t.Errorf("dry run: dry_run %v, BIRD agrees on %d, disagrees on %d; want true, %d, 0", st.DryRun, st.Bird.Agree, st.Bird.Disagree, len(site.Seed))
	}
	for _, v := range st.VIPs {
		if !v.Desired || v.OnInterface {
			t.Errorf("vip %s: desired %v, on interface %v; want a VIP the dry run would add", v.Address, v.Desired, v.OnInterface)
		}
	}
	s.metricsHave(t, "rhi_dry_run 1")
	s.holds(t, "")
	if n := s.logCount(t, "rhi-error.log", "BIRD disagrees"); n != 0 {
		t.Errorf("dry run logged %d \"BIRD disagrees\" lines", n)
	}
}

// grepLines returns the lines of text that hold substr.
func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
