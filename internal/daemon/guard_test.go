package daemon

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/place"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

var (
	v100 = netip.MustParsePrefix("10.0.0.100/32")
	v101 = netip.MustParsePrefix("10.0.0.101/32")
	v102 = netip.MustParsePrefix("10.0.0.102/32")
)

// fo1 is the guard as the lab runs it: one other site, hold 2 s.
var fo1 = config.FailOpen{MinOtherSites: 1, Hold: 2 * time.Second}

// fakeViewer answers as the test says: per VIP the site ids of the other
// sites serving it (nobody unless set), VIPs it cannot tell, or an error
// for the whole round. It records the VIPs it was asked about.
type fakeViewer struct {
	mu      sync.Mutex
	serving map[netip.Prefix][]uint32
	unknown map[netip.Prefix]error
	err     error
	asked   chan []netip.Prefix // receives every question, if not nil
}

func newFakeViewer() *fakeViewer {
	return &fakeViewer{serving: map[netip.Prefix][]uint32{}, unknown: map[netip.Prefix]error{}}
}

func (f *fakeViewer) set(p netip.Prefix, sites ...uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serving[p] = sites
}

func (f *fakeViewer) View(_ context.Context, vips []netip.Prefix) guard.View {
	f.mu.Lock()
	v := guard.View{Err: f.err, Serving: map[netip.Prefix][]uint32{}, Unknown: maps.Clone(f.unknown)}
	for _, p := range vips {
		if _, bad := f.unknown[p]; !bad {
			v.Serving[p] = f.serving[p]
		}
	}
	ch := f.asked
	f.mu.Unlock()
	if ch != nil {
		ch <- vips
	}
	return v
}

// watchedLink is a fakeLink that reports every Set to the rig, which
// checks after each write that v100 is still on some interface.
type watchedLink struct {
	*fakeLink
	after func()
}

func (w watchedLink) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	st, err := w.fakeLink.Set(ctx, want)
	w.after()
	return st, err
}

// ladderRig runs the seed's three VIPs over rhi0, rhi1 and rhi2 with the
// guard on, a fake clock and a fake view of BIRD.
type ladderRig struct {
	d            *Daemon
	health       *fakeHealth
	main, deg    *fakeLink
	lr           *fakeLink
	view         *fakeViewer
	clock        *clock
	logs         *logtest.Hook
	watch        bool // count writes that leave v100 on no interface
	gaps         int
	onMainFailed int // writes that added v100 to rhi0 while its health failed
	failing      bool
	wasOnMain    bool
}

func newLadderRig(t *testing.T, cfg *config.Config, main, deg, lr *fakeLink) *ladderRig {
	t.Helper()
	if cfg.DrainFile == "" {
		cfg.DrainFile = filepath.Join(t.TempDir(), "drain")
	}
	cfg.Degraded.Interface, cfg.LastResort.Interface = "rhi1", "rhi2"
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &ladderRig{health: newFakeHealth(), main: main, deg: deg, lr: lr, view: newFakeViewer(), clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	after := func() {
		m, d, l := r.main.has(v100), r.deg.has(v100), r.lr.has(v100)
		if r.watch && !m && !d && !l {
			r.gaps++
		}
		if r.failing && m && !r.wasOnMain {
			r.onMainFailed++
		}
		r.wasOnMain = m
	}
	r.d = New(cfg, Deps{
		Health: r.health, Log: log, Now: r.clock.now, Guard: r.view,
		Announcer: watchedLink{main, after}, Degraded: watchedLink{deg, after}, LastResort: watchedLink{lr, after},
	})
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	return r
}

func ladderSeed() *config.Config {
	cfg := seed(config.Withdraw)
	cfg.FailOpen = fo1
	return cfg
}

func (l *fakeLink) has(p netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrs[p]
}

// tick is a poll, 3 s after the last event.
func (r *ladderRig) tick(t *testing.T) {
	t.Helper()
	r.clock.advance(3 * time.Second)
	r.d.tick(context.Background())
}

// answer is a round of the guard, 1 s after the last event: the viewer
// answers and the loop takes the answer.
func (r *ladderRig) answer() {
	r.clock.advance(time.Second)
	v := r.view.View(context.Background(), []netip.Prefix{v100, v101, v102})
	v.At = r.clock.now()
	r.d.takeGuard(context.Background(), v)
}

// where prints which interfaces hold v100.
func (r *ladderRig) where() string {
	out := ""
	for _, x := range []struct {
		l    *fakeLink
		name string
	}{{r.main, "rhi0"}, {r.deg, "rhi1"}, {r.lr, "rhi2"}} {
		if x.l.has(v100) {
			out += x.name + " "
		}
	}
	if out == "" {
		return "none"
	}
	return out[:len(out)-1]
}

func (r *ladderRig) expect(t *testing.T, where string, tier decide.Tier, reason decide.Reason) {
	t.Helper()
	if got := r.where(); got != where {
		t.Errorf("10.0.0.100 is on %s, want %s", got, where)
	}
	vs := r.status(t, v100)
	if vs.Tier != tier || vs.Reason != reason {
		t.Errorf("status: tier %q reason %q, want %q %q", vs.Tier, vs.Reason, tier, reason)
	}
}

func (r *ladderRig) status(t *testing.T, p netip.Prefix) status.VIPStatus {
	t.Helper()
	for _, v := range r.d.Status().VIPs {
		if v.Address == p.String() {
			return v
		}
	}
	t.Fatalf("no status for %s", p)
	return status.VIPStatus{}
}

// fail makes 10.0.0.100's health fail from the next poll on, and starts
// watching for gaps and for the dead VIP on rhi0.
func (r *ladderRig) fail() {
	r.health.set(health.Down, api)
	r.watch, r.failing = true, true
}

// TestGuardEverySiteFailsInOnePoll: this site and the other one fail in
// the same poll. The last answer before the failure still showed the
// other site serving, and so does the first one after it (its move to
// last resort has not reached this router yet): the VIP goes to last
// resort in that poll, add before delete, and stays there: never
// withdrawn, never on a gap, never at full weight.
func TestGuardEverySiteFailsInOnePoll(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.view.set(v100, 7)
	r.tick(t)
	for range 5 {
		r.answer()
	}
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)

	r.fail()
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	r.answer() // still shows site 7 serving
	r.view.set(v100)
	for range 10 {
		r.answer()
		r.answer()
		r.tick(t)
	}
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	if r.gaps > 0 || r.onMainFailed > 0 {
		t.Errorf("%d writes left the VIP on no interface, %d added it to rhi0 while it failed", r.gaps, r.onMainFailed)
	}
	if n := countLogs(r.logs, "announcing it in last resort"); n != 1 {
		t.Errorf("%d lines about last resort, want 1", n)
	}
	if n := countLogs(r.logs, "withdrawing"); n != 0 {
		t.Errorf("%d lines about withdrawing, want none", n)
	}

	// Health comes back: full weight at once, add before delete.
	r.health.set(health.Up, api)
	r.failing = false
	r.tick(t)
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonHealthy)
	if r.gaps > 0 {
		t.Errorf("%d writes left the VIP on no interface on the way back", r.gaps)
	}
}

// TestGuardOthersServingWithdrawsPromptly: another site has served the
// VIP in every answer for longer than hold when this site's health fails:
// the VIP goes to last resort, and is withdrawn at the second answer after
// the failure, without waiting hold again. A run that starts after the
// failure needs hold.
func TestGuardOthersServingWithdrawsPromptly(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.view.set(v100, 7)
	r.tick(t)
	for range 3 {
		r.answer()
	}
	r.fail()
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	r.answer()
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	r.answer()
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonOthersServing)
	if r.onMainFailed > 0 {
		t.Errorf("%d writes added the dead VIP to rhi0", r.onMainFailed)
	}

	// The other site goes: back to last resort at the next answer.
	r.view.set(v100)
	r.answer()
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	// It comes back: a new run, which needs hold (2 s: three answers).
	r.view.set(v100, 7)
	r.answer()
	r.answer()
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	r.answer()
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonOthersServing)
}

// TestGuardRestart: rhi restarts while 10.0.0.100, whose health fails, is
// announced (on rhi0, or already in last resort on rhi2), and the guard has
// no answer yet: its first tick puts the VIP in last resort, never
// withdraws it. A VIP that was withdrawn stays so until the guard looks.
func TestGuardRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		main, lr  []string
		where     string
		tier      decide.Tier
		wantNoGap bool
	}{
		{"on rhi0", []string{tierVIP}, nil, "rhi2", decide.TierLastResort, true},
		{"on rhi2", nil, []string{tierVIP}, "rhi2", decide.TierLastResort, true},
		{"withdrawn", nil, nil, "none", decide.TierWithdrawn, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ladderSeed()
			cfg.StateFile = filepath.Join(t.TempDir(), "owned")
			rec := owned.File(cfg.StateFile)
			if err := rec.Write(owned.Record{Iface: "rhi0", VIPs: []netip.Prefix{v100, v101, v102}}); err != nil {
				t.Fatal(err)
			}
			main := newFakeLink(append(tc.main, "10.0.0.101/32", "10.0.0.102/32")...)
			r := newLadderRig(t, cfg, main, newFakeLink(), newFakeLink(tc.lr...))
			r.d = New(cfg, Deps{Health: r.health, Log: r.d.log, Now: r.clock.now, Guard: r.view, Record: rec,
				Announcer: watchedLink{main, func() { r.gaps += b2i(!main.has(v100) && !r.lr.has(v100) && tc.wantNoGap) }},
				Degraded:  r.deg, LastResort: watchedLink{r.lr, func() { r.gaps += b2i(!main.has(v100) && !r.lr.has(v100) && tc.wantNoGap) }},
			})
			r.health.set(health.Down, api)
			r.tick(t) // no answer from BIRD yet
			reason := place.ReasonStarting
			if tc.tier == decide.TierWithdrawn {
				reason = decide.ReasonUnhealthy
			}
			r.expect(t, tc.where, tc.tier, reason)
			if r.gaps > 0 {
				t.Errorf("%d writes left the VIP on no interface", r.gaps)
			}
			// The first answer: nobody else serves it. The phase is
			// running: a VIP whose health fails goes to last resort.
			r.answer()
			r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGuardUnknownView: while BIRD's view is unknown (BIRD down, or a
// router that does not send ADD-PATH: View.Err) no VIP whose health fails
// is withdrawn: one in last resort stays, one withdrawn comes back to last
// resort; /status, the metric's field and one error line say so. A VIP
// the view cannot tell alone is kept the same way while another is
// withdrawn on the view's word.
func TestGuardUnknownView(t *testing.T) {
	for _, why := range []string{"bird: dial \"/run/bird/bird.ctl\": connection refused", "rhi_peer: ADD-PATH receive not negotiated for ipv4"} {
		t.Run(why, func(t *testing.T) {
			r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
			r.view.set(v100, 7)
			r.view.set(v101, 7)
			r.tick(t)
			r.answer()
			r.answer()
			r.answer()
			r.fail()
			r.health.set(health.Down, auth)
			r.tick(t)
			r.answer()
			r.answer()
			r.expect(t, "none", decide.TierWithdrawn, place.ReasonOthersServing)

			r.view.err = errors.New(why)
			r.answer()
			r.expect(t, "rhi2", decide.TierLastResort, place.ReasonGuardUnknown)
			r.gaps = 0 // it was withdrawn, rightly, until now
			for range 5 {
				r.answer()
				r.tick(t)
			}
			r.expect(t, "rhi2", decide.TierLastResort, place.ReasonGuardUnknown)
			s := r.d.Status()
			if s.FailOpen == nil || s.FailOpen.Known || s.FailOpen.Error != why {
				t.Errorf("status fail_open %+v, want unknown with %q", s.FailOpen, why)
			}
			if n := countLogs(r.logs, "view of the other sites is unknown"); n != 1 {
				t.Errorf("%d lines about the unknown view, want 1", n)
			}

			// Known again, but 10.0.0.100 alone cannot be told: it stays,
			// 10.0.0.101 is withdrawn once its run spans hold.
			r.view.err = nil
			r.view.unknown[v100] = errors.New("a path without a site id")
			for range 3 {
				r.answer()
			}
			r.expect(t, "rhi2", decide.TierLastResort, place.ReasonGuardUnknown)
			if vs := r.status(t, v101); vs.Tier != decide.TierWithdrawn {
				t.Errorf("10.0.0.101: %s, want withdrawn", vs.Tier)
			}
			if vs := r.status(t, v100); vs.FailOpen == nil || vs.FailOpen.OtherSites != -1 || vs.FailOpen.Error == "" {
				t.Errorf("10.0.0.100's fail_open %+v", vs.FailOpen)
			}
			if s := r.d.Status(); !s.FailOpen.Known {
				t.Errorf("status fail_open %+v, want known", s.FailOpen)
			}
			if r.gaps > 0 {
				t.Errorf("%d writes left 10.0.0.100 on no interface while it was kept", r.gaps)
			}
		})
	}
}

// TestGuardOneAnswerProvesNothing: a single answer showing another site,
// followed by silence, never withdraws a VIP however late the loop
// re-reads it; after guardStale without an answer the view is unknown.
func TestGuardOneAnswerProvesNothing(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.fail()
	r.tick(t)
	r.view.set(v100, 7)
	r.answer() // one answer, then BIRD is slow
	for range 3 {
		r.tick(t)
	}
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonGuardUnknown)
	if s := r.d.Status(); s.FailOpen.Known || s.FailOpen.Error != errStale.Error() {
		t.Errorf("status fail_open %+v, want unknown: stale", s.FailOpen)
	}
}

// TestGuardKeepsADegradedVIPLow: a degraded VIP whose health then fails
// goes down the ladder to last resort, never up to full weight.
func TestGuardKeepsADegradedVIPLow(t *testing.T) {
	cfg := ladderSeed()
	cfg.VIPs[0].Degraded = config.Degraded{Below: 50}
	cfg.Degraded.Below = 50
	r := newLadderRig(t, cfg, newFakeLink(), newFakeLink(), newFakeLink())
	nh := &nodeHealth{snap: health.Snapshot{}}
	for _, k := range []string{auth, admin, primary, reserve} {
		nh.set(k, 4, 4)
	}
	r.d.health = planned(nh)
	nh.set(api, 1, 4)
	r.tick(t)
	r.answer()
	r.expect(t, "rhi1", decide.TierDegraded, decide.ReasonDegraded)
	r.failing, r.watch = true, true
	nh.set(api, 0, 4)
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	if r.onMainFailed > 0 || r.gaps > 0 {
		t.Errorf("%d writes put the failed VIP on rhi0, %d left it on none", r.onMainFailed, r.gaps)
	}
}

// TestGuardNoLastResortInterface: while rhi2 is missing, a VIP whose
// health fails stays where it is, and an error says so once.
func TestGuardNoLastResortInterface(t *testing.T) {
	lr := newFakeLink()
	lr.exists = false
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), lr)
	r.tick(t)
	r.answer()
	r.fail()
	r.failing = false
	r.tick(t)
	r.answer()
	r.tick(t)
	r.expect(t, "rhi0", decide.TierAnnounced, place.ReasonNoLastResort)
	if n := countLogs(r.logs, "keeps it announced in last resort"); n != 0 {
		t.Errorf("%d lines say the VIP is in last resort while rhi2 is missing", n)
	}
	if n := countLogs(r.logs, "the last-resort interface is missing: the tier is unavailable"); n != 1 {
		t.Errorf("%d lines about the missing interface, want 1", n)
	}
	if fo := r.d.Status().FailOpen; fo == nil || fo.LastResortExists || fo.LastResortInterface != "rhi2" {
		t.Errorf("status fail_open %+v, want rhi2 missing", fo)
	}
	// It appears: the next tick moves the VIP there.
	lr.do(func(l *fakeLink) { l.exists = true })
	r.tick(t)
	r.answer()
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	if fo := r.d.Status().FailOpen; fo == nil || !fo.LastResortExists {
		t.Errorf("status fail_open %+v, want rhi2 there", fo)
	}
}

// TestGuardDrainWins: a drained VIP is withdrawn from last resort.
func TestGuardDrainWins(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.fail()
	r.tick(t)
	r.answer()
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	r.d.takeDrain(context.Background(), drain.Update{Path: r.d.cfg.DrainFile, Set: drain.Set{VIPs: map[netip.Prefix]bool{v100: true}}})
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonDrained)
}

// TestGuardOffByReload: a reload that turns the guard off withdraws what it
// kept and drops fail_open from /status; the asker is told to ask nothing.
func TestGuardOffByReload(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.answer()
	r.fail()
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)

	off := *r.d.cfg
	off.FailOpen.MinOtherSites = 0
	r.d.applyReload(&off)
	r.tick(t)
	r.expect(t, "none", decide.TierWithdrawn, decide.ReasonUnhealthy)
	if vs := r.status(t, v100); vs.FailOpen != nil || r.d.Status().FailOpen != nil {
		t.Errorf("guard off, status still has fail_open %+v", vs.FailOpen)
	}
	if vips := <-r.d.fo.vips; len(vips) != 0 {
		t.Errorf("guard off, the asker still asks about %v", vips)
	}
}

// TestGuardOff: with fail_open off (the default) a VIP whose health fails
// is withdrawn, as the seed says, and nothing goes to rhi2.
func TestGuardOff(t *testing.T) {
	cfg := ladderSeed()
	cfg.FailOpen = config.FailOpen{Hold: time.Second}
	r := newLadderRig(t, cfg, newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.health.set(health.Down, api)
	for range 3 {
		r.answer()
		r.tick(t)
	}
	r.expect(t, "none", decide.TierWithdrawn, decide.ReasonUnhealthy)
	if vs := r.status(t, v100); vs.FailOpen != nil || r.lr.text() != "" {
		t.Errorf("fail_open in status while off: %+v; rhi2 %q", vs.FailOpen, r.lr.text())
	}
}

// TestGuardConfirmsTheTier: BIRD's confirmation expects a VIP in last
// resort present, exported with the last-resort attributes.
func TestGuardConfirmsTheTier(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.fail()
	r.tick(t)
	job := r.d.confirmJob()
	for _, v := range job.In.VIPs {
		if v.Prefix == v100 && (v.Expected != router.Present || v.Tier != router.TierLastResort || !v.OnInterface) {
			t.Errorf("confirmation expects %+v", v)
		}
		if v.Prefix == v101 && v.Tier != router.TierFull {
			t.Errorf("confirmation expects %+v", v)
		}
	}
	if vs := r.status(t, v100); !vs.Desired || !vs.OnLastResort || !vs.OnInterface {
		t.Errorf("status %+v", vs)
	}
}

// TestRunAsksBird runs the whole loop with the asking goroutine: the
// guard's ticker fires, the viewer is asked about every VIP, and its
// answers move a failed VIP to last resort and then withdraw it.
func TestRunAsksBird(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.FailOpen = config.FailOpen{MinOtherSites: 1, Hold: time.Nanosecond}
	link, lr := newFakeLink(), newFakeLink()
	link.sets = make(chan struct{}, 64)
	h := newFakeHealth()
	h.set(health.Up, auth, admin, primary, reserve)
	h.set(health.Down, api)
	a := newFakeViewer()
	a.asked = make(chan []netip.Prefix, 1)
	a.set(v100, 7)
	d := New(cfg, Deps{Health: h, Announcer: link, LastResort: lr, Guard: a})
	// The drain watcher may tick at the same interval: every ticker of
	// guardEvery fires together.
	var mu sync.Mutex
	var tickers []*fakeTicker
	d.env.newTicker = func(every time.Duration) ticker {
		ft := newFakeTicker()
		if every == guardEvery {
			mu.Lock()
			tickers = append(tickers, ft)
			mu.Unlock()
		}
		return ft
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	<-link.sets // the first tick
	// The loop takes each answer when it gets to it: keep the asker busy
	// until the VIP is withdrawn, bounded by time, not by a count of
	// rounds (under -race on a loaded machine 100 rounds can pass before
	// the loop runs once).
	deadline := time.Now().Add(10 * time.Second) // a failure bound, not a wait
	for {
		mu.Lock()
		for _, ft := range tickers {
			ft.fire()
		}
		mu.Unlock()
		select {
		case vips := <-a.asked:
			if len(vips) != 3 {
				t.Fatalf("asked about %v, want the 3 VIPs", vips)
			}
		case <-time.After(10 * time.Second): // a failure bound, not a wait
			t.Fatal("the viewer was never asked")
		}
		if time.Now().After(deadline) {
			t.Fatalf("10.0.0.100 never withdrawn: rhi0 %q rhi2 %q", link.text(), lr.text())
		}
		if link.text() == "10.0.0.101 10.0.0.102" && lr.text() == "" {
			break
		}
		select {
		case <-link.sets:
		default:
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGuardShutdownWithdrawsEveryTier: on_shutdown withdraw is placement's
// stopping phase: a VIP the guard keeps in last resort and a healthy one
// leave every interface, and /status gives the reason.
func TestGuardShutdownWithdrawsEveryTier(t *testing.T) {
	cfg := ladderSeed()
	cfg.OnShutdown = config.ShutdownWithdraw
	r := newLadderRig(t, cfg, newFakeLink(), newFakeLink(), newFakeLink())
	r.tick(t)
	r.answer()
	r.fail()
	r.tick(t)
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonFailOpen)
	if err := r.d.shutdown(); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "none", decide.TierWithdrawn, place.ReasonStopping)
	if m, l := r.main.text(), r.lr.text(); m != "" || l != "" {
		t.Errorf("after shutdown: rhi0 %q rhi2 %q", m, l)
	}
	if vs := r.status(t, v101); vs.Tier != decide.TierWithdrawn || vs.Reason != place.ReasonStopping {
		t.Errorf("10.0.0.101 after shutdown: %s %s", vs.Tier, vs.Reason)
	}
}

// TestGuardRestartUnsettled: rhi restarts while its VIPs are announced and
// the control API cannot be read, and BIRD has not answered the guard
// yet: the VIPs are kept as they are while unsettled, and when the failure
// policy withdraws them they go to last resort, never off every
// interface.
func TestGuardRestartUnsettled(t *testing.T) {
	cfg := ladderSeed()
	cfg.StateFile = filepath.Join(t.TempDir(), "owned")
	rec := owned.File(cfg.StateFile)
	if err := rec.Write(owned.Record{Iface: "rhi0", VIPs: []netip.Prefix{v100, v101, v102}}); err != nil {
		t.Fatal(err)
	}
	main := newFakeLink("10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
	r := newLadderRig(t, cfg, main, newFakeLink(), newFakeLink())
	gaps := 0
	after := func() { gaps += b2i(!main.has(v100) && !r.lr.has(v100)) }
	r.d = New(cfg, Deps{Health: r.health, Log: r.d.log, Now: r.clock.now, Guard: r.view, Record: rec,
		Announcer: watchedLink{main, after}, Degraded: r.deg, LastResort: watchedLink{r.lr, after}})
	r.health.down() // every upstream unreadable
	r.tick(t)
	r.expect(t, "rhi0", decide.TierAnnounced, decide.ReasonUnknown)
	for range cfg.FailurePolicy.MaxFailedPolls {
		r.tick(t)
	}
	r.expect(t, "rhi2", decide.TierLastResort, place.ReasonStarting)
	if gaps > 0 {
		t.Errorf("%d writes left 10.0.0.100 on no interface", gaps)
	}
	if r.d.vs.state[0].Reason != decide.ReasonPolicyWithdraw {
		t.Errorf("health's reason %s, want the failure policy's withdrawal", r.d.vs.state[0].Reason)
	}
}

// TestCurrentAllIsCurrent: placeAll's one walk over the interfaces
// (currentAll) says for every VIP what current says of it alone, with
// VIPs on the main interface, in last resort and on none.
func TestCurrentAllIsCurrent(t *testing.T) {
	r := newLadderRig(t, ladderSeed(), newFakeLink(), newFakeLink(), newFakeLink())
	check := func(when string) map[decide.Tier]int {
		t.Helper()
		seen := map[decide.Tier]int{}
		cur := r.d.currentAll(nil)
		for i, v := range r.d.cfg.VIPs {
			want := r.d.current(v.Address)
			if got := tierAt[cur[i]]; got != want {
				t.Errorf("%s: %s: currentAll says %q, current %q", when, v.Address, got, want)
			}
			seen[want]++
		}
		return seen
	}
	check("before the first tick")
	r.view.set(v100, 7)
	r.tick(t)
	check("healthy")
	r.fail()
	r.tick(t)
	if seen := check("v100 failing"); seen[decide.TierLastResort] != 1 || seen[decide.TierAnnounced] == 0 {
		t.Errorf("tiers seen %v, want one VIP in last resort and others announced", seen)
	}
}
