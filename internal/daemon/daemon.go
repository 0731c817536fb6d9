// Package daemon is rhi's loop. One goroutine owns time: every tick it polls
// the control API, decides, and sets the interface to the result; reloads and
// shutdown arrive as messages to that goroutine, so nothing else needs a lock
// except the read-only status view.
package daemon

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probe"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// HealthSource polls the control API. Poll reports every upstream's key and
// bounds its own work (apisix.Client applies apisix_timeout); it returns
// early when ctx is cancelled. It is called from one goroutine at a time.
type HealthSource interface {
	Poll(ctx context.Context, ups []health.Upstream) health.Snapshot
}

// Planner is a HealthSource that prepares a fixed list of keys once and
// polls what it prepared (apisix.Client). The loop plans its keys at each
// configuration, so that a poll builds nothing of its own; the plan also
// says which keys read one resource, which the loop logs, counts and polls
// fast as one. PollPlan is shaped by opts and says what the poll cost the
// source: the loop spreads a poll's one-upstream requests, reads a moving
// upstream alone, and keeps its polling within apisix_poll_budget by it.
// A source that is no Planner is polled by its keys, each key its own
// resource, at no cost the loop can see.
type Planner interface {
	HealthSource
	Plan(ups []health.Upstream) health.Plan
	PollPlan(ctx context.Context, plan health.Plan, opts health.PollOptions) (health.Snapshot, health.PollCost)
}

// planned returns h as a Planner (see Planner).
func planned(h HealthSource) Planner {
	if p, ok := h.(Planner); ok {
		return p
	}
	return byKeys{h}
}

// byKeys is a HealthSource that is no Planner, polled by its keys.
type byKeys struct{ HealthSource }

func (b byKeys) Plan(ups []health.Upstream) health.Plan { return health.KeyPlan(ups) }

func (b byKeys) PollPlan(ctx context.Context, plan health.Plan, _ health.PollOptions) (health.Snapshot, health.PollCost) {
	return b.Poll(ctx, plan.Upstreams()), health.PollCost{}
}

// source is the HealthSource the loop was given, unwrapped from byKeys:
// what a reload compares with its new source, and closes.
func (d *Daemon) source() HealthSource {
	if b, ok := d.health.(byKeys); ok {
		return b.HealthSource
	}
	return d.health
}

// idleCloser is a HealthSource that keeps connections between polls;
// applyReload closes them when it replaces the source.
type idleCloser interface{ CloseIdleConnections() }

// Announcer reads and sets the VIP interface. Set is declarative: owned maps
// every VIP rhi owns to whether it should be present; calling it again with
// the same input changes nothing.
type Announcer interface {
	Observe(ctx context.Context) (vip.State, error)
	// Set makes the interface hold want (vip.Desired): cheap when want
	// and the interface are as the previous Set left them.
	Set(ctx context.Context, want vip.Desired) (vip.State, error)
	// Renew makes the kernel notify BIRD about p again, leaving p as
	// present says; it fails if the interface does not hold p that way.
	Renew(ctx context.Context, p netip.Prefix, present bool) error
	// DeletePeers deletes point-to-point entries, which Set cannot name
	// (unmanaged_addresses: withdraw); a dry run deletes none.
	DeletePeers(ctx context.Context, peers []vip.Peer) error
}

// Deps are the daemon's outside parts.
type Deps struct {
	Health    HealthSource
	Announcer Announcer
	Log       logrus.FieldLogger
	// Confirmer, if set, is asked after every change and every
	// confirmEvery whether BIRD agrees.
	Confirmer Confirmer
	Now       func() time.Time // nil: time.Now
	// Ready is called once, after the first tick (systemd readiness).
	Ready func()
	// OnPoll, if set, is told each poll's duration and how many upstreams
	// it could not read (metrics).
	OnPoll func(took time.Duration, unreadable int)
	// NewHealth builds the health source for a reloaded config whose control
	// URL, timeout or poll mode changed; nil, or a nil result, keeps the
	// current source.
	NewHealth func(*config.Config) HealthSource
	// DryRun says that Announcer only reports what it would change
	// (`rhi run --dry-run`): BIRD is then held to the interface as it is,
	// not to what rhi would make of it, and Status says so.
	DryRun bool
	// Record, if set, is the ownership record (state_file): read at
	// start-up to withdraw what a previous configuration put on the
	// interface, written before the owned set grows and after it shrinks.
	// nil keeps none (a dry run passes owned.ReadOnly).
	Record OwnershipRecord
	// Prober, if set, sends the VIPs' data-path probes (vips[].probe);
	// nil: a probe.Prober.
	Prober ProbeSource
	// Degraded, if set, is the announcer of degraded.interface:
	// degraded VIPs live there instead of on Announcer's interface.
	Degraded Announcer
	// LastResort, if set, is the announcer of last_resort.interface: where
	// the fail-open guard keeps a VIP whose health fails. nil: the tier
	// is never available.
	LastResort Announcer
	// Guard, if set, asks BIRD's guard tables which other sites serve
	// each VIP, for the fail-open guard (fail_open); nil: the guard's
	// view is always unknown, and no VIP whose health fails is withdrawn
	// while the guard is on.
	Guard GuardViewer
}

// applyTimeout bounds one Set: netlink calls carry their own socket timeout,
// this bounds the whole batch.
const applyTimeout = 10 * time.Second

// Daemon is the RHI loop. Create it with New, run it with Run.
type Daemon struct {
	log    logrus.FieldLogger
	health Planner
	ann    Announcer
	env    loopEnv // the clock, tickers and hooks it was given

	conf *confirmer // nil without a Confirmer
	in   inbox      // what reaches the loop from other goroutines

	// Owned by the loop goroutine.
	cfg       *config.Config
	plan      health.Plan // of cfg's distinct upstream keys, by d.health; never changed in place
	vs        vipStates   // per-VIP state, in config order
	stage     loopStage   // how far the loop has come
	set       setState    // what the loop wants on the interface
	ifc       ifaceState  // the VIP interface as last read and written
	polls     pollState   // what the polls learnt and cost
	drains    drainState  // drain_file and drain_grace
	own       ownership
	unmanaged unmanagedAddrs
	tier      tiers    // the lower interfaces, if any
	fo        failOpen // the fail-open guard (guard.go)

	views views // what Status renders
}

// setState is what the loop wants on the interface and what it last told
// the announcer: the desired presence, the VIPs a reload dropped that are
// still to withdraw, and the last Set's input.
type setState struct {
	// want is what the last Set was told: every VIP rhi owns, sorted,
	// present or absent, refilled by every Set (fillWant), in buf or
	// sharing the main interface's Present.
	want    vip.Desired
	buf     []netip.Prefix
	orphans map[netip.Prefix]bool // dropped by a reload, still to withdraw
}

// loopStage is how far the loop has come: whether its first tick took the
// interface's state, whether shutdown has begun, and whether a confirmation
// has been asked for yet.
type loopStage struct {
	started   bool
	stopping  bool // shutdown withdraws every VIP: placement's stopping phase
	confirmed bool // a confirmation has been requested at least once
}

// ifaceState is what the loop knows of the VIP interface: what it held at
// the last read, and how its reads and writes went.
type ifaceState struct {
	iface  vip.State
	writes ifaceWrites
}

// drainState is the loop's view of drain_file: its watcher, the drains in
// force, why the file could not be read, and the drain_grace deadlines.
type drainState struct {
	drainW   *drain.Watcher // looks at drain_file off the loop
	drained  drain.Set
	drainErr string
	gr       graces // drain_grace deadlines (grace.go)
}

// pollState is what the loop keeps of its polls: the last one, the counts,
// the upstreams' log, the data-path probes, the fast polls of moving
// upstreams and the budget of the control API's time they spend.
type pollState struct {
	last      pollRun // the last tick's poll
	stats     pollStats
	tickEnd   time.Time  // end of the last tick
	fast      fastPolls  // moving upstreams, polled alone (fastpoll.go)
	budget    pollBudget // the control API's time rhi takes (budget.go)
	upstreams upstreamLog
	probes    probes // the data-path probes of the last poll
}

// inbox holds the channels other goroutines hand the loop work on: reloads,
// addresses to renew from the confirmer, interface hints and drain updates.
// Each has room for one value.
type inbox struct {
	reloads  chan reloadReq
	renewals chan map[netip.Prefix]bool // from the confirmer to the loop
	hints    chan struct{}              // the interface may have changed
	drains   chan drain.Update          // from the drain watcher to the loop
}

// loopEnv is what the loop is given besides its parts: the clock, the
// tickers, the callbacks and the dry-run switch. Tests put fakes here.
type loopEnv struct {
	now    func() time.Time
	ready  func()
	newHS  func(*config.Config) HealthSource
	onPoll func(time.Duration, int)
	dryRun bool
	// newTicker makes the poll, confirmation and drain tickers;
	// newRealTicker but in tests.
	newTicker func(time.Duration) ticker
	// sleep waits through a withdrawing shutdown's grace; realSleep but
	// in tests.
	sleep func(time.Duration)
	// early is how much before the interval the next regular poll
	// comes (randomEarly; tests fix it).
	early func(time.Duration) time.Duration
}

// New builds a daemon for a validated config.
func New(cfg *config.Config, deps Deps) *Daemon {
	d := &Daemon{
		log:    deps.Log,
		health: planned(deps.Health),
		ann:    deps.Announcer,
		own:    ownership{file: deps.Record},
		tier:   tiers{low: [2]lower{{ann: deps.Degraded}, {ann: deps.LastResort}}},
		fo:     newFailOpen(deps.Guard),
		env: loopEnv{
			now: deps.Now, ready: deps.Ready, newHS: deps.NewHealth, onPoll: deps.OnPoll,
			dryRun: deps.DryRun, newTicker: newRealTicker, sleep: realSleep,
			early: randomEarly,
		},
		in: inbox{
			reloads:  make(chan reloadReq, 1),
			renewals: make(chan map[netip.Prefix]bool, 1),
			hints:    make(chan struct{}, 1),
			drains:   make(chan drain.Update, 1),
		},
		drains: drainState{drainW: drain.NewWatcher(cfg.DrainFile)},
		set:    setState{orphans: map[netip.Prefix]bool{}},
	}
	if d.env.now == nil {
		d.env.now = time.Now
	}
	if d.log == nil {
		l := logrus.New()
		l.Out = io.Discard
		d.log = l
	}
	if deps.Confirmer != nil {
		d.conf = newConfirmer(deps.Confirmer, cfg.Bird.Socket, d.log, d.env.now, d.queueRenew)
	}
	d.polls.probes.src = deps.Prober
	if d.polls.probes.src == nil {
		d.polls.probes.src = probe.New(probe.Options{})
	}
	d.setConfig(cfg)
	return d
}

// queueRenew hands the loop addresses to renew, merged with any not yet
// taken; it never blocks the confirmer.
func (d *Daemon) queueRenew(m map[netip.Prefix]bool) {
	for {
		select {
		case d.in.renewals <- m:
			return
		case old := <-d.in.renewals:
			for p, present := range old {
				if _, ok := m[p]; !ok {
					m[p] = present
				}
			}
		}
	}
}

// reloadReq is a config handed to the loop and the channel closed once the
// loop has applied it.
type reloadReq struct {
	cfg     *config.Config
	applied chan struct{}
}

// Reload hands a new validated config to the loop. It never blocks: a
// reload that has not been picked up yet is replaced by the newer one. The
// channel returned is closed once the loop has applied cfg (the next tick
// runs on it); it stays open if the loop stops first, or if a newer Reload
// replaced cfg before the loop took it, so a caller that waits on it
// serializes its reloads and bounds the wait (cmd/rhi's reload does).
func (d *Daemon) Reload(cfg *config.Config) <-chan struct{} {
	r := reloadReq{cfg: cfg, applied: make(chan struct{})}
	offerLatest(d.in.reloads, r)
	return r.applied
}

// offerLatest puts v in ch, a channel of capacity one, without blocking: a
// value not yet taken is replaced, since v supersedes it.
func offerLatest[T any](ch chan T, v T) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// Run turns the loop until ctx is cancelled, then applies on_shutdown.
// A cancelled ctx is a normal stop, not an error.
func (d *Daemon) Run(ctx context.Context) error {
	confirmC, stopConfirm := d.startConfirmer(ctx)
	defer stopConfirm()
	defer d.watchDrain(ctx)()
	defer d.startGuard(ctx)()
	d.tick(ctx)
	if d.env.ready != nil {
		d.env.ready()
	}
	// Polls never overlap: each sets the ticker to the next one
	// (nextPoll), a little early, and a poll that runs past it skips it.
	t := d.env.newTicker(d.cfg.PollInterval)
	defer t.Stop()
	defer d.drains.gr.stopTimer()
	for {
		select {
		case <-ctx.Done():
			return d.shutdown()
		case <-d.drains.gr.c():
			d.graceDue(ctx)
		case r := <-d.in.reloads:
			d.applyReload(r.cfg)
			close(r.applied)
			// A new config is judged afresh: its interval, and a stretch
			// of it is warned about once more.
			d.polls.budget.effective, d.polls.budget.warned = d.cfg.PollInterval, false
			at := d.env.now()
			d.tick(ctx)
			d.regrid()
			d.nextPoll(t, at)
			skipLate(t.C())
		case <-t.C():
			at := d.env.now()
			d.tick(ctx)
			d.regrid()
			d.nextPoll(t, at)
			skipLate(t.C())
		case <-d.polls.fast.C():
			d.fastTick(ctx)
			skipLate(d.polls.fast.C())
		case <-confirmC:
			d.requestConfirm()
		case m := <-d.in.renewals:
			d.renew(ctx, m)
		case u := <-d.in.drains:
			d.takeDrain(ctx, u)
		case a := <-d.fo.answers:
			d.takeGuard(ctx, a)
		case <-d.in.hints:
			d.reapply(ctx)
		}
	}
}

// startConfirmer starts the confirmer's goroutine, if there is a
// confirmer, and returns the channel of the slow timer that has it confirm
// everything every confirmEvery (nil without one) and the function that
// stops both.
func (d *Daemon) startConfirmer(ctx context.Context) (<-chan time.Time, func()) {
	if d.conf == nil {
		return nil, func() {}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.conf.run(cctx); close(done) }()
	ct := d.env.newTicker(confirmEvery)
	return ct.C(), func() { ct.Stop(); cancel(); <-done }
}

// skipLate drops the tick that a Ticker keeps for a receiver that was busy
// when it fired.
func skipLate(c <-chan time.Time) {
	select {
	case <-c:
	default:
	}
}

func (d *Daemon) setConfig(cfg *config.Config) {
	d.cfg = cfg
	d.vs.index(cfg.VIPs)
	seen := map[string]bool{}
	n := 0
	for i := range cfg.VIPs {
		n += len(cfg.VIPs[i].Upstreams)
	}
	// A new slice, the last plan keeps the old one; sized up front, as
	// growing it by appends leaves up to a quarter unused.
	keys := make([]health.Upstream, 0, n)
	for i := range cfg.VIPs {
		for _, u := range cfg.VIPs[i].Upstreams {
			if !seen[u.Key] {
				seen[u.Key] = true
				keys = append(keys, u)
			}
		}
	}
	d.plan = d.health.Plan(keys)
	d.guarded()
}

// applyReload swaps the config. VIPs that stay keep their state and are not
// touched; dropped ones become orphans to withdraw; new ones start from what
// the interface holds, like at start-up.
func (d *Daemon) applyReload(cfg *config.Config) {
	old := d.cfg
	if d.env.newHS != nil && (old.ControlURL != cfg.ControlURL || old.Timeout != cfg.Timeout || old.PollMode != cfg.PollMode) {
		if h := d.env.newHS(cfg); h != nil {
			if c, ok := d.source().(idleCloser); ok && h != d.source() {
				c.CloseIdleConnections() // it would keep them for 50 s
			}
			d.health = planned(h)
		}
	}
	if old.DrainFile != cfg.DrainFile {
		d.drains.drainW.SetPath(cfg.DrainFile)
	}
	gone, added := d.vs.reload(cfg.VIPs, func(p netip.Prefix) decide.State {
		// The last Set saw it as foreign, being unowned then.
		return decide.Initial(d.ifc.iface.Has(p) || slices.Contains(d.ifc.iface.Foreign, p))
	}, d.env.now())
	for _, p := range gone {
		d.endGrace(p)
		d.set.orphans[p] = true
		d.log.WithFields(logrus.Fields{"vip": p.String(), "action": "withdraw", "reason": "removed_from_config"}).Info("vip removed from config; withdrawing")
	}
	d.setConfig(cfg)
	d.own.dirty = d.own.dirty || len(gone) > 0 || added > 0 || old.Interface != cfg.Interface
	if d.stage.started {
		for i := range cfg.VIPs {
			delete(d.set.orphans, cfg.VIPs[i].Address)
		}
	}
	d.log.WithFields(logrus.Fields{"vips": len(cfg.VIPs), "added": added, "removed": len(gone)}).Info("configuration reloaded")
}

// tick is one turn of the loop: poll, decide, apply, publish.
func (d *Daemon) tick(ctx context.Context) {
	start := d.env.now()
	if !d.stage.started && !d.start(ctx) {
		return // the interface could not be read: nothing is known, nothing is touched
	}
	// No deadline here: the health client applies apisix_timeout itself
	// (apisix.Client.Poll), the one place that also serves `rhi verify`'s
	// fresh poll, and a reload that changes the timeout builds a new client.
	// ctx only cancels the poll on shutdown.
	// The probes run alongside, under the same deadline (probe.go).
	probed := d.polls.probes.start(ctx, d.cfg, d.cfg.Timeout)
	snap := d.poll(ctx)
	probed()
	if ctx.Err() != nil {
		return // shutting down: a poll cut short says nothing about health
	}
	polled := d.env.now()
	unreadable := d.noteMoving(snap)
	d.polls.stats.polled(unreadable)
	if d.env.onPoll != nil {
		d.env.onPoll(polled.Sub(start), unreadable)
	}

	changes := decide.TickStates(d.cfg, snap, d.polls.probes.outcomes, d.vs.state)
	d.polls.stats.settled(d.anySettled(), polled)
	d.applyChanges(ctx, changes, polled, false)
	d.polls.last = pollRun{snap: snap, start: start, end: polled, resources: d.plan.Resources()}
	d.polls.tickEnd = d.env.now()
	d.publish()
}

// poll polls the keys of the config by its plan, spread as the budget
// says, and files what the poll cost.
func (d *Daemon) poll(ctx context.Context) health.Snapshot {
	snap, cost := d.health.PollPlan(ctx, d.plan, health.PollOptions{Spread: d.polls.budget.spread()})
	d.polls.budget.regCost(cost)
	return snap
}

// pollRun is one poll: what it found, when it started and ended.
type pollRun struct {
	snap       health.Snapshot
	start, end time.Time
	resources  int // distinct resources the keys name: the upstreams polled
}

// anySettled reports whether the last poll settled a VIP: not every VIP's
// verdict is unknown, so the control API told rhi something. A config
// without VIPs has nothing to settle, and every poll counts as settling it.
func (d *Daemon) anySettled() bool {
	if len(d.cfg.VIPs) == 0 {
		return true
	}
	for i := range d.cfg.VIPs {
		if d.vs.state[i].FailedPolls == 0 {
			return true
		}
	}
	return false
}

// Hint tells the loop that the interface may have changed (a netlink
// notification): it sets the interface again and confirms, without
// polling. It never blocks; hints that arrive together count once.
func (d *Daemon) Hint() {
	select {
	case d.in.hints <- struct{}{}:
	default:
	}
}

// reapply sets the interface to what the last tick decided, and has BIRD
// confirm the result.
func (d *Daemon) reapply(ctx context.Context) {
	if !d.stage.started {
		return
	}
	d.apply(ctx)
	d.requestConfirm()
	d.publish()
}

// start takes each VIP's initial state from the interface, so that a restart
// does not flap what is already announced. It reports whether it could: a
// missing interface holds nothing, but an interface that could not be read
// (a netlink timeout, a dump interrupted again and again) may hold every
// VIP, and seeding them as withdrawn would delete them on the first tick.
// The next tick tries again.
func (d *Daemon) start(ctx context.Context) bool {
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	st, err := d.ann.Observe(actx)
	cancel()
	if err != nil {
		d.noteIfaceErr(err)
		if !errors.Is(err, vip.ErrNoInterface) {
			return false
		}
	}
	actx, cancel = context.WithTimeout(ctx, applyTimeout)
	ok := d.observeLower(actx, st)
	cancel()
	if !ok {
		return false
	}
	d.ifc.iface = st
	now := d.env.now()
	present := 0
	// Health's state starts from the tiers it decides: a VIP found in last
	// resort was not announced by health, and placement keeps it there
	// until the guard or health says otherwise.
	d.vs.seed(func(p netip.Prefix) bool { return st.Has(p) || d.tier.holds(degIdx, p) }, now)
	for i := range d.cfg.VIPs {
		if d.onAny(d.cfg.VIPs[i].Address) {
			present++
		}
	}
	d.seedTier()
	d.adoptRecord(d.allIfaces(st))
	d.stage.started = true
	d.log.WithFields(logrus.Fields{"iface": d.cfg.Interface, "vips": len(d.cfg.VIPs), "present": present}).Info("started; initial VIP state taken from the interface")
	return true
}

// desired reports whether a VIP should be on an interface now: its
// placement is not withdrawn.
func (d *Daemon) desired(p netip.Prefix) bool {
	return d.placementOf(p).Tier.Present()
}

// desiredAt is desired of the i-th VIP of the config, without a lookup.
func (d *Daemon) desiredAt(i int) bool {
	return d.vs.ready && d.vs.present(i)
}

// apply sets the interface to the desired state, and reports whether that
// changed what BIRD should see. Failures are logged once per change of
// error, counted, returned, and retried on the next tick by the same
// declarative call.
func (d *Daemon) apply(ctx context.Context) (moved bool, err error) {
	d.placeAll()
	st, err := d.setOwned(ctx)
	d.noteWrite(err)
	if err != nil && !st.Exists && !errors.Is(err, vip.ErrNoInterface) {
		// Set could not read the interface at all: keep the last known view
		// rather than reporting every VIP absent.
		return false, err
	}
	// A repair or a link coming or going changes what BIRD should see even
	// when the set of present addresses ends as it was.
	moved = st.Changed > 0 || st.Up != d.ifc.iface.Up || st.Exists != d.ifc.iface.Exists || d.tier.moved
	now := d.env.now()
	// One walk over the two sorted lists finds the VIPs whose presence
	// changed: at 10,000 VIPs, two binary searches per VIP were a quarter
	// of a tick.
	vip.EachDifference(st.Present, d.ifc.iface.Present, func(p netip.Prefix) {
		if !d.isOwned(p) {
			return
		}
		moved = true
		if i, ok := d.vs.at(p); ok && d.tier.presenceChanged(p, st, d.ifc.iface) {
			d.vs.touch(i, now, false)
		}
	})
	for p := range d.set.orphans {
		if want, _ := d.set.want.Want(p); !st.Has(p) && !d.tier.has(p) && !want {
			delete(d.set.orphans, p)
			d.own.dirty = true
		}
	}
	d.noteUnmanaged(d.tier.withForeign(st))
	d.ifc.iface = st
	return moved, err
}

// noteWrite records and logs the outcome of a Set.
func (d *Daemon) noteWrite(err error) {
	news, cleared := d.ifc.writes.wrote(err)
	switch {
	case cleared:
		d.log.WithField("iface", d.cfg.Interface).Info("interface errors cleared")
	case err != nil:
		d.logIfaceErr(err, news)
	}
}

// noteIfaceErr records and logs an error reading the interface.
func (d *Daemon) noteIfaceErr(err error) {
	d.logIfaceErr(err, d.ifc.writes.noteErr(err))
}

// logIfaceErr logs an interface error loudly when it is news, quietly
// while it stays the same.
func (d *Daemon) logIfaceErr(err error, news bool) {
	e := d.log.WithField("iface", d.cfg.Interface).WithError(err)
	if !news {
		e.Debug("interface still failing")
		return
	}
	e.Error("cannot set VIPs on the interface; retrying every tick")
}

func (d *Daemon) logChange(c decide.Change, fast bool) {
	e := d.log.WithFields(logrus.Fields{"vip": c.VIP.String(), "reason": string(c.To.Reason), "verdict": c.To.Verdict.String()})
	if fast {
		e = e.WithField("poll", "fast") // a fast poll of a moving upstream decided it
	}
	if c.Detail != "" {
		e = e.WithField("detail", c.Detail) // e.g. "api: 1 of 10 healthy, needs 50%"
	}
	if c.To.Degraded {
		e = e.WithField("tier", string(decide.TierDegraded))
	}
	switch {
	case c.From.Announced && !c.To.Announced && d.placementOf(c.VIP).Tier != decide.TierWithdrawn:
		// Placement keeps it (last resort, or where it is while that tier
		// is missing) and logged why.
		pl := d.placementOf(c.VIP)
		e = e.WithFields(logrus.Fields{"action": "keep", "tier": string(pl.Tier), "placement": string(pl.Reason)})
		if pl.Tier == decide.TierLastResort {
			e.Warn("vip unavailable, but the fail-open guard keeps it announced in last resort")
			return
		}
		e.Error("vip unavailable, but the fail-open guard keeps it announced where it is: the last-resort interface is missing")
	case c.From.Announced != c.To.Announced && c.To.Announced:
		e.WithField("action", "announce").Info("vip available: announcing")
	case c.From.Announced != c.To.Announced:
		if c.To.Reason == decide.ReasonPolicyWithdraw {
			e.WithFields(logrus.Fields{"action": "withdraw", "failed_polls": c.To.FailedPolls}).Error("control API could not settle vip; failure policy withdraws it")
			return
		}
		e.WithField("action", "withdraw").Info("vip unavailable: withdrawing")
	case c.From.Degraded != c.To.Degraded:
		d.logTierChange(e, c)
	case c.To.Reason == decide.ReasonPolicyWithdraw:
		e.WithFields(logrus.Fields{"action": "keep", "failed_polls": c.To.FailedPolls}).Error("control API could not settle vip; failure policy withdraws it, and it is withdrawn already")
	case c.To.Reason == decide.ReasonPolicyAnnounce:
		e.WithFields(logrus.Fields{"action": "keep", "failed_polls": c.To.FailedPolls}).Error("control API could not settle vip; failure policy keeps it as it is")
	case c.To.Reason == decide.ReasonUnknown:
		e.WithField("failed_polls", c.To.FailedPolls).Warn("vip unsettled: keeping its state")
	default:
		e.Info("vip state changed")
	}
}

// shutdown applies on_shutdown: keep leaves the VIPs in place so a restart
// does not flap routes (a drain in its grace is finished first:
// finishDrains); withdraw steps every announced VIP down to last
// resort for its drain_grace (stepDownAll), then removes every owned VIP.
func (d *Daemon) shutdown() error {
	if d.cfg.OnShutdown != config.ShutdownWithdraw {
		d.finishDrains()
		d.log.WithField("on_shutdown", "keep").Info("stopping; VIPs left as they are")
		return nil
	}
	d.stepDownAll()
	// Placement's stopping phase, the graces over, places every VIP
	// withdrawn; the VIPs leave the interfaces as it says, and /status
	// says why.
	d.stage.stopping, d.drains.gr.until = true, nil
	d.placeAll()
	d.fillWant()
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	// Every interface, the lower ones first; a failure there is an error,
	// but does not keep the main one from being withdrawn.
	degErr := d.withdrawLower(ctx)
	if degErr != nil {
		d.log.WithError(degErr).Error("stopping; withdrawing VIPs from the lower interfaces failed")
	}
	st, err := d.ann.Set(ctx, d.set.want)
	if known := known(st, err, d.ifc.iface); known.Exists || err == nil {
		d.ifc.iface = known
	}
	d.publish()
	err = errors.Join(err, degErr)
	if errors.Is(err, vip.ErrNoInterface) && degErr == nil {
		// No interface, no addresses: BIRD announces nothing from it.
		d.log.WithError(err).Warn("stopping; the interface is missing, so no VIP is announced from it")
		return nil
	}
	if err != nil {
		d.log.WithError(err).Error("stopping; withdrawing VIPs failed")
		return err
	}
	if d.env.dryRun { // Set logged what it would delete; BIRD has nothing to confirm
		d.log.WithField("on_shutdown", "withdraw").Info("stopping; dry run: VIPs left as they are")
		return nil
	}
	d.log.WithFields(logrus.Fields{"on_shutdown": "withdraw", "vips": d.set.want.Len()}).Info("stopping; VIPs withdrawn")
	d.waitWithdrawn()
	return nil
}

// shutdownConfirm bounds how long a withdrawing shutdown waits for BIRD.
const shutdownConfirm = 10 * time.Second

// waitWithdrawn waits, bounded, until BIRD confirms that no owned VIP is in
// its table or exported, so that a host being taken down has really left
// the anycast group before rhi exits.
func (d *Daemon) waitWithdrawn() {
	if d.conf == nil {
		return
	}
	job := d.confirmJob()
	for i := range job.In.VIPs {
		job.In.VIPs[i].Expected = router.Absent
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownConfirm)
	defer cancel()
	start := d.env.now()
	var last router.Report
	for {
		last = d.conf.check.Check(ctx, job.In)
		if last.VIPsAgree() { // a session down carries nothing: withdrawn all the same
			d.log.WithField("after", d.env.now().Sub(start).Round(time.Millisecond)).Info("BIRD confirms every VIP withdrawn")
			return
		}
		select {
		case <-ctx.Done():
			e := d.log.WithField("waited", shutdownConfirm)
			if last.Err != nil {
				e = e.WithError(last.Err)
			} else {
				e = e.WithField("summary", last.Summary())
			}
			e.Error("BIRD did not confirm the withdrawal before the deadline; exiting anyway")
			return
		case <-time.After(confirmRetry):
		}
	}
}

// requestConfirm asks the confirmer to check the current expected state.
func (d *Daemon) requestConfirm() {
	if d.conf == nil {
		return
	}
	d.stage.confirmed = true
	d.conf.submit(d.confirmJob())
}

// confirmJob describes every owned VIP: configured ones as decided, dropped
// ones still being withdrawn as absent.
func (d *Daemon) confirmJob() confirmJob {
	in := router.Input{
		VIPs:            make([]router.VIP, 0, len(d.cfg.VIPs)+len(d.set.orphans)),
		Protocols:       d.cfg.Bird.Protocols,
		ExchangeTimeout: d.cfg.Bird.Timeout,
		SiteID:          uint32(d.cfg.SiteID), // 0: not checked
	}
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		tier := decide.TierWithdrawn
		if d.vs.ready {
			tier = d.vs.placement(i).Tier
		}
		want := tier.Present()
		if d.env.dryRun {
			want = d.onAny(p) // a dry run changes nothing: BIRD is held to the interface as it is
		}
		exp := router.Absent
		if want {
			exp = router.Present
		}
		in.VIPs = append(in.VIPs, router.VIP{Prefix: p, Expected: exp, OnInterface: d.onAny(p), Tier: d.tierExpected(i, tier)})
	}
	for p := range d.set.orphans {
		in.VIPs = append(in.VIPs, router.VIP{Prefix: p, Expected: router.Absent, OnInterface: d.onAny(p)})
	}
	at := make([]time.Time, len(in.VIPs)) // orphans: zero, as they have none
	copy(at, d.vs.since)
	return confirmJob{In: in, ChangedAt: at, IfaceUp: d.ifc.iface.Exists && d.ifc.iface.Up}
}

// renew re-notifies BIRD about addresses it missed, if rhi still wants them
// as the confirmer saw them.
func (d *Daemon) renew(ctx context.Context, m map[netip.Prefix]bool) {
	n := 0
	if !d.ifc.iface.Up {
		return // BIRD drops a down link's routes: nothing was missed
	}
	for p, present := range m {
		if d.desired(p) != present || d.onAny(p) != present {
			continue // changed since: the next confirmation judges afresh
		}
		rctx, cancel := context.WithTimeout(ctx, applyTimeout)
		err := d.announcerOf(p).Renew(rctx, p, present)
		cancel()
		if err != nil {
			d.log.WithField("vip", p.String()).WithError(err).Warn("renewing address failed")
			continue
		}
		n++
	}
	if n > 0 {
		d.log.WithField("vips", n).Info("addresses renewed for BIRD")
		d.requestConfirm()
	}
}

// applyChanges follows a poll's verdict changes (a regular or a fast poll,
// read at polled) through to the interfaces: it notes when each VIP moved,
// places and applies every VIP, logs the changes and asks BIRD to confirm.
func (d *Daemon) applyChanges(ctx context.Context, changes []decide.Change, polled time.Time, fast bool) {
	for _, c := range changes {
		if i, ok := d.vs.at(c.VIP); ok && (c.From.Announced != c.To.Announced || c.From.Degraded != c.To.Degraded) {
			d.vs.touch(i, polled, true)
		}
		if c.From.Announced != c.To.Announced {
			d.fellAt(c.VIP, c.To.Announced, polled)
		}
	}
	d.expireView(polled)
	moved, err := d.apply(ctx)
	d.ifc.writes.ticked(err)
	// Logged once the interface is set: at 1,000 VIPs writing the lines
	// takes longer than the changes, and must not delay them.
	for _, c := range changes {
		d.logChange(c, fast)
	}
	if len(changes) > 0 || moved || !d.stage.confirmed {
		d.requestConfirm()
	}
}
