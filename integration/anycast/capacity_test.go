//go:build integration

package anycast

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/fakeapi"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/status"
)

// In the lab: capacity thresholds and the data-path probe.

var apiRef = apisix.Ref{Type: "upstreams", ID: "api"}

// vipStatus waits until the site's /status shows the VIP at addr as ok
// says, and returns that status and the poll count it was seen at.
func (s *Site) vipStatus(t *testing.T, addr string, ok func(status.VIPStatus) error) (status.VIPStatus, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got status.VIPStatus
	var polls uint64
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		for _, v := range st.VIPs {
			if v.Address == addr+"/32" {
				got, polls = v, st.ControlAPI.Polls
				return ok(v)
			}
		}
		return fmt.Errorf("no VIP %s in /status", addr)
	})
	if err != nil {
		t.Fatalf("%s: %s: %v (last %+v)", s.DC.Name, addr, err, got)
	}
	return got, polls
}

// TestCapacityThreshold: a VIP with min_healthy "50%" on an upstream of 4
// nodes is withdrawn at 1 of 4 healthy and back at 2 of 4; a plain VIP on
// the same upstream (one healthy node is enough) never moves.
func TestCapacityThreshold(t *testing.T) {
	vips := []site.VIP{
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}, Extra: `min_healthy: "50%"`},
		{Address: "10.0.0.101", Upstreams: []string{"/apisix/upstreams/api"}},
	}
	w := newWorld(t, site.Config{VIPs: vips})
	s := w.sites[0]
	steps := []struct {
		healthy int
		holds   string
		peer    string
	}{
		{4, "10.0.0.100/32 10.0.0.101/32", "via dc1 (paths from dc1)"},
		{1, "10.0.0.101/32", "no route"},
		{2, "10.0.0.100/32 10.0.0.101/32", "via dc1 (paths from dc1)"},
	}
	for _, st := range steps {
		if err := s.API.SetHealthyOf(apiRef, st.healthy, 4); err != nil {
			t.Fatal(err)
		}
		s.holds(t, st.holds)
		w.peerSees(t, st.peer, "10.0.0.100")
		w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.101")
		v, _ := s.vipStatus(t, "10.0.0.100", func(v status.VIPStatus) error {
			if u := v.Upstreams[0]; u.Healthy != st.healthy || u.Nodes != 4 || u.MinHealthy != "50%" || u.Needed != 2 {
				return fmt.Errorf("upstream %+v", u)
			}
			return nil
		})
		t.Logf("%d of 4: %s %s %+v", st.healthy, v.Verdict, v.Reason, v.Upstreams[0])
		if val, ok := s.metricValue(t, `rhi_upstream_healthy_nodes{upstream="/apisix/upstreams/api"}`); !ok || val != float64(st.healthy) {
			t.Errorf("rhi_upstream_healthy_nodes = %v (present %v), want %d", val, ok, st.healthy)
		}
		if val, ok := s.metricValue(t, `rhi_upstream_nodes{upstream="/apisix/upstreams/api"}`); !ok || val != 4 {
			t.Errorf("rhi_upstream_nodes = %v (present %v), want 4", val, ok)
		}
		if st.healthy == 1 {
			out, code, err := s.RHICommand(context.Background(), "verify")
			const why = "expected absent: 10.0.0.100/32: upstreams/api: 1 of 4 healthy, needs 50%"
			if err != nil || code != 0 || !strings.Contains(out, why) {
				t.Errorf("rhi verify at 1 of 4: exit %d, %v, want 0 and %q:\n%s", code, err, why, out)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(s.DC.Dir, "rhi-main.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `api: 1 of 4 healthy, needs 50%`) {
		t.Errorf("main log has no decision line naming the threshold:\n%s", tail(string(b), 2000))
	}
}

// probeTarget is a small HTTP server in the ADC's namespace standing for
// APISIX's data plane: a second fake API, whose faults make it answer 503
// and whose stop makes its port refuse connections.
type probeTarget struct {
	s     *Site
	proc  *lab.Proc
	api   *fakeapi.Client
	sock  string
	start int
}

const (
	probeAddr = "127.0.0.1:9080"
	probeURL  = "http://" + probeAddr + "/v1/healthcheck/upstreams/probe"
)

func (p *probeTarget) run(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	p.start++
	p.sock = filepath.Join(p.s.DC.Dir, fmt.Sprintf("probe-target-%d.sock", p.start))
	proc, err := p.s.DC.Start(ctx, fmt.Sprintf("probe-target-%d", p.start), bins.FakeAPI, "--listen", probeAddr, "--control", p.sock, "--healthy", "upstreams/probe")
	if err != nil {
		t.Fatal(err)
	}
	p.proc, p.api = proc, fakeapi.NewClient(p.sock)
	if err := lab.Eventually(ctx, 0, 0, func(context.Context) error { return p.api.Fault(apisix.Ref{}, "none") }); err != nil {
		t.Fatalf("probe target did not come up: %v", err)
	}
}

func (p *probeTarget) stop(t *testing.T) {
	t.Helper()
	if err := p.proc.Stop(); err != nil {
		t.Fatalf("stop probe target: %v", err)
	}
}

// probedWorld starts one site per policy, each with a probe target running
// before rhi starts, and the VIP 10.0.0.100 probed through it.
func probedWorld(t *testing.T, policies ...string) (*world, []*probeTarget) {
	t.Helper()
	l := lab.ForTest(t, lab.Options{DCs: len(policies)})
	w := &world{lab: l}
	// Generous timeouts: every good probe and poll must succeed. A poll
	// every second: TestProbeAnswer counts the polls to a withdrawal by
	// reading /status, which must not lag by a poll on a loaded machine.
	vips := []site.VIP{{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"},
		Extra: "probe: {url: \"" + probeURL + "\", host: api.example.com, timeout: 2s}"}}
	var targets []*probeTarget
	ctx := context.Background()
	for i, pol := range policies {
		s, err := NewSite(ctx, l.DCs[i], bins, site.Config{VIPs: vips, Policy: pol, Timeout: 5 * time.Second, PollInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		pt := &probeTarget{s: s}
		pt.run(t)
		targets = append(targets, pt)
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		w.sites = append(w.sites, s)
	}
	t.Cleanup(func() {
		for _, s := range w.sites {
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(s.DC.Dir, "rhi-main.log"))
				t.Logf("%s rhi-main.log (tail):\n%s", s.DC.Name, tail(string(b), 3000))
			}
			s.StopRHI()
		}
	})
	return w, targets
}

// TestProbeAnswer: the probe target answering 503 withdraws the VIP within
// one poll (the upstreams stay healthy); 200 brings it back.
func TestProbeAnswer(t *testing.T) {
	w, targets := probedWorld(t, "withdraw")
	s, pt := w.sites[0], targets[0]
	s.holds(t, "10.0.0.100/32")
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100")
	up, _ := s.vipStatus(t, "10.0.0.100", func(v status.VIPStatus) error {
		if v.Probe == nil || v.Probe.Result != "up" || v.Probe.Status != 200 {
			return fmt.Errorf("probe %+v", v.Probe)
		}
		return nil
	})
	t.Logf("probe up: %+v", *up.Probe)

	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := st.ControlAPI.Polls
	if err := pt.api.Fault(apisix.Ref{}, "503"); err != nil {
		t.Fatal(err)
	}
	down, polls := s.vipStatus(t, "10.0.0.100", func(v status.VIPStatus) error {
		if v.Desired {
			return errors.New("still desired")
		}
		return nil
	})
	// One poll may have been under way when the fault was set; the next
	// one must decide.
	if polls > before+2 {
		t.Errorf("withdrawn after %d polls, want within one (the poll under way, then the next)", polls-before)
	}
	if down.Probe == nil || down.Probe.Result != "down" || down.Probe.Status != 503 || down.Reason != "unhealthy" || down.Upstreams[0].Verdict != "up" {
		t.Errorf("after 503: reason %s, probe %+v, upstream %+v", down.Reason, down.Probe, down.Upstreams[0])
	}
	s.holds(t, "")
	w.peerSees(t, "no route", "10.0.0.100")
	if v, ok := s.metricValue(t, `rhi_probe_success{vip="10.0.0.100/32"}`); !ok || v != 0 {
		t.Errorf("rhi_probe_success = %v (present %v), want 0", v, ok)
	}
	if _, ok := s.metricValue(t, `rhi_probe_duration_seconds{vip="10.0.0.100/32"}`); !ok {
		t.Errorf("rhi_probe_duration_seconds missing")
	}

	if err := pt.api.Fault(apisix.Ref{}, "none"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32")
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100")
}

// TestProbeTargetStopped: with the probe target stopped (connection
// refused), the VIP is a failed poll: withdraw withdraws it after
// max_failed_polls, announce keeps it; both come back with the target.
func TestProbeTargetStopped(t *testing.T) {
	w, targets := probedWorld(t, "withdraw", "announce")
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
	for _, pt := range targets {
		pt.stop(t)
	}
	w.peerSees(t, "via dc2 (paths from dc2)", "10.0.0.100")
	wd, _ := w.sites[0].vipStatus(t, "10.0.0.100", func(v status.VIPStatus) error {
		if v.Reason != "policy_withdraw" {
			return fmt.Errorf("reason %s", v.Reason)
		}
		return nil
	})
	an, _ := w.sites[1].vipStatus(t, "10.0.0.100", func(v status.VIPStatus) error {
		if v.Reason != "policy_announce" || !v.Desired {
			return fmt.Errorf("reason %s desired %v", v.Reason, v.Desired)
		}
		return nil
	})
	for _, v := range []status.VIPStatus{wd, an} {
		if v.FailedPolls < 3 || v.Probe == nil || v.Probe.Result != "unreachable" || v.Upstreams[0].Verdict != "up" {
			t.Errorf("failed_polls %d, probe %+v, upstream %+v", v.FailedPolls, v.Probe, v.Upstreams[0])
		}
	}
	t.Logf("withdraw: %s after %d failed polls, probe %+v", wd.Reason, wd.FailedPolls, *wd.Probe)
	w.sites[1].holds(t, "10.0.0.100/32")
	w.sites[0].holds(t, "")

	for _, pt := range targets {
		pt.run(t)
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100")
}
