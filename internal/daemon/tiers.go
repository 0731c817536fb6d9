package daemon

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// lower is one lower tier's interface: its announcer (nil: not managed),
// what it held after the last Set and before it, and the last error
// setting it, logged once per change.
type lower struct {
	ann         Announcer
	iface, prev vip.State
	err         string
}

// The lower interfaces, by index in tiers.low; a lower one's vip.Place is
// its index + 2.
const (
	degIdx = iota
	lrIdx
)

// tiers is the loop's side of the lower tiers: the degraded and the
// last-resort interfaces, and the ladder that moves VIPs between them and
// the main one add before delete. The loop alone uses it. A daemon
// without either announcer sets only the main interface.
type tiers struct {
	low    [2]lower
	ladder vip.Ladder
	moved  bool         // the last Set changed what a lower interface holds
	places []vip.Placed // scratch: every owned VIP and its place, sorted
	// onFor is the config onCfg was computed for: whether any of its VIPs
	// can be degraded, or the guard can put one in last resort.
	onFor *config.Config
	onCfg bool
}

// needed reports whether the ladder must set every interface: some VIP of
// cfg can be degraded or put in last resort, or a lower interface holds
// something of rhi's (from start-up, or a tier turned off by a reload), or
// a host address rhi does not manage (BIRD announces it at that tier: it
// must stay in view, and unmanaged_addresses: withdraw deletes it through
// the ladder). Otherwise the main interface alone is set, as without the
// tiers, at no extra cost per tick.
func (t *tiers) needed(cfg *config.Config) bool {
	if t.onFor != cfg {
		t.onFor, t.onCfg = cfg, cfg.FailOpen.Enabled() && t.low[lrIdx].ann != nil
		for i := range cfg.VIPs {
			t.onCfg = t.onCfg || cfg.VIPs[i].Degraded.On()
		}
	}
	for _, l := range t.low {
		if len(l.iface.Present) > 0 || slices.ContainsFunc(l.iface.Foreign, announceable) {
			return true
		}
	}
	return t.onCfg
}

// on reports whether the daemon manages a lower interface.
func (t *tiers) on() bool { return t.low[degIdx].ann != nil || t.low[lrIdx].ann != nil }

// holds reports whether the i-th lower interface is managed and holds p.
func (t *tiers) holds(i int, p netip.Prefix) bool {
	return t.low[i].ann != nil && t.low[i].iface.Has(p)
}

// present is what lower interface i holds that rhi manages there; none
// when it is not managed.
func (t *tiers) present(i int) []netip.Prefix {
	if t.low[i].ann == nil {
		return nil
	}
	return t.low[i].iface.Present
}

// has reports whether p is on a lower interface.
func (t *tiers) has(p netip.Prefix) bool { return t.holds(degIdx, p) || t.holds(lrIdx, p) }

// lastResort reports whether the last-resort tier is available: its
// interface is managed and exists.
func (t *tiers) lastResort() bool { return t.low[lrIdx].ann != nil && t.low[lrIdx].iface.Exists }

// observeLower reads the lower interfaces at start-up and seeds the ladder
// with every reading, so the first Set deletes nothing on the word of an
// empty memory. A missing interface holds nothing. It reports false when
// one could not be read (the next tick tries again).
func (d *Daemon) observeLower(ctx context.Context, main vip.State) bool {
	d.tier.ladder.Last[0] = main
	for i := range d.tier.low {
		l := &d.tier.low[i]
		if l.ann == nil {
			continue
		}
		st, err := l.ann.Observe(ctx)
		if err != nil && !errors.Is(err, vip.ErrNoInterface) {
			d.noteLowerErr(i, err)
			return false
		}
		l.iface, d.tier.ladder.Last[i+1] = st, st
	}
	return true
}

// seedTier marks as degraded the announced VIPs found on the degraded
// interface at start-up (BIRD exports a VIP on both as degraded).
func (d *Daemon) seedTier() {
	for i := range d.cfg.VIPs {
		v := &d.cfg.VIPs[i]
		if st := &d.vs.state[i]; st.Announced && v.Degraded.On() && d.tier.holds(degIdx, v.Address) {
			st.Degraded = true
		}
	}
}

// presenceChanged reports whether p's presence on any interface changed
// in the last Set, main going from before to after: a move between the
// interfaces is no change of presence (the tier's change has its own
// time).
func (t *tiers) presenceChanged(p netip.Prefix, after, before vip.State) bool {
	if !t.on() {
		return true // the caller saw main's presence change
	}
	now, was := after.Has(p), before.Has(p)
	for _, l := range t.low {
		now, was = now || l.iface.Has(p), was || l.prev.Has(p)
	}
	return now != was
}

// withForeign is main with the lower interfaces' addresses added, for the
// unmanaged-address check: a host address on rhi1 or rhi2 that rhi
// neither has in its config nor is withdrawing is unmanaged there too
// (reported, and deleted under unmanaged_addresses: withdraw).
func (t *tiers) withForeign(main vip.State) vip.State {
	all, cloned := main, false
	for _, l := range t.low {
		if len(l.iface.Foreign)+len(l.iface.Present) == 0 {
			continue
		}
		if !cloned { // main's slices are the caller's
			all.Foreign, all.Present, cloned = slices.Clone(main.Foreign), slices.Clone(main.Present), true
		}
		all.Foreign = append(all.Foreign, l.iface.Foreign...)
		all.Present = append(all.Present, l.iface.Present...)
	}
	if cloned {
		slices.SortFunc(all.Present, netip.Prefix.Compare)
		all.Present = slices.Compact(all.Present)
	}
	return all
}

// onAny reports whether p is on any of rhi's interfaces.
func (d *Daemon) onAny(p netip.Prefix) bool { return d.ifc.iface.Has(p) || d.tier.has(p) }

// current is where p is now: the lowest tier whose interface holds it
// (BIRD exports a VIP on two interfaces at the lower tier).
func (d *Daemon) current(p netip.Prefix) decide.Tier {
	switch {
	case d.tier.holds(lrIdx, p):
		return decide.TierLastResort
	case d.tier.holds(degIdx, p):
		return decide.TierDegraded
	case d.ifc.iface.Has(p):
		return decide.TierAnnounced
	}
	return decide.TierWithdrawn
}

// tierAt names the tiers currentAll writes as bytes: a byte per VIP
// keeps its buffer at 10 KB for 10,000 VIPs, where a decide.Tier each
// would hold 160 KB between ticks.
var tierAt = [...]decide.Tier{decide.TierWithdrawn, decide.TierLastResort, decide.TierDegraded, decide.TierAnnounced}

// currentAll is current for every configured VIP, in config order, as an
// index into tierAt, into buf: one walk of the interfaces' sorted lists
// over the VIPs sorted by address (vipStates.order), where current's
// binary searches per VIP took a third of a steady tick at 10,000 VIPs.
// Same precedence as current. The VIPs and the lists hold host prefixes
// only, whose order is their addresses' (one length per family), so it
// compares addresses: Prefix.Compare masks both sides first, which costs
// more than the rest of the walk.
func (d *Daemon) currentAll(buf []uint8) []uint8 {
	vips, order := d.vs.vips, d.vs.order
	lists := d.currentLists()
	buf = slices.Grow(buf[:0], len(vips))[:len(vips)]
	var at [len(lists)]int
	for _, pos := range order {
		a := vips[pos].Address.Addr()
		buf[pos] = 0
		for l, ps := range lists {
			c := -1
			for at[l] < len(ps) {
				if c = ps[at[l]].Addr().Compare(a); c >= 0 {
					break
				}
				at[l]++
			}
			if c == 0 {
				buf[pos] = uint8(l + 1)
				break
			}
		}
	}
	return buf
}

// currentLists are the interfaces' lists currentAll walks, in tierAt[1:]'s
// order.
func (d *Daemon) currentLists() [3][]netip.Prefix {
	return [...][]netip.Prefix{d.tier.present(lrIdx), d.tier.present(degIdx), d.ifc.iface.Present}
}

// setInterfaces sets the interfaces to d.set.want: the main one alone
// without lower tiers; else every one, through the ladder, each VIP on the
// interface its placement names. It returns what the main interface holds
// and its error; a lower interface's error is logged once per change.
func (d *Daemon) setInterfaces(ctx context.Context) (vip.State, error) {
	t := &d.tier
	if !t.on() {
		return d.ann.Set(ctx, d.set.want)
	}
	if !t.needed(d.cfg) && len(d.drains.gr.until) == 0 && !d.stage.stopping { // a drain's grace steps down to last resort
		st, err := d.ann.Set(ctx, d.set.want)
		for i := range t.low {
			t.low[i].prev = t.low[i].iface
		}
		t.moved, t.ladder.Last[0] = false, known(st, err, t.ladder.Last[0])
		return st, err
	}
	var wants [4]bool
	t.places = t.places[:0]
	w := d.set.want
	for len(w.Present)+len(w.Absent) > 0 { // the two sorted lists, merged
		var pl vip.Placed
		if len(w.Absent) == 0 || len(w.Present) > 0 && w.Present[0].Compare(w.Absent[0]) < 0 {
			pl, w.Present = vip.Placed{Prefix: w.Present[0], Place: d.rung(w.Present[0])}, w.Present[1:]
		} else {
			pl, w.Absent = vip.Placed{Prefix: w.Absent[0], Place: vip.Off}, w.Absent[1:]
		}
		wants[pl.Place] = true
		t.places = append(t.places, pl)
	}
	t.ladder.Main, t.ladder.Degraded, t.ladder.LastResort = d.ann, t.low[degIdx].ann, t.low[lrIdx].ann
	mv := t.ladder.MoveSet(ctx, t.places)
	t.moved = false
	for i := range t.low {
		l, st, err := &t.low[i], mv.State[i+1], mv.Err[i+1]
		if l.ann == nil {
			continue
		}
		missing := errors.Is(err, vip.ErrNoInterface)
		// No degraded interface while no VIP needs one, or no last-resort
		// one without a guard to need it: nothing to say.
		quiet := missing && (i == degIdx && !wants[vip.Degraded] || i == lrIdx && !d.cfg.FailOpen.Enabled())
		if quiet {
			d.noteLowerErr(i, nil)
		} else {
			d.noteLowerErr(i, err)
		}
		t.moved = t.moved || st.Changed > 0 || !slices.Equal(st.Present, l.iface.Present) || st.Up != l.iface.Up
		l.prev = l.iface
		if err == nil || st.Exists || missing {
			l.iface = st
		}
	}
	return mv.State[0], mv.Err[0]
}

// rung is the interface of p's placement: a degraded VIP goes to main
// without a degraded interface, as without the tier.
func (d *Daemon) rung(p netip.Prefix) vip.Place {
	switch d.placementOf(p).Tier {
	case decide.TierDegraded:
		if d.tier.low[degIdx].ann != nil {
			return vip.Degraded
		}
	case decide.TierLastResort:
		if d.tier.low[lrIdx].ann != nil {
			return vip.LastResort
		}
	}
	return vip.Main
}

// noteLowerErr logs err, an error setting the i-th lower interface, when
// it is news, and its clearing.
func (d *Daemon) noteLowerErr(i int, err error) {
	l := &d.tier.low[i]
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == l.err {
		return
	}
	l.err = msg
	tier, iface, missing := "degraded", d.cfg.Degraded.Interface, "degraded VIPs are announced at full weight from the main interface"
	if i == lrIdx {
		tier, iface, missing = "last-resort", d.cfg.LastResort.Interface, "the tier is unavailable, and a vip whose health fails stays where it is (never withdrawn for that)"
	}
	e := d.log.WithField("iface", iface)
	switch {
	case err == nil:
		e.Info(tier + " interface errors cleared")
	case errors.Is(err, vip.ErrNoInterface):
		e.WithError(err).Error("the " + tier + " interface is missing: " + missing + "; retrying every tick")
	default:
		e.WithError(err).Error("cannot set VIPs on the " + tier + " interface; retrying every tick")
	}
}

// withdrawLower deletes every owned VIP from the lower interfaces at
// shutdown (on_shutdown: withdraw). A missing one holds nothing.
func (d *Daemon) withdrawLower(ctx context.Context) error {
	var errs []error
	for i := range d.tier.low {
		l := &d.tier.low[i]
		if l.ann == nil {
			continue
		}
		st, err := l.ann.Set(ctx, d.set.want)
		missing := errors.Is(err, vip.ErrNoInterface)
		if err == nil || st.Exists || missing {
			l.iface = st // else it could not be read: keep the last view
		}
		if err != nil && !missing {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// announcerOf is the announcer of the interface p is on.
func (d *Daemon) announcerOf(p netip.Prefix) Announcer {
	for i := range d.tier.low {
		if !d.ifc.iface.Has(p) && d.tier.holds(i, p) {
			return d.tier.low[i].ann
		}
	}
	return d.ann
}

// logTierChange logs a move between announced and degraded of a VIP that
// stays announced.
func (d *Daemon) logTierChange(e *logrus.Entry, c decide.Change) {
	if c.To.Degraded {
		e.WithField("action", "degrade").Info("vip below its healthy share: announcing it degraded")
		return
	}
	e.WithField("action", "restore").Info("vip back above its healthy share: announcing it at full weight")
}

// allIfaces is main with the lower interfaces' VIPs added to Present, for
// the ownership record at start-up: an address rhi recorded is rhi's on
// any of its interfaces.
func (d *Daemon) allIfaces(main vip.State) vip.State {
	all := main
	all.Foreign = nil
	all = d.tier.withForeign(all)
	all.Foreign = main.Foreign
	return all
}

// renderTier fills the tier fields of vs from the VIP's placement and
// where it is. OnInterface counts every interface, so that it keeps
// meaning "announced from this host".
func renderTier(vs *status.VIPStatus, v *view, p netip.Prefix) {
	vs.OnDegraded = v.degraded.Has(p)
	vs.OnLastResort = v.lastResort.Has(p)
	vs.OnInterface = vs.OnInterface || vs.OnDegraded || vs.OnLastResort
}

// tierExpected is how BIRD must export the i-th VIP, placed at tier: the
// tier whose attributes verify checks while the config uses the tiers
// (the VIP can be degraded, or the guard is on), "" (not checked)
// otherwise or when it is withdrawn. A dry run holds BIRD to the
// interfaces as they are.
func (d *Daemon) tierExpected(i int, tier decide.Tier) string {
	v := &d.cfg.VIPs[i]
	// A drain's grace puts the VIP in last resort with neither tier on.
	if !d.tier.on() || !(v.Degraded.On() || d.cfg.FailOpen.Enabled() || tier == decide.TierLastResort) {
		return ""
	}
	if d.env.dryRun {
		tier = d.current(v.Address)
	}
	switch tier {
	case decide.TierDegraded:
		if d.tier.low[degIdx].ann != nil && v.Degraded.On() {
			return router.TierDegraded
		}
	case decide.TierLastResort:
		return router.TierLastResort
	case decide.TierWithdrawn:
		return ""
	}
	return router.TierFull
}

// known is what a Set says the main interface holds: st, or last when it
// could not be read at all (as vip.Ladder keeps it).
func known(st vip.State, err error, last vip.State) vip.State {
	if err != nil && !st.Exists && !errors.Is(err, vip.ErrNoInterface) {
		return last
	}
	return st
}
