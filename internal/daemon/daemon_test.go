package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/vip"
)

const (
	api     = "/apisix/upstreams/api"
	auth    = "/apisix/upstreams/auth"
	admin   = "/apisix/upstreams/admin"
	primary = "/apisix/upstreams/app-primary"
	reserve = "/apisix/upstreams/app-reserve"
)

func vipCfg(addr string, cond config.Condition, ups ...string) config.VIP {
	return config.VIP{Address: netip.MustParsePrefix(addr), Upstreams: health.Upstreams(ups...), Condition: cond, Rise: 1, Fall: 1}
}

// seed is the design note's example configuration.
func seed(policy config.Action) *config.Config {
	return &config.Config{
		PollInterval: 3 * time.Second, Timeout: 5 * time.Second, Interface: "rhi0",
		ControlURL:    "http://127.0.0.1:9090",
		FailurePolicy: config.FailurePolicy{ControlAPIUnreachable: policy, MaxFailedPolls: 3, NoChecker: "healthy"},
		Rise:          1, Fall: 1, OnShutdown: "keep",
		VIPs: []config.VIP{
			vipCfg("10.0.0.100/32", config.All, api),
			vipCfg("10.0.0.101/32", config.All, auth, admin),
			vipCfg("10.0.0.102/32", config.Any, primary, reserve),
		},
	}
}

type rig struct {
	d      *Daemon
	health *fakeHealth
	link   *fakeLink
	clock  *clock
	logs   *logtest.Hook
	job    confirmJob // the last confirmation job taken, as the confirmer holds it
}

func newRig(t *testing.T, cfg *config.Config, link *fakeLink) *rig {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &rig{health: newFakeHealth(), link: link, clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	r.d = New(cfg, Deps{Health: r.health, Announcer: link, Log: log, Now: r.clock.now})
	return r
}

func (r *rig) tick(t *testing.T) {
	t.Helper()
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
}

func (r *rig) expect(t *testing.T, want string) {
	t.Helper()
	if got := r.link.text(); got != want {
		t.Fatalf("interface holds %q, want %q", got, want)
	}
}

// count returns how many log lines at level or above contain msg.
func (r *rig) count(level logrus.Level, msg string) int {
	n := 0
	for _, e := range r.logs.AllEntries() {
		if e.Level <= level && strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// countFor returns how many log lines about upstream contain msg.
func (r *rig) countFor(upstream, msg string) int {
	n := 0
	for _, e := range r.logs.AllEntries() {
		if e.Data["upstream"] == upstream && strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

func TestAppliesVerdictsWithinOnePoll(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	r.health.set(health.Down, admin, primary)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.102")

	r.health.set(health.Down, reserve)
	r.health.set(health.NoChecker, admin)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")

	before := r.link.writeCount()
	r.tick(t)
	if w := r.link.writeCount() - before; w != 0 {
		t.Errorf("same health again cost %d netlink writes, want 0", w)
	}
}

func TestStartupKeepsWhatTheInterfaceHolds(t *testing.T) {
	for _, policy := range []config.Action{config.Withdraw, config.Announce} {
		t.Run(string(policy), func(t *testing.T) {
			r := newRig(t, seed(policy), newFakeLink("10.0.0.100/32", "10.0.0.102/32"))
			// The control API is down from the start.
			for i := 1; i < 3; i++ {
				r.tick(t)
				r.expect(t, "10.0.0.100 10.0.0.102")
			}
			if r.link.writeCount() != 0 {
				t.Fatalf("start-up wrote to the interface before any poll settled a VIP")
			}
			r.tick(t) // third failed poll: the policy fires
			want := map[config.Action]string{config.Withdraw: "", config.Announce: "10.0.0.100 10.0.0.102"}[policy]
			r.expect(t, want)
			r.tick(t)
			r.expect(t, want)
		})
	}
}

func TestOneBrokenUpstreamOnlyHoldsItsVIPs(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.health.set(health.Failed, admin)
	r.health.set(health.Down, api)
	for i := 0; i < 2; i++ {
		r.tick(t)
		r.expect(t, "10.0.0.101 10.0.0.102")
	}
	r.tick(t)
	r.expect(t, "10.0.0.102")
	r.health.set(health.Up, admin)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
}

func TestNotFoundCountsAsFailed(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink("10.0.0.100/32"))
	r.health.set(health.NotFound, api)
	r.tick(t)
	r.tick(t)
	r.expect(t, "10.0.0.100")
	r.tick(t)
	r.expect(t, "")
	if n := r.countFor(api, "cannot be read"); n != 1 {
		t.Errorf("not-found upstream logged %d times over 3 polls, want once", n)
	}
}

func TestRepairsExternalChanges(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink("192.0.2.1/32"))
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102 192.0.2.1")
	r.link.do(func(l *fakeLink) { delete(l.addrs, netip.MustParsePrefix("10.0.0.101/32")) })
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102 192.0.2.1")
	if got := r.d.Status().Interface.Foreign; len(got) != 1 || got[0] != "192.0.2.1/32" {
		t.Errorf("foreign = %v, want [192.0.2.1/32]", got)
	}
}

// TestStartupReadErrorTouchesNothing: an interface that cannot be read at
// start-up may hold every VIP; rhi must not take that for "none" and delete
// them on its first tick (a restart must not flap routes).
func TestStartupReadErrorTouchesNothing(t *testing.T) {
	for _, policy := range []config.Action{config.Withdraw, config.Announce} {
		t.Run(string(policy), func(t *testing.T) {
			link := newFakeLink("10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
			timeout := fmt.Errorf("list addresses on %q: %w", "rhi0", syscall.EAGAIN)
			link.observeErrs = []error{timeout, timeout}
			cfg := seed(policy)
			cfg.Rise = 3
			for i := range cfg.VIPs {
				cfg.VIPs[i].Rise = 3
			}
			r := newRig(t, cfg, link)
			r.health.set(health.Up, api, auth, admin, primary, reserve)
			r.tick(t)
			r.tick(t)
			r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
			if n := r.link.writeCount(); n != 0 {
				t.Fatalf("%d interface writes while the interface could not be read", n)
			}
			if n := r.count(logrus.ErrorLevel, "cannot set VIPs"); n != 1 {
				t.Errorf("read error logged %d times at error, want once", n)
			}
			r.tick(t) // the read works: state comes from the interface
			r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
			if n := r.link.writeCount(); n != 0 {
				t.Fatalf("%d interface writes after start-up, want none", n)
			}
			if st := r.d.Status(); len(st.VIPs) != 3 || !st.VIPs[0].Desired {
				t.Fatalf("status after start-up: %+v", st.VIPs)
			}
		})
	}
}

func TestMissingInterfaceIsRetried(t *testing.T) {
	link := newFakeLink()
	link.exists = false
	r := newRig(t, seed(config.Withdraw), link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.tick(t)
	st := r.d.Status()
	if st.Interface.Exists || st.Interface.Error == "" {
		t.Fatalf("status interface = %+v, want missing with an error", st.Interface)
	}
	if n := r.count(logrus.ErrorLevel, "cannot set VIPs"); n != 1 {
		t.Errorf("missing interface logged %d times, want once", n)
	}
	link.do(func(l *fakeLink) { l.exists = true })
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if st := r.d.Status(); st.Interface.Error != "" || !st.VIPs[0].OnInterface {
		t.Errorf("after the interface came back: %+v", st.Interface)
	}
}

func TestFailedAddIsRetried(t *testing.T) {
	link := newFakeLink()
	link.failAdd[netip.MustParsePrefix("10.0.0.101/32")] = true
	r := newRig(t, seed(config.Withdraw), link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.102")
	link.do(func(l *fakeLink) { clear(l.failAdd) })
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
}

func TestReload(t *testing.T) {
	cfg := seed(config.Withdraw)
	r := newRig(t, cfg, newFakeLink("10.0.0.103/32"))
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102 10.0.0.103")

	next := seed(config.Withdraw)
	// 10.0.0.100 changes its condition and upstreams: not touched until a
	// poll re-decides it. 10.0.0.102 is dropped. 10.0.0.103 is new and
	// already on the interface: it starts as announced.
	next.VIPs[0] = vipCfg("10.0.0.100/32", config.Any, api, "/apisix/upstreams/new")
	next.VIPs[2] = vipCfg("10.0.0.103/32", config.All, "/apisix/upstreams/new")
	r.d.applyReload(next)
	if st := r.d.vs.get(netip.MustParsePrefix("10.0.0.103/32")); !st.Announced || st.Reason != decide.ReasonInitial {
		t.Errorf("new VIP starts %+v, want announced from the interface", st)
	}
	before := r.link.writeCount()
	r.tick(t) // /apisix/upstreams/new does not answer: 10.0.0.103 unsettled, kept
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.103")
	if w := r.link.writeCount() - before; w != 1 {
		t.Errorf("reload tick made %d writes, want 1 (the dropped VIP's delete)", w)
	}
	r.health.set(health.Down, "/apisix/upstreams/new")
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
}

// TestReloadDroppedVIPStaysOwned: a dropped VIP whose delete fails stays
// rhi's, is retried, and is listed as being withdrawn until it is gone.
func TestReloadDroppedVIPStaysOwned(t *testing.T) {
	link := newFakeLink()
	r := newRig(t, seed(config.Withdraw), link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	dropped := netip.MustParsePrefix("10.0.0.102/32")
	link.failDel[dropped] = true
	next := seed(config.Withdraw)
	next.VIPs = next.VIPs[:2]
	r.d.applyReload(next)
	r.tick(t)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if got := r.d.Status().Interface.Withdrawing; len(got) != 1 || got[0] != dropped.String() {
		t.Fatalf("withdrawing = %v, want [%s]", got, dropped)
	}
	link.do(func(l *fakeLink) { delete(l.failDel, dropped) })
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
	if got := r.d.Status().Interface.Withdrawing; len(got) != 0 {
		t.Fatalf("withdrawing = %v after the delete worked", got)
	}
}

func TestShutdown(t *testing.T) {
	for _, mode := range []config.ShutdownAction{config.ShutdownKeep, config.ShutdownWithdraw} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := seed(config.Withdraw)
			cfg.OnShutdown = mode
			r := newRig(t, cfg, newFakeLink("192.0.2.1/32"))
			r.health.set(health.Up, api, auth, admin, primary, reserve)
			r.tick(t)
			if err := r.d.shutdown(); err != nil {
				t.Fatal(err)
			}
			want := map[config.ShutdownAction]string{"keep": "10.0.0.100 10.0.0.101 10.0.0.102 192.0.2.1", "withdraw": "192.0.2.1"}[mode]
			r.expect(t, want)
		})
	}
}

// TestShutdownWithdrawWithoutInterface: nothing is announced from a
// missing interface, so a withdrawing shutdown has nothing to fail at.
func TestShutdownWithdrawWithoutInterface(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.OnShutdown = "withdraw"
	link := newFakeLink()
	r := newRig(t, cfg, link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	link.do(func(l *fakeLink) { l.exists = false })
	if err := r.d.shutdown(); err != nil {
		t.Fatalf("shutdown = %v, want nil", err)
	}
}

// TestPolicyOnAWithdrawnVIPSaysSo: the policy firing on a VIP that is
// withdrawn already is logged as what it is, not as a vague change.
func TestPolicyOnAWithdrawnVIPSaysSo(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	for range 3 { // the control API is down from the start
		r.tick(t)
	}
	if n := r.count(logrus.ErrorLevel, "withdrawn already"); n != 3 {
		t.Errorf("%d policy lines for the 3 withdrawn VIPs, want 3", n)
	}
	if n := r.count(logrus.InfoLevel, "vip state changed"); n != 0 {
		t.Errorf("%d vague 'vip state changed' lines", n)
	}
}

func TestUpstreamLogsOncePerChange(t *testing.T) {
	r := newRig(t, seed(config.Announce), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.health.down()
	for i := 0; i < 10; i++ {
		r.tick(t)
	}
	if n := r.count(logrus.WarnLevel, "upstream cannot be read"); n != 5 {
		t.Errorf("10 failed polls of 5 upstreams logged %d warnings, want 5 (one per upstream)", n)
	}
	if n := r.count(logrus.ErrorLevel, "failure policy keeps"); n != 3 {
		t.Errorf("policy logged %d times, want once per VIP (3)", n)
	}
	if st := r.d.Status(); st.ControlAPI.ConsecutiveFailedPolls != 10 || st.ControlAPI.Unreadable != 5 ||
		st.ControlAPI.Polls != 11 || st.ControlAPI.FailedPolls != 10 || st.VIPs[0].Transitions != 1 {
		t.Errorf("control api status = %+v", st.ControlAPI)
	}
}

func TestStatus(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	if r.d.Status().Ready {
		t.Fatal("ready before the first tick")
	}
	r.health.set(health.Up, api, auth, admin, primary)
	r.health.set(health.Down, reserve)
	r.tick(t)
	st := r.d.Status()
	if !st.Ready || len(st.VIPs) != 3 {
		t.Fatalf("status = %+v", st)
	}
	v := st.VIPs[2]
	if v.Address != "10.0.0.102/32" || !v.Desired || !v.OnInterface || v.Verdict != decide.Available || v.Condition != "any" {
		t.Errorf("vip status = %+v", v)
	}
	if v.Upstreams[1].Key != reserve || v.Upstreams[1].Verdict != "down" {
		t.Errorf("upstream status = %+v", v.Upstreams[1])
	}
	if !v.Since.Equal(r.clock.now()) {
		t.Errorf("since = %v, want the tick's time %v", v.Since, r.clock.now())
	}
	r.link.do(func(l *fakeLink) {
		l.addrs[netip.MustParsePrefix("192.0.2.7/32")] = true
		l.peers = []vip.Peer{{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.9.0.2/32")}}
	})
	r.tick(t)
	if got, want := r.d.Status().Interface.Foreign, []string{"192.0.2.7/32", "10.9.0.1 peer 10.9.0.2/32"}; !slices.Equal(got, want) {
		t.Errorf("foreign = %q, want %q", got, want)
	}
}

// TestRunReloadPollsAtOnce drives the real loop: a reload triggers a poll
// without waiting for the (hour-long) interval.
func TestRunReloadPollsAtOnce(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.PollInterval = time.Hour
	r := newRig(t, cfg, newFakeLink())
	r.health.polled = make(chan struct{})
	r.link.sets = make(chan struct{}, 16)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	ready := make(chan struct{})
	r.d.env.ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.d.Run(ctx) }()
	<-r.health.polled
	<-ready
	next := seed(config.Withdraw)
	next.PollInterval = time.Hour
	next.VIPs = next.VIPs[:1]
	r.d.Reload(next)
	<-r.health.polled
	// The reload's tick goes on to apply after its poll; wait for it.
	for r.link.text() != "10.0.0.100" {
		select {
		case <-r.link.sets:
		case <-time.After(10 * time.Second):
			t.Fatalf("no Set after the reload's poll; the interface holds %q", r.link.text())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v, want nil on cancel", err)
	}
	r.expect(t, "10.0.0.100")
}

// TestHintReappliesWithoutPolling: a netlink hint puts the interface right
// at once, from the last decision, without asking APISIX again.
func TestHintReappliesWithoutPolling(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.d.reapply(context.Background()) // before the first tick: nothing decided yet
	r.expect(t, "")
	r.tick(t)
	polls := r.health.polls
	r.link.do(func(l *fakeLink) { delete(l.addrs, netip.MustParsePrefix("10.0.0.100/32")) })
	r.d.Hint()
	r.d.Hint() // hints that arrive together count once
	if n := len(r.d.in.hints); n != 1 {
		t.Fatalf("%d hints queued, want 1", n)
	}
	<-r.d.in.hints
	r.d.reapply(context.Background())
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if r.health.polls != polls {
		t.Errorf("a hint polled APISIX")
	}
}

// TestReloadRebuildsHealthSource: a reload that changes how the control API
// is read gets a new client; one that does not keeps the old one.
func TestReloadRebuildsHealthSource(t *testing.T) {
	cfg := seed(config.Withdraw)
	r := newRig(t, cfg, newFakeLink())
	built := 0
	r.d.env.newHS = func(*config.Config) HealthSource { built++; return r.health }
	r.tick(t)
	for _, edit := range []func(c *config.Config){
		func(c *config.Config) {},
		func(c *config.Config) { c.PollMode = "list" },
		func(c *config.Config) { c.PollMode = "list"; c.Timeout = time.Second },
		func(c *config.Config) {
			c.PollMode = "list"
			c.Timeout = time.Second
			c.ControlURL = "http://127.0.0.1:9191"
		},
	} {
		next := seed(config.Withdraw)
		edit(next)
		r.d.applyReload(next)
	}
	if built != 3 {
		t.Errorf("health source rebuilt %d times, want 3 (mode, timeout, url)", built)
	}
}

// TestStatusWhileTicking reads the status while the loop publishes as fast
// as it can: the race detector checks that the reused views are never
// written while read.
func TestStatusWhileTicking(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.PollInterval = time.Millisecond
	r := newRig(t, cfg, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.health.polled = make(chan struct{}, 1000)
	busyPolls(r.d, cfg.PollInterval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.d.Run(ctx) }()
	seen := 0
	for polls := 0; polls < 200; polls++ {
		<-r.health.polled
		st := r.d.Status()
		if st.Ready && len(st.VIPs) != 3 {
			t.Fatalf("torn status: %d VIPs", len(st.VIPs))
		}
		if st.Ready {
			seen++
		}
		if polls%2 == 0 {
			r.health.set(health.Down, admin)
		} else {
			r.health.set(health.Up, admin)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Error("never saw a ready status")
	}
}

// gatedHealth is a control API whose every poll tells when it starts and
// answers only when the test lets it.
type gatedHealth struct {
	starts  chan struct{}
	release chan struct{}
}

func (h gatedHealth) Poll(ctx context.Context, ups []health.Upstream) health.Snapshot {
	h.starts <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	snap := health.Snapshot{}
	for _, u := range ups {
		snap[u.Key] = health.Result{Verdict: health.Up, Healthy: 1, Total: 1}
	}
	return snap
}

// TestLateTicksAreSkipped: a poll that runs past the next tick makes the
// loop skip that tick, so a slow control API is polled on the
// interval's grid, not back to back. The poll ticker is a fake the test
// fires: a tick that fires while a poll runs waits in the ticker's channel,
// as a time.Ticker keeps it; the loop must drop it, not start the next poll
// from it the moment the slow one ends.
func TestLateTicksAreSkipped(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.PollInterval, cfg.Timeout = 7*time.Second, time.Minute
	h := gatedHealth{starts: make(chan struct{}), release: make(chan struct{})}
	link := newFakeLink()
	link.sets = make(chan struct{}, 16)
	d := New(cfg, Deps{Health: h, Announcer: link})
	polls := make(chan *fakeTicker, 1)
	d.env.newTicker = func(every time.Duration) ticker {
		ft := newFakeTicker()
		if every == cfg.PollInterval {
			polls <- ft
		}
		return ft
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	<-h.starts // the first poll runs before the ticker exists
	h.release <- struct{}{}
	<-link.sets
	pt := <-polls

	pt.fire()
	<-h.starts
	pt.fire() // the interval passes while the poll runs
	h.release <- struct{}{}
	<-link.sets
	// A hint runs after the loop is done with that tick: by the time its
	// Set runs, the late tick must be gone, and no poll started from it.
	d.Hint()
	select {
	case <-h.starts:
		t.Fatal("a tick that fired during a poll started the next poll as soon as it ended")
	case <-link.sets:
	}
	if n := len(pt.c); n != 0 {
		t.Fatalf("the tick that fired during a poll is still queued after it (%d ticks waiting)", n)
	}
	// The next tick on the grid polls as usual.
	pt.fire()
	<-h.starts
	h.release <- struct{}{}
	<-link.sets
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRunWithConfirmer turns the whole loop with the confirmer's goroutine,
// while health flips, status is read, hints and reloads arrive: a target
// for -race and goleak, and a check that the confirmer keeps up.
func TestRunWithConfirmer(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.PollInterval = time.Millisecond
	cfg.OnShutdown = "withdraw"
	link := newFakeLink()
	b := newFakeBird(link)
	hs := newFakeHealth()
	hs.set(health.Up, api, auth, admin, primary, reserve)
	hs.polled = make(chan struct{}, 1000)
	d := New(cfg, Deps{Health: hs, Announcer: link, Confirmer: b})
	busyPolls(d, cfg.PollInterval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	for polls := 0; polls < 300; polls++ {
		<-hs.polled
		if st := d.Status(); st.Ready && len(st.VIPs) != 3 && len(st.VIPs) != 2 {
			t.Fatalf("torn status: %d VIPs", len(st.VIPs))
		}
		switch polls % 4 {
		case 0:
			hs.set(health.Down, admin)
		case 1:
			hs.set(health.Up, admin)
			d.Hint()
		case 2:
			next := seed(config.Withdraw)
			next.PollInterval, next.OnShutdown = time.Millisecond, "withdraw"
			if polls%8 == 2 {
				next.VIPs = next.VIPs[:2]
			}
			d.Reload(next)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := link.text(); got != "" {
		t.Errorf("after a withdrawing shutdown the interface holds %q", got)
	}
	b.mu.Lock()
	checks := b.checks
	b.mu.Unlock()
	if checks == 0 {
		t.Error("the confirmer never checked")
	}
}
