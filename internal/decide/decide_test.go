package decide

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

var allVerdicts = []health.Verdict{health.Failed, health.Up, health.Down, health.NoChecker, health.NotFound}

func res(v health.Verdict) health.Result {
	r := health.Result{Verdict: v}
	if v == health.Failed || v == health.NotFound || v == health.NoChecker {
		r.Err = errors.New(v.String())
	}
	return r
}

func TestClassify(t *testing.T) {
	tests := []struct {
		verdict   health.Verdict
		noChecker config.CountAs
		want      UpstreamState
	}{
		{health.Up, "healthy", UpstreamUp},
		{health.Up, "unhealthy", UpstreamUp},
		{health.Down, "healthy", UpstreamDown},
		{health.Down, "unhealthy", UpstreamDown},
		{health.NoChecker, "healthy", UpstreamUp},
		{health.NoChecker, "unhealthy", UpstreamDown},
		{health.NotFound, "healthy", UpstreamFailed},
		{health.NotFound, "unhealthy", UpstreamFailed},
		{health.Failed, "healthy", UpstreamFailed},
		{health.Failed, "unhealthy", UpstreamFailed},
	}
	for _, tt := range tests {
		t.Run(tt.verdict.String()+"/"+string(tt.noChecker), func(t *testing.T) {
			if got := Classify(res(tt.verdict), tt.noChecker); got != tt.want {
				t.Errorf("Classify(%v, %q) = %v, want %v", tt.verdict, tt.noChecker, got, tt.want)
			}
		})
	}
}

func TestEvaluateTable(t *testing.T) {
	U, D, F, N, X := health.Up, health.Down, health.Failed, health.NoChecker, health.NotFound
	tests := []struct {
		name      string
		cond      config.Condition
		noChecker config.CountAs
		verdicts  []health.Verdict
		want      Availability
	}{
		{"all single up", config.All, "healthy", []health.Verdict{U}, Available},
		{"all single down", config.All, "healthy", []health.Verdict{D}, Unavailable},
		{"all single failed", config.All, "healthy", []health.Verdict{F}, Unknown},
		{"all single not found", config.All, "healthy", []health.Verdict{X}, Unknown},
		{"all no checker healthy", config.All, "healthy", []health.Verdict{N}, Available},
		{"all no checker unhealthy", config.All, "unhealthy", []health.Verdict{N}, Unavailable},
		{"all up up", config.All, "healthy", []health.Verdict{U, U}, Available},
		{"all up down", config.All, "healthy", []health.Verdict{U, D}, Unavailable},
		{"all failed settles by down", config.All, "healthy", []health.Verdict{F, D}, Unavailable},
		{"all up failed unknown", config.All, "healthy", []health.Verdict{U, F}, Unknown},
		{"all up notfound unknown", config.All, "healthy", []health.Verdict{U, X}, Unknown},
		{"any single up", config.Any, "healthy", []health.Verdict{U}, Available},
		{"any down down", config.Any, "healthy", []health.Verdict{D, D}, Unavailable},
		{"any up down", config.Any, "healthy", []health.Verdict{D, U}, Available},
		{"any failed settles by up", config.Any, "healthy", []health.Verdict{F, U}, Available},
		{"any down failed unknown", config.Any, "healthy", []health.Verdict{D, F}, Unknown},
		{"any all failed unknown", config.Any, "healthy", []health.Verdict{F, X}, Unknown},
		{"any no checker unhealthy with down", config.Any, "unhealthy", []health.Verdict{N, D}, Unavailable},
		{"any no checker healthy with down", config.Any, "healthy", []health.Verdict{N, D}, Available},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, snap := vipWith(tt.cond, tt.verdicts)
			if got := Evaluate(&v, snap, tt.noChecker); got != tt.want {
				t.Errorf("Evaluate = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEvaluateExhaustive checks every combination of up to three upstream
// verdicts against the three-valued rule, stated independently:
// a VIP is settled when every way of resolving its failed upstreams to up or
// down gives the same answer.
func TestEvaluateExhaustive(t *testing.T) {
	for _, cond := range []config.Condition{config.All, config.Any} {
		for _, nc := range []config.CountAs{config.CountHealthy, config.CountUnhealthy} {
			for n := 1; n <= 3; n++ {
				forEachCombo(n, func(vs []health.Verdict) {
					v, snap := vipWith(cond, vs)
					want := oracle(cond, nc, vs)
					if got := Evaluate(&v, snap, nc); got != want {
						t.Errorf("%s/%s %v: got %v, want %v", cond, nc, vs, got, want)
					}
				})
			}
		}
	}
}

func oracle(cond config.Condition, nc config.CountAs, vs []health.Verdict) Availability {
	var unknown []int
	ups := make([]bool, len(vs))
	for i, v := range vs {
		switch {
		case v == health.Up, v == health.NoChecker && nc == "healthy":
			ups[i] = true
		case v == health.Down, v == health.NoChecker && nc == "unhealthy":
		default:
			unknown = append(unknown, i)
		}
	}
	seen := map[bool]bool{}
	for mask := 0; mask < 1<<len(unknown); mask++ {
		for j, i := range unknown {
			ups[i] = mask&(1<<j) != 0
		}
		res := cond == config.All
		for _, u := range ups {
			if cond == config.All {
				res = res && u
			} else {
				res = res || u
			}
		}
		seen[res] = true
	}
	switch {
	case len(seen) == 2:
		return Unknown
	case seen[true]:
		return Available
	}
	return Unavailable
}

func forEachCombo(n int, f func([]health.Verdict)) {
	vs := make([]health.Verdict, n)
	var rec func(int)
	rec = func(i int) {
		if i == n {
			f(append([]health.Verdict(nil), vs...))
			return
		}
		for _, v := range allVerdicts {
			vs[i] = v
			rec(i + 1)
		}
	}
	rec(0)
}

func vipWith(cond config.Condition, vs []health.Verdict) (config.VIP, health.Snapshot) {
	v := config.VIP{Address: netip.MustParsePrefix("10.0.0.1/32"), Condition: cond, Rise: 1, Fall: 1}
	snap := health.Snapshot{}
	for i, verdict := range vs {
		key := fmt.Sprintf("/apisix/upstreams/u%d", i)
		v.Upstreams = append(v.Upstreams, health.Upstreams(key)...)
		snap[key] = res(verdict)
	}
	return v, snap
}

func TestEvaluateMissingFromSnapshotIsFailed(t *testing.T) {
	v, snap := vipWith(config.All, []health.Verdict{health.Up})
	v.Upstreams = append(v.Upstreams, health.Upstreams("/apisix/upstreams/absent")...)
	if got := Evaluate(&v, snap, "healthy"); got != Unknown {
		t.Errorf("got %v, want unknown", got)
	}
}

func policy(a config.Action, max int) config.FailurePolicy {
	return config.FailurePolicy{ControlAPIUnreachable: a, MaxFailedPolls: max, NoChecker: "healthy"}
}

// poll is one scripted poll in a sequence: the verdict and the expected state
// after it, written as "+" announced / "-" withdrawn, then the reason.
type poll struct {
	verdict Availability
	want    string
}

func TestStepSequences(t *testing.T) {
	A, U, K := Available, Unavailable, Unknown
	tests := []struct {
		name       string
		rise, fall int
		policy     config.FailurePolicy
		start      State
		polls      []poll
	}{
		{
			name: "rise fall 1 follows each verdict", rise: 1, fall: 1,
			policy: policy(config.Withdraw, 3), start: Initial(false),
			polls: []poll{{A, "+healthy"}, {U, "-unhealthy"}, {U, "-unhealthy"}, {A, "+healthy"}},
		},
		{
			name: "rise 3 needs three in a row", rise: 3, fall: 1,
			policy: policy(config.Withdraw, 3), start: Initial(false),
			polls: []poll{{A, "-rising"}, {A, "-rising"}, {U, "-unhealthy"}, {A, "-rising"}, {A, "-rising"}, {A, "+healthy"}},
		},
		{
			name: "fall 2: an unknown poll neither counts nor breaks the run", rise: 1, fall: 2,
			policy: policy(config.Withdraw, 5), start: Initial(true),
			polls: []poll{{U, "+falling"}, {K, "+unknown"}, {U, "-unhealthy"}},
		},
		{
			name: "fall 2: an available poll breaks the run", rise: 1, fall: 2,
			policy: policy(config.Withdraw, 5), start: Initial(true),
			polls: []poll{{U, "+falling"}, {A, "+healthy"}, {U, "+falling"}, {U, "-unhealthy"}},
		},
		{
			// A flaky control API must not hide a dead backend: every
			// settled poll says unavailable, and each ends the failed run.
			name: "fall 2 behind an API that fails every other poll", rise: 1, fall: 2,
			policy: policy(config.Withdraw, 3), start: Initial(true),
			polls: []poll{{U, "+falling"}, {K, "+unknown"}, {U, "-unhealthy"}, {K, "-unknown"}, {U, "-unhealthy"}},
		},
		{
			name: "rise 2 behind an API that fails every other poll", rise: 2, fall: 1,
			policy: policy(config.Announce, 3), start: Initial(false),
			polls: []poll{{K, "-unknown"}, {A, "-rising"}, {K, "-unknown"}, {A, "+healthy"}},
		},
		{
			// The policy's withdrawal ends a run towards withdrawn: the
			// next unavailable poll agrees, and an available one starts
			// a rise run from scratch.
			name: "policy withdrawal resets a pending fall run", rise: 2, fall: 3,
			policy: policy(config.Withdraw, 2), start: Initial(true),
			polls: []poll{{U, "+falling"}, {K, "+unknown"}, {K, "-policy_withdraw"}, {A, "-rising"}, {U, "-unhealthy"}, {A, "-rising"}, {A, "+healthy"}},
		},
		{
			name: "withdraw after max failed polls", rise: 1, fall: 1,
			policy: policy(config.Withdraw, 3), start: Initial(true),
			polls: []poll{{K, "+unknown"}, {K, "+unknown"}, {K, "-policy_withdraw"}, {K, "-policy_withdraw"}, {A, "+healthy"}},
		},
		{
			name: "announce keeps an announced VIP", rise: 1, fall: 1,
			policy: policy(config.Announce, 2), start: Initial(true),
			polls: []poll{{K, "+unknown"}, {K, "+policy_announce"}, {K, "+policy_announce"}, {U, "-unhealthy"}},
		},
		{
			name: "announce leaves a withdrawn VIP withdrawn", rise: 1, fall: 1,
			policy: policy(config.Announce, 1), start: Initial(false),
			polls: []poll{{K, "-policy_announce"}, {K, "-policy_announce"}, {A, "+healthy"}},
		},
		{
			name: "a settling poll resets the failed count", rise: 1, fall: 1,
			policy: policy(config.Withdraw, 2), start: Initial(true),
			polls: []poll{{K, "+unknown"}, {A, "+healthy"}, {K, "+unknown"}, {A, "+healthy"}, {K, "+unknown"}, {K, "-policy_withdraw"}},
		},
		{
			name: "initial state is kept until a poll settles it", rise: 1, fall: 1,
			policy: policy(config.Withdraw, 3), start: Initial(true),
			polls: []poll{{K, "+unknown"}, {A, "+healthy"}},
		},
		{
			name: "rise counts after a policy withdraw", rise: 2, fall: 1,
			policy: policy(config.Withdraw, 1), start: Initial(true),
			polls: []poll{{K, "-policy_withdraw"}, {A, "-rising"}, {A, "+healthy"}},
		},
		{
			name: "max_failed_polls 1 withdraws at once", rise: 1, fall: 1,
			policy: policy(config.Withdraw, 1), start: Initial(true),
			polls: []poll{{K, "-policy_withdraw"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := config.VIP{Address: netip.MustParsePrefix("10.0.0.1/32"), Rise: tt.rise, Fall: tt.fall}
			st := tt.start
			var got, want []string
			for _, p := range tt.polls {
				st = Step(&v, tt.policy, st, p.verdict)
				got = append(got, show(st))
				want = append(want, p.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("states after each poll (-want +got):\n%s", diff)
			}
		})
	}
}

func show(s State) string {
	sign := "-"
	if s.Announced {
		sign = "+"
	}
	return sign + string(s.Reason)
}

// TestTickReplay replays a scripted series of polls of the seed's three VIPs
// through Tick and checks the announced set after each one.
func TestTickReplay(t *testing.T) {
	cfg := seedConfig()
	const (
		api, auth, admin, prim, resv = "/apisix/upstreams/api", "/apisix/upstreams/auth", "/apisix/upstreams/admin", "/apisix/upstreams/app-primary", "/apisix/upstreams/app-reserve"
	)
	U, D, F := health.Up, health.Down, health.Failed
	polls := []struct {
		name string
		snap map[string]health.Verdict
		want string // announced VIPs, sorted
	}{
		{"all up", map[string]health.Verdict{api: U, auth: U, admin: U, prim: U, resv: U}, "10.0.0.100 10.0.0.101 10.0.0.102"},
		{"admin down, primary down", map[string]health.Verdict{api: U, auth: U, admin: D, prim: D, resv: U}, "10.0.0.100 10.0.0.102"},
		{"both app upstreams down", map[string]health.Verdict{api: U, auth: U, admin: D, prim: D, resv: D}, "10.0.0.100"},
		{"api failing once", map[string]health.Verdict{api: F, auth: U, admin: U, prim: D, resv: D}, "10.0.0.100 10.0.0.101"},
		{"control api down 1", map[string]health.Verdict{api: F, auth: F, admin: F, prim: F, resv: F}, "10.0.0.100 10.0.0.101"},
		{"control api down 2", map[string]health.Verdict{api: F, auth: F, admin: F, prim: F, resv: F}, "10.0.0.101"},
		{"control api down 3", map[string]health.Verdict{api: F, auth: F, admin: F, prim: F, resv: F}, ""},
		{"control api down 4", map[string]health.Verdict{api: F, auth: F, admin: F, prim: F, resv: F}, ""},
		{"back", map[string]health.Verdict{api: U, auth: U, admin: U, prim: D, resv: U}, "10.0.0.100 10.0.0.101 10.0.0.102"},
	}
	states := map[netip.Prefix]State{}
	for i := range cfg.VIPs {
		states[cfg.VIPs[i].Address] = Initial(false)
	}
	for _, p := range polls {
		snap := health.Snapshot{}
		for k, v := range p.snap {
			snap[k] = res(v)
		}
		Tick(cfg, snap, states)
		if got := announced(cfg, states); got != p.want {
			t.Fatalf("after %q: announced %q, want %q", p.name, got, p.want)
		}
	}
}

// TestTickOrderIndependent replays random polls in order and checks that the
// VIPs are independent: each VIP's state after the replay equals replaying
// its own verdicts alone through Step, whatever the order of VIPs in config.
func TestTickOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cfg := seedConfig()
	cfg.VIPs[0].Rise, cfg.VIPs[1].Fall = 2, 3
	keys := []string{"/apisix/upstreams/api", "/apisix/upstreams/auth", "/apisix/upstreams/admin", "/apisix/upstreams/app-primary", "/apisix/upstreams/app-reserve"}
	var snaps []health.Snapshot
	for i := 0; i < 200; i++ {
		s := health.Snapshot{}
		for _, k := range keys {
			s[k] = res(allVerdicts[rng.Intn(len(allVerdicts))])
		}
		snaps = append(snaps, s)
	}
	run := func(cfg *config.Config) map[netip.Prefix]State {
		st := map[netip.Prefix]State{}
		for _, s := range snaps {
			Tick(cfg, s, st)
		}
		return st
	}
	want := run(cfg)
	shuffled := *cfg
	shuffled.VIPs = append([]config.VIP(nil), cfg.VIPs...)
	rng.Shuffle(len(shuffled.VIPs), func(i, j int) { shuffled.VIPs[i], shuffled.VIPs[j] = shuffled.VIPs[j], shuffled.VIPs[i] })
	if diff := cmp.Diff(want, run(&shuffled)); diff != "" {
		t.Errorf("shuffled config order changed the result (-want +got):\n%s", diff)
	}
	for i := range cfg.VIPs {
		v := &cfg.VIPs[i]
		var st State
		for _, s := range snaps {
			st = Step(v, cfg.FailurePolicy, st, Evaluate(v, s, cfg.FailurePolicy.NoChecker))
		}
		if diff := cmp.Diff(st, want[v.Address]); diff != "" {
			t.Errorf("%s alone differs (-alone +tick):\n%s", v.Address, diff)
		}
	}
}

func TestTickReportsChanges(t *testing.T) {
	cfg := seedConfig()
	states := map[netip.Prefix]State{}
	for i := range cfg.VIPs {
		states[cfg.VIPs[i].Address] = Initial(true)
	}
	snap := health.Snapshot{
		"/apisix/upstreams/api": res(health.Up), "/apisix/upstreams/auth": res(health.Up),
		"/apisix/upstreams/admin": res(health.Down), "/apisix/upstreams/app-primary": res(health.Up),
		"/apisix/upstreams/app-reserve": res(health.Down),
	}
	changes := Tick(cfg, snap, states)
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s->%s", c.VIP.Addr(), show(c.From), show(c.To)))
	}
	want := []string{
		"10.0.0.100 +initial->+healthy",
		"10.0.0.101 +initial->-unhealthy",
		"10.0.0.102 +initial->+healthy",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if changes := Tick(cfg, snap, states); len(changes) != 0 {
		t.Errorf("same poll again reported %d changes, want 0", len(changes))
	}
}

func announced(cfg *config.Config, states map[netip.Prefix]State) string {
	var out []string
	for i := range cfg.VIPs {
		if states[cfg.VIPs[i].Address].Announced {
			out = append(out, cfg.VIPs[i].Address.Addr().String())
		}
	}
	return strings.Join(out, " ")
}

// seedConfig is the design note's example, built by hand so that this
// package's tests do not depend on the loader.
func seedConfig() *config.Config {
	vip := func(addr string, cond config.Condition, ups ...string) config.VIP {
		return config.VIP{Address: netip.MustParsePrefix(addr + "/32"), Upstreams: health.Upstreams(ups...), Condition: cond, Rise: 1, Fall: 1}
	}
	return &config.Config{
		FailurePolicy: policy(config.Withdraw, 3),
		VIPs: []config.VIP{
			vip("10.0.0.100", config.All, "/apisix/upstreams/api"),
			vip("10.0.0.101", config.All, "/apisix/upstreams/auth", "/apisix/upstreams/admin"),
			vip("10.0.0.102", config.Any, "/apisix/upstreams/app-primary", "/apisix/upstreams/app-reserve"),
		},
	}
}
