package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probe"
)

// fakeProber answers every probe with the outcome set for its URL; a URL
// with none is unreachable. It records each call's specs and deadline.
type fakeProber struct {
	mu        sync.Mutex
	outcomes  map[string]probe.Outcome
	calls     [][]probe.Spec
	deadlines []time.Duration // time left until the call's deadline
}

func (f *fakeProber) set(url string, o probe.Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes[url] = o
}

func (f *fakeProber) Probe(ctx context.Context, specs []probe.Spec) []probe.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]probe.Spec(nil), specs...))
	dl, _ := ctx.Deadline()
	f.deadlines = append(f.deadlines, time.Until(dl))
	out := make([]probe.Result, len(specs))
	for i, s := range specs {
		o, ok := f.outcomes[s.URL]
		switch {
		case !ok || o == probe.Unreachable:
			out[i] = probe.Result{Outcome: probe.Unreachable, Latency: s.Timeout, Err: errors.New("connection refused")}
		case o == probe.Up:
			out[i] = probe.Result{Outcome: probe.Up, Status: 200, Latency: 3 * time.Millisecond}
		default:
			out[i] = probe.Result{Outcome: probe.Down, Status: 503, Latency: 4 * time.Millisecond, Err: errors.New("status 503 (expected 200)")}
		}
	}
	return out
}

const probeURL = "http://127.0.0.1:9080/healthz"

// probedRig is the seed with a probe on 10.0.0.100 (api) and a fake prober.
func probedRig(t *testing.T, policy config.Action) (*rig, *fakeProber) {
	t.Helper()
	cfg := seed(policy)
	s := probe.Defaults()
	s.URL, s.Host = probeURL, "api.example.com"
	cfg.VIPs[0].Probe = &s
	r := newRig(t, cfg, newFakeLink())
	fp := &fakeProber{outcomes: map[string]probe.Outcome{probeURL: probe.Up}}
	r.d.polls.probes.src = fp
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	return r, fp
}

func TestProbeDecides(t *testing.T) {
	r, fp := probedRig(t, config.Withdraw)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if len(fp.calls) != 1 || len(fp.calls[0]) != 1 || fp.calls[0][0].URL != probeURL {
		t.Fatalf("probe calls %+v, want one with the one spec", fp.calls)
	}
	if dl := fp.deadlines[0]; dl <= 0 || dl > r.d.cfg.Timeout {
		t.Errorf("probe deadline in %v, want within apisix_timeout %v", dl, r.d.cfg.Timeout)
	}
	vs := r.d.Status().VIPs[0]
	if vs.Probe == nil || vs.Probe.Result != "up" || vs.Probe.Status != 200 || vs.Probe.LatencySeconds != 0.003 || vs.Probe.Target != "GET "+probeURL+" (host api.example.com)" {
		t.Errorf("status probe %+v", vs.Probe)
	}
	if r.d.Status().VIPs[1].Probe != nil {
		t.Errorf("a VIP without a probe shows one: %+v", r.d.Status().VIPs[1].Probe)
	}

	// Down: withdrawn at once (fall 1), the others stay; the log says why.
	fp.set(probeURL, probe.Down)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if vs := r.d.Status().VIPs[0]; vs.Probe.Result != "down" || vs.Probe.Status != 503 || vs.Reason != "unhealthy" {
		t.Errorf("after a 503: %+v probe %+v", vs, vs.Probe)
	}
	if !logHas(r, "withdraw", "probe: down") {
		t.Errorf("no withdraw log line with detail %q", "probe: down")
	}
	fp.set(probeURL, probe.Up)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
}

// TestProbeUnreachableFollowsPolicy: a probe that cannot be sent is a
// failed poll for its VIP alone: kept until max_failed_polls, then the
// policy decides.
func TestProbeUnreachableFollowsPolicy(t *testing.T) {
	for _, tt := range []struct {
		policy config.Action
		want   string
	}{
		{config.Withdraw, "10.0.0.101 10.0.0.102"},
		{config.Announce, "10.0.0.100 10.0.0.101 10.0.0.102"},
	} {
		t.Run(string(tt.policy), func(t *testing.T) {
			r, fp := probedRig(t, tt.policy)
			r.tick(t)
			fp.set(probeURL, probe.Unreachable)
			for i := 1; i < 3; i++ {
				r.tick(t)
				r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
				if fpolls := r.d.Status().VIPs[0].FailedPolls; fpolls != i {
					t.Fatalf("poll %d: failed_polls %d", i, fpolls)
				}
			}
			r.tick(t)
			r.expect(t, tt.want)
			if st := r.d.Status(); st.VIPs[1].FailedPolls != 0 || st.VIPs[0].Probe.Result != "unreachable" {
				t.Errorf("status %+v; probe %+v", st.VIPs[:2], st.VIPs[0].Probe)
			}
		})
	}
}

// TestProbeReload: a reload that adds a probe to a VIP that stays keeps
// its state and probes from the next poll; one that removes it stops.
func TestProbeReload(t *testing.T) {
	r, fp := probedRig(t, config.Withdraw)
	r.tick(t)
	next := seed(config.Withdraw) // the same VIPs, without a probe
	r.d.applyReload(next)
	r.tick(t)
	if len(fp.calls) != 1 {
		t.Errorf("probed %d times, want 1: the reload removed the probe", len(fp.calls))
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if r.d.Status().VIPs[0].Probe != nil {
		t.Errorf("probe still shown after the reload removed it")
	}
}

func logHas(r *rig, action, detail string) bool {
	for _, e := range r.logs.AllEntries() {
		d, _ := e.Data["detail"].(string)
		if e.Data["action"] == action && strings.Contains(d, detail) {
			return true
		}
	}
	return false
}

// TestThresholdReload: a reload that adds a threshold the upstream meets
// leaves the VIP alone (no interface write); one it does not meet
// withdraws the VIP at the reload's tick; removing it brings it back.
func TestThresholdReload(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve) // 1 of 1 node healthy
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	writes := r.link.writeCount()

	met := seed(config.Withdraw)
	met.VIPs[0].Upstreams[0].MinHealthy = health.MinHealthy{Percent: 100}
	r.d.applyReload(met)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.link.writeCount(); n != writes {
		t.Errorf("a met threshold wrote to the interface %d times", n-writes)
	}
	if u := r.d.Status().VIPs[0].Upstreams[0]; u.MinHealthy != "100%" || u.Needed != 1 {
		t.Errorf("status upstream %+v, want min_healthy 100%%, needed 1", u)
	}

	unmet := seed(config.Withdraw)
	unmet.VIPs[0].Upstreams[0].MinHealthy = health.MinHealthy{Count: 2}
	r.d.applyReload(unmet)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if !logHas(r, "withdraw", "api: 1 of 1 healthy, needs 2") {
		t.Errorf("no withdraw log line naming the threshold")
	}
	r.d.applyReload(seed(config.Withdraw))
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
}
