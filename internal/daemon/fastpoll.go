package daemon

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/probe"
)

// fastPolls follows the upstreams that are moving between states and polls
// them alone, at fast_poll_interval, until they settle. APISIX marks a
// dying node mostly_healthy one check before unhealthy, so a poll on the
// regular grid that sees mostly_healthy knows the verdict may change
// within a check interval: polling that upstream again every ~100 ms,
// rather than at the next tick a whole interval later, makes rhi's share
// of a withdraw a fraction of a fast interval once APISIX shows it.
//
// A resource is moving after a reading that has a node mostly_healthy or
// mostly_unhealthy, or whose healthy count differs from the reading
// before (a node newly unhealthy, or back), or when the probe of a VIP that
// uses it has just stopped answering up. It settles with a reading that
// has none of these. A reading that fails (the control API refused, a
// deadline) ends the resource's fast polls: the regular grid and
// max_failed_polls judge an unreadable control API, as without fast polls.
//
// The loop alone uses it.
type fastPolls struct {
	// plan and cfg are what the index is of; it is rebuilt when either
	// changes (a reload). Both: a source may plan the same keys of a new
	// configuration as it did the old one's, and give the same plan,
	// while the VIPs that use them changed.
	plan   health.Plan
	cfg    *config.Config
	keysOf groups  // per resource: the plan's keys naming it
	vipsOf groups  // per resource: the VIPs whose upstreams name it
	prev   []int32 // per resource: the healthy count last read
	known  []bool  // prev holds a reading
	moving []bool
	n      int // resources moving

	prevProbe []decide.Probe // per VIP: the probe outcome of the last poll

	t     ticker // running while n > 0
	every time.Duration

	polls uint64 // fast polls, ever
}

// reindex rebuilds the index when the loop's plan or configuration
// changed (a reload). What was moving is forgotten: the next regular poll
// finds it again.
func (f *fastPolls) reindex(plan health.Plan, cfg *config.Config) {
	if f.plan == plan && f.cfg == cfg {
		return
	}
	f.plan, f.cfg = plan, cfg
	n := plan.Resources()
	f.prev, f.known, f.moving, f.n = make([]int32, n), make([]bool, n), make([]bool, n), 0
	f.prevProbe = nil
	ups := plan.Upstreams()
	byKey := make(map[string]int, len(ups))
	var pairs [][2]int32
	for i := range ups {
		if j, ok := plan.KeyResource(i); ok {
			pairs = append(pairs, [2]int32{int32(j), int32(i)})
			byKey[ups[i].Key] = j
		}
	}
	f.keysOf = groupPairs(n, pairs)
	pairs = pairs[:0]
	for v := range cfg.VIPs {
		for _, u := range cfg.VIPs[v].Upstreams {
			if j, ok := byKey[u.Key]; ok {
				pairs = append(pairs, [2]int32{int32(j), int32(v)})
			}
		}
	}
	f.vipsOf = groupPairs(n, pairs)
}

// read files a reading of resource j and reports whether it is moving.
func (f *fastPolls) read(j int, r health.Result) bool {
	readable := r.Verdict != health.Failed && r.Verdict != health.NotFound
	moving := readable && (r.Moving > 0 || f.known[j] && f.prev[j] != r.Healthy)
	if readable {
		f.prev[j], f.known[j] = r.Healthy, true
	}
	return moving
}

// set marks resource j moving or settled.
func (f *fastPolls) set(j int, moving bool) {
	if f.moving[j] != moving {
		f.moving[j] = moving
		if moving {
			f.n++
		} else {
			f.n--
		}
	}
}

// C is the fast ticker's channel; nil (never ready) while nothing moves.
func (f *fastPolls) C() <-chan time.Time {
	if f.t == nil {
		return nil
	}
	return f.t.C()
}

// noteMoving files the readings of a regular poll and the probes' outcomes,
// and starts or stops the fast ticker. The readings come from the upstream
// log's walk of the snapshot, which it also does (upstreamLog.note), and
// returns its count of unreadable upstreams: each resource is looked up
// by key in the snapshot once a poll, not once for each.
func (d *Daemon) noteMoving(snap health.Snapshot) (unreadable int) {
	f := &d.polls.fast
	f.reindex(d.plan, d.cfg)
	unreadable = d.polls.upstreams.note(d.log, d.plan, snap, d.cfg.FailurePolicy, func(j int, r health.Result) { f.set(j, f.read(j, r)) })
	f.noteProbes(d.polls.probes.outcomes, len(d.cfg.VIPs))
	d.armFast()
	d.notePolling()
	return unreadable
}

// armFast runs the fast ticker while something moves, at the interval the
// budget allows, and stops it otherwise.
func (d *Daemon) armFast() {
	f := &d.polls.fast
	every := d.polls.budget.fastInterval(d.cfg)
	switch {
	case f.n == 0 || every == 0:
		if f.t != nil {
			f.t.Stop()
			f.t = nil
		}
	case f.t == nil:
		f.t, f.every = d.env.newTicker(every), every
	case f.every != every:
		f.t.Reset(every)
		f.every = every
	}
}

// fastTick polls the moving resources alone, with the probes of the VIPs
// that use them, and steps those VIPs as a tick steps every VIP: for
// them it is one more poll (rise and fall count it). The other VIPs are not
// stepped, and the other upstreams keep the regular poll's reading.
func (d *Daemon) fastTick(ctx context.Context) {
	f := &d.polls.fast
	if !d.stage.started || f.n == 0 || f.plan != d.plan || f.cfg != d.cfg {
		d.armFast()
		return
	}
	ups := d.plan.Upstreams()
	var keys []health.Upstream
	var res []int
	for j, m := range f.moving {
		if m {
			res = append(res, j)
			for _, i := range f.keysOf.of(j) {
				keys = append(keys, ups[i])
			}
		}
	}
	vips := f.vipsTouched(res)
	probed := d.fastProbes(ctx, vips)
	snap, cost := d.health.PollPlan(ctx, d.health.Plan(keys), health.PollOptions{NoList: true})
	d.polls.budget.fastCost(cost)
	probed()
	if ctx.Err() != nil {
		return // shutting down
	}
	f.polls++
	polled := d.env.now()
	// The snapshot views hold is never changed: a new one, with the
	// readings that could be read.
	merged := maps.Clone(d.polls.last.snap)
	readOK := false
	for _, j := range res {
		r := snap[ups[f.keysOf.of(j)[0]].Key]
		if r.Verdict == health.Failed || r.Verdict == health.NotFound {
			f.set(j, false) // the regular grid judges an unreadable API
			continue
		}
		readOK = true
		for _, i := range f.keysOf.of(j) {
			merged[ups[i].Key] = snap[ups[i].Key]
		}
		f.set(j, f.read(j, r))
	}
	d.armFast()
	d.notePolling()
	if readOK {
		d.stepFast(ctx, vips, merged, polled)
	}
}

// vipsTouched lists, in config order, the VIPs that use any of res.
func (f *fastPolls) vipsTouched(res []int) []int {
	var vips []int
	for _, j := range res {
		for _, v := range f.vipsOf.of(j) {
			if !slices.Contains(vips, int(v)) {
				vips = append(vips, int(v))
			}
		}
	}
	slices.Sort(vips)
	return vips
}

// fastProbes sends the probes of vips, if any has one, under the poll's
// deadline, and returns a function that waits for them and files their
// results as a regular poll's would be.
func (d *Daemon) fastProbes(ctx context.Context, vips []int) (wait func()) {
	p := &d.polls.probes
	if len(p.outcomes) != len(d.cfg.VIPs) {
		return func() {} // no VIP has a probe
	}
	var specs []probe.Spec
	var idx []int
	for _, v := range vips {
		if s := d.cfg.VIPs[v].Probe; s != nil {
			specs, idx = append(specs, *s), append(idx, v)
		}
	}
	if len(specs) == 0 {
		return func() {}
	}
	pctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	done := make(chan []probe.Result, 1)
	go func() { done <- p.src.Probe(pctx, specs) }()
	return func() {
		rs := <-done
		cancel()
		for k, v := range idx {
			var r probe.Result // a short answer counts as unreachable
			if k < len(rs) {
				r = rs[k]
			}
			p.results[v], p.outcomes[v] = r, outcomeOf(r.Outcome)
		}
	}
}

// stepFast steps the VIPs vips (config indices, ascending) by a fast
// poll's merged snapshot, then sets the interface and publishes as a tick
// does.
func (d *Daemon) stepFast(ctx context.Context, vips []int, merged health.Snapshot, polled time.Time) {
	sub := *d.cfg
	sub.VIPs = make([]config.VIP, len(vips))
	states := make([]decide.State, len(vips))
	var probes []decide.Probe
	if len(d.polls.probes.outcomes) == len(d.cfg.VIPs) {
		probes = make([]decide.Probe, len(vips))
	}
	for k, v := range vips {
		sub.VIPs[k], states[k] = d.cfg.VIPs[v], d.vs.state[v]
		if probes != nil {
			probes[k] = d.polls.probes.outcomes[v]
		}
	}
	changes := decide.TickStates(&sub, merged, probes, states)
	for k, v := range vips {
		d.vs.state[v] = states[k]
	}
	d.polls.upstreams.note(d.log, d.plan, merged, d.cfg.FailurePolicy, nil)
	d.applyChanges(ctx, changes, polled, true)
	d.polls.last.snap = merged
	d.polls.tickEnd = d.env.now()
	d.publish()
}

// noteProbes marks moving the upstreams of every VIP whose probe was up at
// the poll before and is not now (out holds one outcome per VIP of n, or
// none when no probe ran).
func (f *fastPolls) noteProbes(out []decide.Probe, n int) {
	if len(out) != n {
		f.prevProbe = f.prevProbe[:0]
		return
	}
	if len(f.prevProbe) == len(out) {
		for j := range f.vipsOf.len() {
			for _, v := range f.vipsOf.of(j) {
				if f.prevProbe[v] == decide.ProbeUp && out[v] != decide.ProbeUp {
					f.set(j, true)
				}
			}
		}
	}
	f.prevProbe = append(f.prevProbe[:0], out...)
}
