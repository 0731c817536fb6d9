package daemon

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// stepHealth is a Planner whose answers the test sets result by result
// (node counts and moving nodes, as APISIX's checker steps them); it
// records the keys and options of every poll and charges each resource
// read a fixed cost.
type stepHealth struct {
	res   map[string]health.Result
	calls []stepCall
	each  time.Duration // cost of one request
}

type stepCall struct {
	keys []string
	opts health.PollOptions
}

func (s *stepHealth) Poll(ctx context.Context, ups []health.Upstream) health.Snapshot {
	snap, _ := s.PollPlan(ctx, s.Plan(ups), health.PollOptions{})
	return snap
}

// Plan plans as the APISIX client does: keys under two prefixes read one
// resource.
func (s *stepHealth) Plan(ups []health.Upstream) health.Plan { return apisix.NewPlan(ups) }

func (s *stepHealth) PollPlan(_ context.Context, plan health.Plan, opts health.PollOptions) (health.Snapshot, health.PollCost) {
	var c stepCall
	c.opts = opts
	snap := health.Snapshot{}
	for _, u := range plan.Upstreams() {
		c.keys = append(c.keys, u.Key)
		r, ok := s.res[u.Key]
		if !ok {
			r = health.Result{Verdict: health.Failed, Err: errors.New("connection refused")}
		}
		snap[u.Key] = r
	}
	s.calls = append(s.calls, c)
	n := plan.Resources()
	return snap, health.PollCost{Busy: time.Duration(n) * s.each, Requests: n, One: time.Duration(n) * s.each, OneRequests: n}
}

func up(healthy, total, moving int) health.Result {
	v := health.Up
	if healthy == 0 {
		v = health.Down
	}
	return health.Result{Verdict: v, Healthy: int32(healthy), Total: int32(total), Moving: int32(moving)}
}

// lastKeys is the keys of the last poll, sorted.
func (s *stepHealth) lastKeys() []string {
	k := slices.Clone(s.calls[len(s.calls)-1].keys)
	slices.Sort(k)
	return k
}

type fastRig struct {
	d     *Daemon
	h     *stepHealth
	link  *fakeLink
	clock *clock
	logs  *logtest.Hook
	made  []time.Duration // intervals of the tickers the daemon made
}

func newFastRig(t *testing.T, cfg *config.Config, link *fakeLink) *fastRig {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &fastRig{h: &stepHealth{res: map[string]health.Result{}}, link: link, clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	r.d = New(cfg, Deps{Health: r.h, Announcer: link, Log: log, Now: r.clock.now})
	r.d.env.newTicker = func(every time.Duration) ticker {
		r.made = append(r.made, every)
		return newFakeTicker()
	}
	return r
}

func fastSeed() *config.Config {
	c := seed(config.Withdraw)
	c.FastPollInterval = 100 * time.Millisecond
	return c
}

// A node that APISIX shows mostly_healthy makes its upstream, and it
// alone, polled at fast_poll_interval; the step to unhealthy withdraws the
// VIP at the next fast poll, not at the next tick; the upstream settled,
// fast polls stop. VIPs that do not use it are neither polled nor stepped.
func TestFastPollsFollowMovingUpstream(t *testing.T) {
	r := newFastRig(t, fastSeed(), newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
	if r.d.polls.fast.n != 0 || r.d.polls.fast.t != nil {
		t.Fatalf("nothing moves, yet %d upstreams are fast-polled", r.d.polls.fast.n)
	}
	r.h.res[api] = up(2, 2, 1) // one node mostly_healthy
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
	if r.d.polls.fast.n != 1 || r.d.polls.fast.t == nil || r.made[len(r.made)-1] != 100*time.Millisecond {
		t.Fatalf("after mostly_healthy: %d moving, ticker %v (made %v); want 1, a 100ms ticker", r.d.polls.fast.n, r.d.polls.fast.t, r.made)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	r.h.res[api] = up(0, 2, 0) // both unhealthy
	polls := len(r.h.calls)
	r.clock.advance(100 * time.Millisecond)
	r.d.fastTick(context.Background())
	if len(r.h.calls) != polls+1 || !slices.Equal(r.h.lastKeys(), []string{api}) || !r.h.calls[polls].opts.NoList {
		t.Fatalf("fast poll read %v (%+v), want %s alone, without the list", r.h.lastKeys(), r.h.calls[polls].opts, api)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
	if e := r.logs.LastEntry(); e == nil || e.Data["vip"] != "10.0.0.100/32" || e.Data["action"] != "withdraw" || e.Data["poll"] != "fast" {
		t.Errorf("the withdraw's log line %+v: want vip 10.0.0.100/32, action withdraw, poll fast", e)
	}
	if st := r.d.Status(); st.ControlAPI.Polling.FastPolls != 1 || st.ControlAPI.Polls != 2 {
		t.Errorf("status: %d fast polls, %d polls; want 1, 2 (a fast poll is not a regular poll)", st.ControlAPI.Polling.FastPolls, st.ControlAPI.Polls)
	}

	r.clock.advance(100 * time.Millisecond)
	r.d.fastTick(context.Background()) // the same reading: settled
	if r.d.polls.fast.n != 0 || r.d.polls.fast.t != nil {
		t.Errorf("settled, yet %d moving (ticker %v)", r.d.polls.fast.n, r.d.polls.fast.t)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
}

// A fast poll counts for fall as a poll of the VIPs it reads: with fall 2
// the withdraw comes at the second unhealthy reading, fast or not.
func TestFastPollsCountForFall(t *testing.T) {
	cfg := fastSeed()
	cfg.VIPs[0].Fall = 2
	r := newFastRig(t, cfg, newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.d.tick(context.Background())
	r.h.res[api] = up(1, 2, 1) // one unhealthy, one mostly_healthy
	r.d.tick(context.Background())
	r.h.res[api] = up(0, 2, 0)
	r.d.fastTick(context.Background())
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102") // one unavailable reading
	if r.d.polls.fast.n != 1 {
		t.Fatalf("the healthy count changed: still moving, got %d", r.d.polls.fast.n)
	}
	r.d.fastTick(context.Background())
	r.expect(t, "10.0.0.101 10.0.0.102")
}

// A fast poll that cannot read its upstream ends the fast polls and
// counts nothing: max_failed_polls counts regular polls, so a restart of
// APISIX during fast polls is judged at the regular interval.
func TestFastPollFailureIsNotAFailedPoll(t *testing.T) {
	r := newFastRig(t, fastSeed(), newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.d.tick(context.Background())
	r.h.res[api] = up(2, 2, 1)
	r.d.tick(context.Background())
	delete(r.h.res, api) // refused
	for range 5 {
		r.d.fastTick(context.Background())
	}
	if got := r.d.vs.state[0].FailedPolls; got != 0 {
		t.Errorf("failed fast polls counted %d failed polls, want 0", got)
	}
	if r.d.polls.fast.n != 0 || r.d.polls.fast.t != nil {
		t.Errorf("an unreadable upstream is still fast-polled")
	}
	if n := len(r.h.calls); n != 3 {
		t.Errorf("%d polls, want 3: two ticks and one fast poll", n)
	}
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
}

// Two spellings of one moving resource are read by one fast poll, both
// keys answered, and the resource counted once.
func TestFastPollBothSpellings(t *testing.T) {
	cfg := fastSeed()
	cfg.VIPs = append(cfg.VIPs, vipCfg("10.0.0.103/32", config.All, "/upstreams/api"))
	r := newFastRig(t, cfg, newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve, "/upstreams/api"} {
		r.h.res[k] = up(2, 2, 0)
	}
	r.d.tick(context.Background())
	r.h.res[api], r.h.res["/upstreams/api"] = up(2, 2, 1), up(2, 2, 1)
	r.d.tick(context.Background())
	if r.d.polls.fast.n != 1 {
		t.Fatalf("%d resources moving, want 1", r.d.polls.fast.n)
	}
	r.h.res[api], r.h.res["/upstreams/api"] = up(0, 2, 0), up(0, 2, 0)
	r.d.fastTick(context.Background())
	if got := r.h.lastKeys(); !slices.Equal(got, []string{api, "/upstreams/api"}) {
		t.Errorf("fast poll read %v, want both spellings", got)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.d.Status().ControlAPI.Upstreams; n != 5 {
		t.Errorf("status counts %d upstreams, want 5 distinct", n)
	}
}

// With fast_poll_interval 0 nothing is fast-polled, however much moves.
func TestFastPollsOff(t *testing.T) {
	cfg := fastSeed()
	cfg.FastPollInterval = 0
	r := newFastRig(t, cfg, newFakeLink())
	for _, k := range []string{api, auth, admin, primary, reserve} {
		r.h.res[k] = up(2, 2, 1)
	}
	r.d.tick(context.Background())
	if r.d.polls.fast.t != nil {
		t.Errorf("a fast ticker runs with fast polls off")
	}
}

func (r *fastRig) expect(t *testing.T, want string) {
	t.Helper()
	if got := r.link.text(); got != want {
		t.Fatalf("interface holds %q, want %q", got, want)
	}
}
