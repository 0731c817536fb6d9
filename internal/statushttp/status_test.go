package statushttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"

	"github.com/rhi-daemon/rhi/internal/status"
)

type fixed struct{ s status.Status }

func (f *fixed) Status() status.Status { return f.s }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func sample() status.Status {
	return status.Status{
		SchemaVersion: status.SchemaVersion,
		Ready:         true,
		LastTick:      t0.Add(30 * time.Millisecond),
		Interface:     status.InterfaceStatus{Name: "rhi0", Exists: true, Up: true, WriteErrors: 7},
		Bird: status.BirdStatus{Enabled: true, Socket: "/run/bird/bird.ctl", LastCheck: t0, Agree: 1, Disagree: 1,
			Protocols: []router.ProtocolState{{Name: "peer_4", State: "up", BGPState: "Established", Established: true}, {Name: "peer_6", State: "start", BGPState: "Active"}}},
		ControlAPI: status.APIStatus{
			URL: "http://127.0.0.1:9090", PollInterval: 3 * time.Second, Timeout: 5 * time.Second,
			LastPoll: t0, Polls: 42, FailedPolls: 2, ConsecutiveFailedPolls: 1,
			MaxFailedPolls: 3, LastSettled: t0.Add(-3*time.Second + 20*time.Millisecond),
		},
		VIPs: []status.VIPStatus{
			{Address: "10.0.0.100/32", Condition: "all", Verdict: decide.Available, Reason: decide.ReasonHealthy,
				Desired: true, OnInterface: true, Transitions: 3,
				Bird:      &status.VIPConfirm{Agrees: true, InTable: true, Latency: 25 * time.Millisecond, CheckedAt: t0, Exported: map[string]bool{"peer_4": true}},
				Upstreams: []status.UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up", Healthy: 1, Nodes: 2}}},
			{Address: "10.0.0.101/32", Condition: "any", Verdict: decide.Unknown, Reason: decide.ReasonPolicyWithdraw, Drained: true,
				DrainPhase: "draining", DrainDeadline: t0.Add(4500 * time.Millisecond), FailedPolls: 4,
				Upstreams: []status.UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up"}, {Key: "/apisix/upstreams/gone", Verdict: "not_found"}}},
		},
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
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
		`rhi_interface_write_errors_total 7`,
		`rhi_last_settled_poll_timestamp_seconds 1.79621279702e+09`,
		`rhi_dry_run 0`,
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
	var got status.Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, body)
	}
	if diff := cmp.Diff(sample(), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !strings.Contains(body, `"reason": "policy_withdraw"`) || !strings.Contains(body, `"verdict": "unknown"`) {
		t.Errorf("status JSON lacks readable reasons:\n%s", body)
	}
}

// TestJudge: the /healthz verdict for each way the daemon can be unwell,
// and just inside each limit.
func TestJudge(t *testing.T) {
	with := func(f func(*status.Status)) status.Status { s := sample(); f(&s); return s }
	tick := t0.Add(30 * time.Millisecond) // sample's LastTick
	limit := 3*3*time.Second + 5*time.Second
	tests := []struct {
		name string
		s    status.Status
		now  time.Time
		want string // "" for healthy
	}{
		{"not ready", status.Status{}, t0, "not ready: no tick yet"},
		{"fresh", sample(), t0.Add(4 * time.Second), ""},
		{"tick at the limit", sample(), tick.Add(limit), ""},
		{"stalled", sample(), tick.Add(limit + time.Millisecond), "stalled: no tick finished for 14.001s (limit 14s: 3 poll intervals and the timeout)"},
		{"writes failing, one tick short", with(func(s *status.Status) { s.Interface.FailedWrites = 2; s.Interface.Error = "permission denied" }), tick, ""},
		{"writes failing", with(func(s *status.Status) {
			s.Interface.FailedWrites = 3
			s.Interface.Error = "vip \"10.0.0.100/32\": add: operation not permitted\nvip \"10.0.0.101/32\": add: operation not permitted"
		}), tick, // one line, whatever the error
			`interface rhi0 could not be written in the last 3 ticks (max_failed_polls 3): vip "10.0.0.100/32": add: operation not permitted; vip "10.0.0.101/32": add: operation not permitted`},
		{"unsettled, one poll short", with(func(s *status.Status) { s.ControlAPI.UnsettledPolls = 2 }), tick, ""},
		{"unsettled", with(func(s *status.Status) { s.ControlAPI.UnsettledPolls = 3 }), t0.Add(6 * time.Second),
			"control API: the last 3 polls settled no VIP (max_failed_polls 3; last 8.98s ago)"},
		{"never settled", with(func(s *status.Status) { s.ControlAPI.UnsettledPolls = 4; s.ControlAPI.LastSettled = time.Time{} }), tick,
			"control API: the last 4 polls settled no VIP (max_failed_polls 3; none since start)"},
		{"BIRD away is not judged", with(func(s *status.Status) { s.Bird.Error = "connection refused" }), tick, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := status.Judge(tt.s, tt.now)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Judge = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHealthz: /healthz answers Judge's verdict, the reason as plain text,
// and rhi_ready agrees with it.
func TestHealthz(t *testing.T) {
	unwell := sample()
	unwell.Interface.FailedWrites, unwell.Interface.Error = 5, "operation not permitted"
	tests := []struct {
		name  string
		s     status.Status
		now   time.Time
		code  int
		body  string
		ready string
	}{
		{"not ready", status.Status{}, t0, 503, "not ready", "rhi_ready 0"},
		{"fresh", sample(), t0.Add(4 * time.Second), 200, "ok", "rhi_ready 1"},
		{"stalled", sample(), t0.Add(time.Minute), 503, "stalled", "rhi_ready 0"},
		{"writes failing", unwell, t0, 503, "could not be written", "rhi_ready 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fixed{tt.s}
			clock := func() time.Time { return tt.now }
			m := NewMetrics(src, "dev")
			m.coll.now = clock
			h := Handler(src, m, clock)
			code, body := get(t, h, "/healthz")
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("got %d %q, want %d %q", code, body, tt.code, tt.body)
			}
			if _, metrics := get(t, h, "/metrics"); !strings.Contains(metrics, "\n"+tt.ready+"\n") {
				t.Errorf("/metrics lacks %q", tt.ready)
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
	for _, name := range []string{"rhi_vip_bird_agrees{", "rhi_vip_bird_confirm_seconds{", "rhi_bgp_established{"} {
		if strings.Contains(body, name) {
			t.Errorf("/metrics exports %s… for a stale record", name)
		}
	}
}

// TestMetricsConfirmOnlyAgreeing: a VIP BIRD disagrees with (an IPv6 VIP
// without an IPv6 session, say) has no confirmation time, not "0 s".
func TestMetricsConfirmOnlyAgreeing(t *testing.T) {
	s := sample()
	s.VIPs[1].Address = "2001:db8::1/128"
	s.VIPs[1].Bird = &status.VIPConfirm{Expected: "present", Problem: "no Established protocol carries IPv6", CheckedAt: t0, DisagreeingSince: t0}
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{`rhi_vip_bird_agrees{vip="2001:db8::1/128"} 0`, `rhi_vip_bird_confirm_seconds{vip="10.0.0.100/32"} 0.025`} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if strings.Contains(body, `rhi_vip_bird_confirm_seconds{vip="2001:db8::1/128"}`) {
		t.Errorf("/metrics has a confirmation time for a VIP BIRD disagrees with")
	}
}

// TestMetricsDryRunAndNeverSettled: rhi_dry_run says a dry run; a daemon
// whose polls never settled anything reports 0 as the last settled time.
func TestMetricsDryRunAndNeverSettled(t *testing.T) {
	s := sample()
	s.DryRun = true
	s.ControlAPI.LastSettled = time.Time{}
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{"\nrhi_dry_run 1\n", "\nrhi_last_settled_poll_timestamp_seconds 0\n"} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestStatusJSONSchema: /status carries schema_version and dry_run, seconds
// with their unit, and no zero time.
func TestStatusJSONSchema(t *testing.T) {
	s := sample()
	s.DryRun = true
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "dev"), time.Now), "/status")
	for _, want := range []string{`"schema_version": 2`, `"dry_run": true`, `"poll_interval_seconds": 3`, `"timeout_seconds": 5`,
		`"confirm_latency_seconds": 0.025`, `"write_errors_total": 7`, `"consecutive_unsettled_polls": 0`, `"max_failed_polls": 3`} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %s", want)
		}
	}
	for _, bad := range []string{"0001-01-01", "_ns\"", `"since"`, `"disagreeing_since"`} {
		if strings.Contains(body, bad) {
			t.Errorf("/status has %s:\n%s", bad, body)
		}
	}
}

// TestStatusStreamsAsTheEncoder: /status, written one VIP at a time, is
// byte for byte what an indenting json.Encoder writes of the whole, with
// no VIP, one, and several (HTML characters and nested values included).
func TestStatusStreamsAsTheEncoder(t *testing.T) {
	many := sample()
	odd := many.VIPs[0]
	odd.Description, odd.Address = `<web> & "api"`, "2001:db8::1/128"
	many.VIPs = append(many.VIPs, odd, many.VIPs[1])
	one := sample()
	one.VIPs = one.VIPs[:1]
	none := sample()
	none.VIPs = nil
	empty := sample()
	empty.VIPs = []status.VIPStatus{}
	for name, s := range map[string]status.Status{"many": many, "one": one, "nil": none, "empty": empty, "not ready": {SchemaVersion: status.SchemaVersion}} {
		checkStreamsAsEncoder(t, name, s)
	}
}

// status10000 is sample() with 10,000 VIPs.
func status10000() status.Status { return statusN(10000) }

// statusN is the sample status with n VIPs, each over an upstream of its own.
func statusN(n int) status.Status {
	s := sample()
	vips := make([]status.VIPStatus, 0, n)
	for i := range n {
		v := s.VIPs[i%2]
		v.Address = fmt.Sprintf("10.%d.%d.%d/32", i>>16, i>>8&255, i&255)
		v.Upstreams = []status.UpstreamStatus{{Key: fmt.Sprintf("/apisix/upstreams/u%d", i), Verdict: "up", Healthy: 1, Nodes: 2}}
		vips = append(vips, v)
	}
	s.VIPs = vips
	return s
}

// BenchmarkMetrics10000 is one /metrics scrape of 10,000 VIPs over 10,000
// upstreams: B/op is the garbage a Prometheus scrape makes.
func BenchmarkMetrics10000(b *testing.B) {
	src := &fixed{status10000()}
	h := Handler(src, NewMetrics(src, "dev"), time.Now)
	for b.Loop() {
		h.ServeHTTP(discardWriter{}, httptest.NewRequest("GET", "/metrics", nil))
	}
}

// discardWriter is an http.ResponseWriter that keeps nothing.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// countingWriter is a discardWriter that counts the bytes of the body.
type countingWriter struct {
	discardWriter
	n int
}

func (c *countingWriter) Write(b []byte) (int, error) { c.n += len(b); return len(b), nil }

// BenchmarkStatusJSON10000 is a /status of 10,000 VIPs written as the
// handler does (stream) and as one indenting json.Encoder would (a
// simpler way): compare B/op, the garbage of one read.
func BenchmarkStatusJSON10000(b *testing.B) {
	s := status10000()
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			writeStatus(io.Discard, s)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		for b.Loop() {
			enc := json.NewEncoder(io.Discard)
			enc.SetIndent("", "  ")
			enc.Encode(s)
		}
	})
}

// checkStreamsAsEncoder fails unless /status of s is byte for byte what one
// indenting json.Encoder writes.
func checkStreamsAsEncoder(t *testing.T, name string, s status.Status) {
	t.Helper()
	var want strings.Builder
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	src := &fixed{s}
	if _, got := get(t, Handler(src, NewMetrics(src, "dev"), time.Now), "/status"); got != want.String() {
		t.Errorf("%s: /status differs from the encoder's:\n%s", name, cmp.Diff(want.String(), got))
	}
}

// summarized is a Summarizer whose Status and Summary say different
// things, and that counts the calls to each.
type summarized struct {
	status, summary status.Status
	statuses        int
	summaries       int
}

func (s *summarized) Status() status.Status  { s.statuses++; return s.status }
func (s *summarized) Summary() status.Status { s.summaries++; return s.summary }

// TestHealthzReadsTheSummary: /healthz judges a Summarizer's Summary, not
// its whole Status (5 MB at 10,000 VIPs), and a plain Source's
// Status.
func TestHealthzReadsTheSummary(t *testing.T) {
	clock := func() time.Time { return t0.Add(4 * time.Second) }
	for _, tt := range []struct {
		name            string
		status, summary status.Status
		code            int
	}{
		{"summary healthy", status.Status{}, sample(), 200},
		{"summary unwell", sample(), status.Status{}, 503},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &summarized{status: tt.status, summary: tt.summary}
			code, _ := get(t, Handler(src, NewMetrics(&fixed{sample()}, "dev"), clock), "/healthz")
			if code != tt.code || src.statuses != 0 || src.summaries != 1 {
				t.Errorf("got %d after %d Status and %d Summary calls, want %d after 0 and 1", code, src.statuses, src.summaries, tt.code)
			}
		})
	}
	if got := status.SummaryOf(&fixed{sample()}); !reflect.DeepEqual(got, sample()) {
		t.Errorf("SummaryOf a plain Source = %+v, want its Status", got)
	}
}
