package daemon

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/place"
	"github.com/rhi-daemon/rhi/internal/probe"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// view is what one tick leaves for Status; it is never mutated while a
// reader may read it (views).
type view struct {
	cfg        *config.Config
	run        pollRun
	vips       vipRecs // one per cfg.VIPs, in its order
	iface      vip.State
	writes     ifaceWrites
	stats      pollStats
	orphans    []netip.Prefix // sorted; nil when there are none
	drained    drain.Set      // replaced, never mutated, by the loop
	drainErr   string
	tickEnd    time.Time
	unmanaged  []netip.Prefix // sorted; shared with the loop, which replaces it
	recordErr  string
	probes     []probe.Result             // per VIP, as vips; zero for a VIP without a probe
	degraded   vip.State                  // the degraded interface; zero without one
	lastResort vip.State                  // the last-resort interface; zero without one
	viewErr    string                     // why the fail-open guard's view is unknown; "" if known or off
	viewAt     time.Time                  // when BIRD last answered the guard
	graces     map[netip.Prefix]time.Time // drain_grace deadlines still running; nil if none
	readers    atomic.Int32               // readers in views.read; the loop refills it only at 0
}

// vipRecs is the loop's per-VIP state in a view, in config order: a copy
// of the loop's states and its since and flips, shared with the loop
// (vipStates.touch copies them before it changes them), all empty before
// the loop is seeded, each VIP's placement, and the fail-open guard's
// runs only while the guard is enabled. Slices rather than a record per
// VIP, and the decide.State packed, so that a view at 10,000 VIPs keeps
// about 100 bytes a VIP without the guard.
type vipRecs struct {
	state  []packedState
	other  map[int]decide.State // the states that do not pack, by position
	since  []time.Time
	flips  []uint32
	placed []uint8     // vipStates.placed
	kinds  placeKinds  // vipStates.kinds, shared: it only grows
	runs   []guard.Run // nil unless cfg.FailOpen is enabled
}

// packedState is a decide.State in 16 bytes instead of 64: its reason as
// an index in packReasons, its verdict in a byte, its counts in 32 bits
// (a count that does not fit, ~68 years of 1 s polls, is kept whole).
type packedState struct {
	streak, failedPolls, tierStreak int32
	verdict                         int8
	reason                          uint8
	announced, degraded             bool
}

// packReasons are the reasons a packedState can hold: every one package
// decide has, and the zero State's.
var packReasons = [...]decide.Reason{"", decide.ReasonInitial, decide.ReasonHealthy, decide.ReasonUnhealthy,
	decide.ReasonRising, decide.ReasonFalling, decide.ReasonUnknown, decide.ReasonPolicyWithdraw,
	decide.ReasonPolicyAnnounce, decide.ReasonDegraded}

// pack returns s packed, and false when it cannot be (a reason or verdict
// unknown here, a count beyond 32 bits): the caller keeps s whole then.
func pack(s decide.State) (packedState, bool) {
	p := packedState{
		streak: int32(s.Streak), failedPolls: int32(s.FailedPolls), tierStreak: int32(s.TierStreak),
		verdict: int8(s.Verdict), announced: s.Announced, degraded: s.Degraded,
	}
	fits := int(p.streak) == s.Streak && int(p.failedPolls) == s.FailedPolls && int(p.tierStreak) == s.TierStreak
	for i := range packReasons {
		if packReasons[i] == s.Reason {
			p.reason = uint8(i)
			return p, fits && decide.Availability(p.verdict) == s.Verdict
		}
	}
	return p, false
}

// unpack is the decide.State that pack was given.
func (p packedState) unpack() decide.State {
	return decide.State{
		Announced: p.announced, Verdict: decide.Availability(p.verdict), Reason: packReasons[p.reason],
		Streak: int(p.streak), FailedPolls: int(p.failedPolls), Degraded: p.degraded, TierStreak: int(p.tierStreak),
	}
}

// vipRec is one VIP in a view: what the loop's state says of it.
type vipRec struct {
	state  decide.State
	since  time.Time
	flips  uint64
	placed place.Placement
	run    guard.Run // the fail-open guard's run
}

// at is the i-th VIP's record; zero before the loop is seeded.
func (r *vipRecs) at(i int) vipRec {
	var rec vipRec
	if i < len(r.state) {
		rec.state, rec.since, rec.flips = r.state[i].unpack(), r.since[i], uint64(r.flips[i])
		if s, ok := r.other[i]; ok {
			rec.state = s
		}
	}
	if i < len(r.placed) {
		rec.placed = r.kinds.of(r.placed[i])
	}
	if i < len(r.runs) {
		rec.run = r.runs[i]
	}
	return rec
}

// fill copies the loop's state into r, reusing r's slices, and shares its
// since and flips.
func (r *vipRecs) fill(d *Daemon) {
	r.state, r.since, r.flips, r.placed, r.runs = r.state[:0], nil, nil, r.placed[:0], r.runs[:0]
	clear(r.other)
	if !d.vs.ready {
		return
	}
	r.state = slices.Grow(r.state, len(d.vs.state))
	for i, s := range d.vs.state {
		p, ok := pack(s)
		if !ok {
			if r.other == nil {
				r.other = map[int]decide.State{}
			}
			r.other[i] = s
		}
		r.state = append(r.state, p)
	}
	r.since, r.flips = d.vs.since, d.vs.flips
	d.vs.shared = true
	r.placed, r.kinds = append(r.placed, d.vs.placed...), d.vs.kinds
	if !d.cfg.FailOpen.Enabled() {
		r.runs = nil // renderFailOpen reads none
		return
	}
	for i := range d.cfg.VIPs {
		r.runs = append(r.runs, d.fo.runs.Of(d.cfg.VIPs[i].Address))
	}
}

// views hands the loop's results to Status without a lock the loop could
// wait on: publish swaps a pointer, whatever readers are doing. Two views
// take turns, so that a tick at 10,000 VIPs fills a slice already grown
// instead of allocating: the spare is the view published before the
// current one, reused only when no reader holds it (a reader counts itself
// in view.readers before it reads, and reads only if the view is still
// the current one then); one still read is left to its readers and a new
// view is filled instead.
type views struct {
	cur   atomic.Pointer[view] // what Status renders; nil before the first tick
	spare *view                // the previous view, for next (loop only)
	pubs  atomic.Uint64        // publishes so far: the status's version
}

// next returns a view for the loop to fill: the spare if no reader holds
// it, else a new one.
func (vs *views) next() *view {
	if vs.spare == nil || vs.spare.readers.Load() != 0 {
		vs.spare = nil
		return &view{}
	}
	return vs.spare
}

// publish makes v, from next, the view readers see.
func (vs *views) publish(v *view) {
	old := vs.cur.Swap(v)
	vs.pubs.Add(1)
	vs.spare = old
	if old != nil && old.readers.Load() == 0 {
		// No reader holds it, and none can start to (cur is v): let its
		// poll's snapshot and its config go (at 10,000 VIPs a snapshot
		// is ~1 MiB; after a reload the old config too), keeping only
		// the slices next reuses.
		old.run, old.cfg = pollRun{}, nil
	}
}

// read calls f with the view published last, nil before the first: f
// must not keep it, since publish may reuse it once f has returned.
func (vs *views) read(f func(*view)) {
	for {
		v := vs.cur.Load()
		if v == nil {
			f(nil)
			return
		}
		v.readers.Add(1)
		if vs.cur.Load() == v { // still current: next will not hand it out while counted
			defer v.readers.Add(-1)
			f(v)
			return
		}
		v.readers.Add(-1) // replaced meanwhile: read the new one
	}
}

// publish makes the loop's state after a tick visible to Status. A view
// keeps a compact record per VIP, in config order, rather than copies of
// the loop's maps.
func (d *Daemon) publish() {
	v := d.views.next()
	v.vips.fill(d)
	v.cfg, v.run, v.iface, v.writes, v.stats = d.cfg, d.polls.last, d.ifc.iface, d.ifc.writes, d.polls.stats
	v.probes = append(v.probes[:0], d.polls.probes.results...)
	v.orphans = v.orphans[:0]
	for p := range d.set.orphans {
		v.orphans = append(v.orphans, p)
	}
	slices.SortFunc(v.orphans, netip.Prefix.Compare)
	v.unmanaged, v.recordErr = d.unmanaged.list, d.own.err
	v.drained, v.drainErr, v.tickEnd = d.drains.drained, d.drains.drainErr, d.polls.tickEnd
	v.degraded, v.lastResort = d.tier.low[degIdx].iface, d.tier.low[lrIdx].iface
	v.viewErr, v.viewAt = d.viewUnknown(), d.fo.last.At
	v.graces = d.graceDeadlines()
	d.views.publish(v)
}

// Status renders the last tick's results. It is safe to call from any
// goroutine; before the first tick it reports Ready false.
func (d *Daemon) Status() status.Status {
	s := status.Status{SchemaVersion: status.SchemaVersion, DryRun: d.env.dryRun}
	d.views.read(func(v *view) {
		if v != nil {
			d.render(&s, v)
		}
	})
	return s
}

// The status handlers find StatusVersion by this interface.
var _ status.Versioned = (*Daemon)(nil)

// StatusVersion grows whenever Status would say something new: at each
// publish and each check of BIRD recorded. It takes no lock the loop
// holds; it is safe to call from any goroutine.
func (d *Daemon) StatusVersion() (uint64, bool) {
	v := d.views.pubs.Load()
	if d.conf != nil {
		v += d.conf.Checks()
	}
	return v, true
}

// The watchdog and /healthz find Summary by this interface.
var _ status.Summarizer = (*Daemon)(nil)

// Summary is Status without what it says of each VIP and address: no
// VIPs, no Interface.Foreign, Withdrawing or Unmanaged, Drain.Count 0;
// the rest as Status has it. The systemd watchdog and /healthz read only
// the top-level fields, and at 10,000 VIPs Status builds ~5 MB for them
// to throw away. It is safe to call from any goroutine.
func (d *Daemon) Summary() status.Status {
	s := status.Status{SchemaVersion: status.SchemaVersion, DryRun: d.env.dryRun}
	d.views.read(func(v *view) {
		if v != nil {
			d.renderSummary(&s, v)
		}
	})
	return s
}

// renderSummary fills s from v as Summary says, and returns the
// confirmer's records of the same results as s.Bird (none without a
// confirmer).
func (d *Daemon) renderSummary(s *status.Status, v *view) confirm.Records {
	s.Ready, s.LastTick = true, v.tickEnd
	s.Interface = status.InterfaceStatus{
		Name: v.cfg.Interface, Exists: v.iface.Exists, Up: v.iface.Up,
		Error: v.writes.err, WriteErrors: v.writes.failed, FailedWrites: v.writes.run,
		RecordError: v.recordErr,
	}
	s.ControlAPI = status.APIStatus{
		URL: v.cfg.ControlURL, PollInterval: v.cfg.PollInterval, Timeout: v.cfg.Timeout,
		LastPoll: v.run.start, PollDuration: v.run.end.Sub(v.run.start),
		Upstreams: v.run.resources, ConsecutiveFailedPolls: v.stats.failed,
		Polls: v.stats.polls, FailedPolls: v.stats.failedAll, Unreadable: v.stats.unreadable,
		MaxFailedPolls: v.cfg.FailurePolicy.MaxFailedPolls, LastSettled: v.stats.settledAt, UnsettledPolls: v.stats.unsettled,
		Polling: v.stats.polling,
	}
	s.Drain = status.DrainStatus{File: v.cfg.DrainFile, All: v.drained.All, Error: v.drainErr}
	s.FailOpen = guardStatus(v)
	var rs confirm.Records
	if d.conf != nil {
		s.Bird, rs = d.conf.results()
	}
	return rs
}

// render fills s from v and the confirmer's last results.
func (d *Daemon) render(s *status.Status, v *view) {
	rs := d.renderSummary(s, v)
	confirms := func(int, netip.Prefix) (confirm.VIP, bool) { return confirm.VIP{}, false }
	if d.conf != nil {
		confirms = rs.Lookup()
	}
	s.Interface.Withdrawing = prefixStrings(v.orphans)
	s.Interface.Unmanaged = prefixStrings(v.unmanaged)
	s.Interface.Foreign = prefixStrings(v.iface.Foreign)
	for _, p := range v.iface.ForeignPeers {
		s.Interface.Foreign = append(s.Interface.Foreign, p.String()) // "10.9.0.1 peer 10.9.0.2/32"
	}
	s.VIPs = make([]status.VIPStatus, 0, len(v.cfg.VIPs))
	for i := range v.cfg.VIPs {
		vs := renderVIP(v, i)
		if vc, ok := confirms(i, v.cfg.VIPs[i].Address); ok {
			vs.Bird = wireConfirm(vc)
		}
		if vs.Drained {
			s.Drain.Count++
		}
		s.VIPs = append(s.VIPs, vs)
	}
}

// renderVIP is the status of v's i-th VIP, without BIRD's view of it.
func renderVIP(v *view, i int) status.VIPStatus {
	c := &v.cfg.VIPs[i]
	rec := v.vips.at(i)
	st, pl := rec.state, rec.placed
	if pl.Tier == "" { // not placed yet
		pl = place.Placement{Tier: decide.TierWithdrawn, Reason: st.Reason}
	}
	vs := status.VIPStatus{
		Address: c.Address.String(), Description: c.Description, Condition: string(c.Condition),
		Verdict: st.Verdict, Reason: pl.Reason, Desired: pl.Tier.Present(), Tier: pl.Tier,
		Drained:     v.drained.Has(c.Address),
		OnInterface: v.iface.Has(c.Address), Since: rec.since,
		FailedPolls: st.FailedPolls, Streak: st.Streak, Transitions: rec.flips,
	}
	renderTier(&vs, v, c.Address)
	renderDrain(&vs, v, c.Address, pl)
	renderFailOpen(&vs, v, rec.run)
	for _, u := range c.Upstreams {
		r := v.run.snap[u.Key]
		us := status.UpstreamStatus{Key: u.Key, Verdict: r.Verdict.String(), Healthy: int(r.Healthy), Nodes: int(r.Total)}
		if r.Err != nil {
			us.Error = r.Err.Error()
		}
		if !u.MinHealthy.IsZero() {
			us.MinHealthy, us.Needed = u.MinHealthy.String(), decide.Needed(u.MinHealthy, int(r.Total))
		}
		vs.Upstreams = append(vs.Upstreams, us)
	}
	if c.Probe != nil && i < len(v.probes) {
		vs.Probe = probeStatus(*c.Probe, v.probes[i])
	}
	return vs
}

// prefixStrings is ps as text; nil for none, so that JSON leaves it out.
func prefixStrings(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
