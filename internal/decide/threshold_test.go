package decide

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

func count(n int) health.MinHealthy { return health.MinHealthy{Count: n} }
func share(p int) health.MinHealthy { return health.MinHealthy{Percent: p} }

// counted is a poll result with counted nodes, as the client makes it: up
// with at least one healthy node, down with none.
func counted(healthy, total int) health.Result {
	v := health.Down
	if healthy > 0 {
		v = health.Up
	}
	return health.Result{Verdict: v, Healthy: int32(healthy), Total: int32(total)}
}

func TestNeededAndMet(t *testing.T) {
	tests := []struct {
		m              health.MinHealthy
		healthy, total int
		need           int
		met            bool
	}{
		{health.MinHealthy{}, 1, 10, 1, true},
		{health.MinHealthy{}, 0, 10, 1, false},
		{count(3), 2, 10, 3, false},
		{count(3), 3, 10, 3, true},
		{count(3), 4, 10, 3, true},
		{count(3), 3, 3, 3, true},
		{count(5), 3, 3, 5, false}, // more than there are: never met
		{share(50), 4, 4, 2, true},
		{share(50), 2, 4, 2, true},  // at the boundary
		{share(50), 1, 4, 2, false}, // just under
		{share(50), 1, 3, 2, false}, // 1.5 rounds up to 2
		{share(50), 2, 3, 2, true},
		{share(50), 2, 5, 3, false}, // 2.5 rounds up to 3
		{share(50), 3, 5, 3, true},
		{share(34), 1, 3, 2, false}, // 1.02 rounds up to 2
		{share(33), 1, 3, 1, true},  // 0.99 rounds up to 1
		{share(1), 1, 1000, 10, false},
		{share(1), 10, 1000, 10, true},
		{share(100), 9, 10, 10, false},
		{share(100), 10, 10, 10, true},
		{share(10), 1, 1, 1, true},
		{share(10), 0, 1, 1, false},
		{share(50), 0, 0, 1, false}, // 0 nodes never satisfies a share
		{share(1), 0, 0, 1, false},
		{count(1), 0, 0, 1, false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s/%d-of-%d", tt.m, tt.healthy, tt.total)
		if got := Needed(tt.m, tt.total); got != tt.need {
			t.Errorf("%s: Needed = %d, want %d", name, got, tt.need)
		}
		if got := Met(tt.m, tt.healthy, tt.total); got != tt.met {
			t.Errorf("%s: Met = %v, want %v", name, got, tt.met)
		}
	}
}

func TestClassifyUpstream(t *testing.T) {
	noChecker := health.Result{Verdict: health.NoChecker, Err: errors.New("no checker")}
	failed := health.Result{Verdict: health.Failed, Err: errors.New("timeout")}
	notFound := health.Result{Verdict: health.NotFound, Err: errors.New("not found")}
	tests := []struct {
		name string
		m    health.MinHealthy
		r    health.Result
		nc   config.CountAs
		want UpstreamState
	}{
		{"plain up", health.MinHealthy{}, counted(1, 10), config.CountHealthy, UpstreamUp},
		{"plain down", health.MinHealthy{}, counted(0, 10), config.CountHealthy, UpstreamDown},
		{"share below", share(50), counted(1, 10), config.CountHealthy, UpstreamDown},
		{"share met", share(50), counted(5, 10), config.CountHealthy, UpstreamUp},
		{"count met", count(2), counted(2, 10), config.CountHealthy, UpstreamUp},
		{"count below", count(2), counted(1, 10), config.CountHealthy, UpstreamDown},
		{"no checker healthy", share(50), noChecker, config.CountHealthy, UpstreamUp},
		{"no checker unhealthy", share(50), noChecker, config.CountUnhealthy, UpstreamDown},
		{"failed stays failed", count(1), failed, config.CountHealthy, UpstreamFailed},
		{"not found stays failed", share(50), notFound, config.CountHealthy, UpstreamFailed},
		{"share of no counted nodes", share(50), health.Result{Verdict: health.Down}, config.CountHealthy, UpstreamDown},
	}
	for _, tt := range tests {
		u := health.Upstreams("/apisix/upstreams/api")[0]
		u.MinHealthy = tt.m
		if got := ClassifyUpstream(&u, tt.r, tt.nc); got != tt.want {
			t.Errorf("%s: ClassifyUpstream = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestEvaluateMixedEntries: a VIP with a plain entry and a threshold entry;
// the plain one keeps today's meaning (one healthy node).
func TestEvaluateMixedEntries(t *testing.T) {
	ups := health.Upstreams("/apisix/upstreams/plain", "/apisix/upstreams/api")
	ups[1].MinHealthy = share(50)
	tests := []struct {
		cond       config.Condition
		plain, api health.Result
		want       Availability
	}{
		{config.All, counted(1, 10), counted(5, 10), Available},
		{config.All, counted(1, 10), counted(4, 10), Unavailable},
		{config.All, counted(0, 10), counted(10, 10), Unavailable},
		{config.Any, counted(0, 10), counted(5, 10), Available},
		{config.Any, counted(0, 10), counted(4, 10), Unavailable},
		{config.Any, counted(1, 10), counted(1, 10), Available},
		{config.All, health.Result{Verdict: health.Failed}, counted(4, 10), Unavailable},
		{config.All, health.Result{Verdict: health.Failed}, counted(5, 10), Unknown},
	}
	for i, tt := range tests {
		v := config.VIP{Upstreams: ups, Condition: tt.cond}
		snap := health.Snapshot{ups[0].Key: tt.plain, ups[1].Key: tt.api}
		if got := Evaluate(&v, snap, config.CountHealthy); got != tt.want {
			t.Errorf("%d (%s, plain %d/%d, api %d/%d): %v, want %v", i, tt.cond, tt.plain.Healthy, tt.plain.Total, tt.api.Healthy, tt.api.Total, got, tt.want)
		}
	}
}

// TestTickThresholdSequence scripts the lab's scenario: 4 of 4, 1 of 4
// (withdrawn, fall 1), 2 of 4 (back, rise 1), with a plain VIP on the same
// upstream that never moves, and checks the change's detail.
func TestTickThresholdSequence(t *testing.T) {
	const key = "/apisix/upstreams/api"
	gated := config.VIP{Address: netip.MustParsePrefix("192.0.2.10/32"), Upstreams: health.Upstreams(key), Condition: config.All, Rise: 1, Fall: 1}
	gated.Upstreams[0].MinHealthy = share(50)
	plain := config.VIP{Address: netip.MustParsePrefix("192.0.2.11/32"), Upstreams: health.Upstreams(key), Condition: config.All, Rise: 1, Fall: 1}
	cfg := &config.Config{FailurePolicy: policy(config.Withdraw, 3), VIPs: []config.VIP{gated, plain}}
	states := map[netip.Prefix]State{gated.Address: Initial(false), plain.Address: Initial(false)}
	steps := []struct {
		healthy    int
		want       string
		wantDetail string // of the gated VIP's change, if any
	}{
		{4, "192.0.2.10 192.0.2.11", ""},
		{3, "192.0.2.10 192.0.2.11", ""},
		{1, "192.0.2.11", "api: 1 of 4 healthy, needs 50%"},
		{1, "192.0.2.11", ""},
		{2, "192.0.2.10 192.0.2.11", ""},
		{0, "", "api: 0 of 4 healthy, needs 50%"},
	}
	for i, s := range steps {
		changes := Tick(cfg, health.Snapshot{key: counted(s.healthy, 4)}, states)
		if got := announced(cfg, states); got != s.want {
			t.Fatalf("step %d (%d of 4): announced %q, want %q", i, s.healthy, got, s.want)
		}
		for _, c := range changes {
			if c.VIP == gated.Address && c.Detail != s.wantDetail {
				t.Errorf("step %d: detail %q, want %q", i, c.Detail, s.wantDetail)
			}
		}
	}
}

func TestExplain(t *testing.T) {
	ups := health.Upstreams("/apisix/upstreams/api", "/apisix/upstreams/web", "/apisix/upstreams/img", "/apisix/upstreams/gone")
	ups[0].MinHealthy = share(50)
	ups[1].MinHealthy = count(2)
	v := config.VIP{Upstreams: ups, Condition: config.All}
	snap := health.Snapshot{
		ups[0].Key: counted(1, 10),
		ups[1].Key: counted(2, 3),
		ups[2].Key: {Verdict: health.NoChecker},
	}
	const want = "api: 1 of 10 healthy, needs 50%; img: no_checker; gone: not polled"
	if got := Explain(&v, snap, config.CountUnhealthy); got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
	snap[ups[0].Key] = counted(5, 10)
	snap[ups[3].Key] = counted(1, 1)
	if got := Explain(&v, snap, config.CountHealthy); got != "" {
		t.Errorf("Explain with all up = %q, want empty", got)
	}
}
