package status

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rhi-daemon/rhi/internal/daemon"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/verify"
)

type fixed struct{ s daemon.Status }

func (f *fixed) Status() daemon.Status { return f.s }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func sample() daemon.Status {
	return daemon.Status{
		Ready:     true,
		Interface: daemon.InterfaceStatus{Name: "rhi0", Exists: true, Up: true},
		Bird: daemon.BirdStatus{Enabled: true, Socket: "/run/bird/bird.ctl", LastCheck: t0, Agree: 1, Disagree: 1,
			Protocols: []verify.ProtocolState{{Name: "peer_4", State: "up", BGPState: "Established", Established: true}, {Name: "peer_6", State: "start", BGPState: "Active"}}},
		ControlAPI: daemon.APIStatus{
			URL: "http://127.0.0.1:9090", PollInterval: 3 * time.Second, Timeout: 5 * time.Second,
			LastPoll: t0, Polls: 42, FailedPolls: 2, ConsecutiveFailedPolls: 1,
		},
		VIPs: []daemon.VIPStatus{
			{Address: "10.0.0.100/32", Condition: "all", Verdict: decide.Available, Reason: decide.ReasonHealthy,
				Desired: true, OnInterface: true, Transitions: 3,
				Bird:      &daemon.VIPConfirm{Agrees: true, InTable: true, Latency: 25 * time.Millisecond, CheckedAt: t0, Exported: map[string]bool{"peer_4": true}},
				Upstreams: []daemon.UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 1, Nodes: 2}}},
			{Address: "10.0.0.101/32", Condition: "any", Verdict: decide.Unknown, Reason: decide.ReasonPolicyWithdraw, Drained: true,
				FailedPolls: 4,
				Upstreams:   []daemon.UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up"}, {Key: "/apisix/upstreams/gone", Verdict: "not_found"}}},
		},
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestMetrics(t *testing.T) {
	src := &fixed{sample()}
	m := NewMetrics(src, "v1.2.3")
	m.ObservePoll(20*time.Millisecond, 0)
	m.Reloaded(false, t0)
	code, body := get(t, Handler(src, m, func() time.Time { return t0 }), "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range []string{
		`rhi_vip_desired{vip="10.0.0.100/32"} 1`,
		`rhi_vip_desired{vip="10.0.0.101/32"} 0`,
		`rhi_vip_on_interface{vip="10.0.0.100/32"} 1`,
		`rhi_vip_failure_policy_active{vip="10.0.0.101/32"} 1`,
		`rhi_vip_failure_policy_active{vip="10.0.0.100/32"} 0`,
		`rhi_vip_failed_polls{vip="10.0.0.101/32"} 4`,
		`rhi_vip_transitions_total{vip="10.0.0.100/32"} 3`,
		`rhi_upstream_verdict{upstream="/apisix/upstreams/api",verdict="up"} 1`,
		`rhi_upstream_verdict{upstream="/apisix/upstreams/api",verdict="down"} 0`,
		`rhi_upstream_verdict{upstream="/apisix/upstreams/gone",verdict="not_found"} 1`,
		`rhi_polls_total 42`,
		`rhi_failed_polls_total 2`,
		`rhi_consecutive_failed_polls 1`,
		`rhi_interface_up{iface="rhi0"} 1`,
		`rhi_poll_duration_seconds_count 1`,
		`rhi_config_reloads_total{result="failure"} 1`,
		`rhi_config_last_reload_successful 0`,
		`rhi_build_info{goversion="`,
		`rhi_ready 1`,
		`rhi_vip_drained{vip="10.0.0.101/32"} 1`,
		`rhi_vip_drained{vip="10.0.0.100/32"} 0`,
		`rhi_drain_file_error 0`,
		`rhi_bird_up 1`,
		`rhi_bgp_established{protocol="peer_4"} 1`,
		`rhi_bgp_established{protocol="peer_6"} 0`,
		`rhi_vip_bird_agrees{vip="10.0.0.100/32"} 1`,
		`rhi_vip_bird_confirm_seconds{vip="10.0.0.100/32"} 0.025`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if n := strings.Count(body, `rhi_upstream_verdict{upstream="/apisix/upstreams/api"`); n != 5 {
		t.Errorf("shared upstream has %d series, want 5 (one per verdict)", n)
	}
}

func TestStatusJSON(t *testing.T) {
	src := &fixed{sample()}
	code, body := get(t, Handler(src, NewMetrics(src, "dev"), time.Now), "/status")
	if code != 200 {
		t.Fatalf("/status: %d", code)
	}
	var got daemon.Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, body)
	}
	if diff := cmp.Diff(sample(), got, cmpopts.IgnoreUnexported(daemon.VIPConfirm{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !strings.Contains(body, `"reason": "policy_withdraw"`) || !strings.Contains(body, `"verdict": "unknown"`) {
		t.Errorf("status JSON lacks readable reasons:\n%s", body)
	}
}

func TestHealthz(t *testing.T) {
	tests := []struct {
		name string
		s    daemon.Status
		now  time.Time
		code int
		body string
	}{
		{"not ready", daemon.Status{}, t0, 503, "not ready"},
		{"fresh", sample(), t0.Add(4 * time.Second), 200, "ok"},
		{"stalled", sample(), t0.Add(time.Minute), 503, "stalled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fixed{tt.s}
			code, body := get(t, Handler(src, NewMetrics(src, "dev"), func() time.Time { return tt.now }), "/healthz")
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("got %d %q, want %d %q", code, body, tt.code, tt.body)
			}
		})
	}
}

// TestMetricsBirdAway: while BIRD cannot be asked, the last agreement is
// not exported as current: rhi_bird_up says why, the renewals stay.
func TestMetricsBirdAway(t *testing.T) {
	s := sample()
	s.Bird.Error = "dial unix /run/bird/bird.ctl: connect: connection refused"
	s.VIPs[0].Bird.Stale = true
	s.VIPs[0].Bird.Renewed = 2
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{`rhi_bird_up 0`, `rhi_vip_bird_renewals_total{vip="10.0.0.100/32"} 2`} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	for _, name := range []string{"rhi_vip_bird_agrees{", "rhi_vip_bird_confirm_seconds{"} {
		if strings.Contains(body, name) {
			t.Errorf("/metrics exports %s… for a stale record", name)
		}
	}
}
