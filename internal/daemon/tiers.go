package daemon

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/verify"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// tiers is the loop's side of the lower tiers: the announcers of the
// degraded and the last-resort interfaces, the ladder that moves VIPs
// between them and the main one add before delete, and what each lower
// interface held after the last Set. The loop alone uses it. A daemon
// without either announcer sets only the main interface.
type tiers struct {
	deg, lr Announcer // nil: that interface is not managed
	ladder  vip.Ladder
	iface   vip.State // the degraded interface after the last Set
	prev    vip.State // the degraded interface before the last Set
	lrIface vip.State // the last-resort interface after the last Set
	lrPrev  vip.State // the last-resort interface before the last Set
	moved   bool      // the last Set changed what a lower interface holds
	err     string    // the last error setting the degraded interface, logged once per change
	lrErr   string    // the same for the last-resort interface
	places  map[netip.Prefix]vip.Place
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
		t.onFor, t.onCfg = cfg, cfg.FailOpen.Enabled() && t.lr != nil
		for i := range cfg.VIPs {
			t.onCfg = t.onCfg || cfg.VIPs[i].Degraded.On()
		}
	}
	return t.onCfg || len(t.iface.Present)+len(t.lrIface.Present) > 0 ||
		slices.ContainsFunc(t.iface.Foreign, announceable) || slices.ContainsFunc(t.lrIface.Foreign, announceable)
}

// on reports whether the daemon manages a lower interface.
func (t *tiers) on() bool { return t.deg != nil || t.lr != nil }

// has reports whether p is on a lower interface.
func (t *tiers) has(p netip.Prefix) bool {
	return t.deg != nil && t.iface.Has(p) || t.lr != nil && t.lrIface.Has(p)
}

// lastResort reports whether the last-resort tier is available: its
// interface is managed and exists.
func (t *tiers) lastResort() bool { return t.lr != nil && t.lrIface.Exists }

// observeLower reads the lower interfaces at start-up and seeds the ladder
// with every reading, so the first Set deletes nothing on the word of an
// empty memory. A missing interface holds nothing. It reports false when
// one could not be read (the next tick tries again).
func (d *Daemon) observeLower(ctx context.Context, main vip.State) bool {
	read := func(a Announcer, note func(error)) (vip.State, bool) {
		if a == nil {
			return vip.State{}, true
		}
		st, err := a.Observe(ctx)
		if err != nil && !errors.Is(err, vip.ErrNoInterface) {
			note(err)
			return st, false
		}
		return st, true
	}
	deg, ok := read(d.tier.deg, d.noteDegradedErr)
	if !ok {
		return false
	}
	lr, ok := read(d.tier.lr, d.noteLastResortErr)
	if !ok {
		return false
	}
	d.tier.iface, d.tier.lrIface = deg, lr
	d.tier.ladder.Last = [3]vip.State{main, deg, lr}
	return true
}

// seedTier marks as degraded the announced VIPs found on the degraded
// interface at start-up (BIRD exports a VIP on both as degraded).
func (d *Daemon) seedTier() {
	for i := range d.cfg.VIPs {
		v := &d.cfg.VIPs[i]
		if st := &d.vs.state[i]; st.Announced && v.Degraded.On() && d.tier.deg != nil && d.tier.iface.Has(v.Address) {
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
	return (after.Has(p) || t.iface.Has(p) || t.lrIface.Has(p)) != (before.Has(p) || t.prev.Has(p) || t.lrPrev.Has(p))
}

// withForeign is main with the lower interfaces' addresses added, for the
// unmanaged-address check: a host address on rhi1 or rhi2 that rhi
// neither has in its config nor is withdrawing is unmanaged there too
// (reported, and deleted under unmanaged_addresses: withdraw).
func (t *tiers) withForeign(main vip.State) vip.State {
	lower := []vip.State{t.iface, t.lrIface}
	n := 0
	for _, st := range lower {
		n += len(st.Foreign) + len(st.Present)
	}
	if !t.on() || n == 0 {
		return main
	}
	all := main
	all.Foreign, all.Present = slices.Clone(main.Foreign), slices.Clone(main.Present)
	for _, st := range lower {
		all.Foreign = append(all.Foreign, st.Foreign...)
		all.Present = append(all.Present, st.Present...)
	}
	slices.SortFunc(all.Present, netip.Prefix.Compare)
	all.Present = slices.Compact(all.Present)
	return all
}

// onAny reports whether p is on any of rhi's interfaces.
func (d *Daemon) onAny(p netip.Prefix) bool { return d.iface.Has(p) || d.tier.has(p) }

// current is where p is now: the lowest tier whose interface holds it
// (BIRD exports a VIP on two interfaces at the lower tier).
func (d *Daemon) current(p netip.Prefix) decide.Tier {
	switch {
	case d.tier.lr != nil && d.tier.lrIface.Has(p):
		return decide.TierLastResort
	case d.tier.deg != nil && d.tier.iface.Has(p):
		return decide.TierDegraded
	case d.iface.Has(p):
		return decide.TierAnnounced
	}
	return decide.TierWithdrawn
}

// setInterfaces sets the interfaces to d.owned: the main one alone
// without lower tiers; else every one, through the ladder, each VIP on the
// interface its placement names. It returns what the main interface holds
// and its error; a lower interface's error is logged once per change.
func (d *Daemon) setInterfaces(ctx context.Context) (vip.State, error) {
	t := &d.tier
	if !t.on() {
		return d.ann.Set(ctx, d.owned)
	}
	if !t.needed(d.cfg) {
		st, err := d.ann.Set(ctx, d.owned)
		t.prev, t.lrPrev, t.moved = t.iface, t.lrIface, false
		t.ladder.Last[0] = known(st, err, t.ladder.Last[0])
		return st, err
	}
	if t.places == nil {
		t.places = map[netip.Prefix]vip.Place{}
	}
	clear(t.places)
	wants := [4]bool{}
	for p, want := range d.owned {
		pl := vip.Off
		if want {
			pl = d.rung(p)
		}
		wants[pl] = true
		t.places[p] = pl
	}
	t.ladder.Main, t.ladder.Degraded, t.ladder.LastResort = d.ann, t.deg, t.lr
	mv := t.ladder.MoveSet(ctx, t.places)
	main, deg, lr := mv.State[0], mv.State[1], mv.State[2]
	degErr, lrErr := mv.Err[1], mv.Err[2]
	if errors.Is(degErr, vip.ErrNoInterface) && !wants[vip.Degraded] {
		degErr = nil // no degraded interface, and no VIP needs one
	}
	if errors.Is(lrErr, vip.ErrNoInterface) && !d.cfg.FailOpen.Enabled() {
		lrErr = nil // no last-resort interface, and no guard to need one
	}
	d.noteDegradedErr(degErr)
	d.noteLastResortErr(lrErr)
	t.prev, t.lrPrev = t.iface, t.lrIface
	t.moved = deg.Changed+lr.Changed > 0 || !slices.Equal(deg.Present, t.iface.Present) || deg.Up != t.iface.Up ||
		!slices.Equal(lr.Present, t.lrIface.Present) || lr.Up != t.lrIface.Up
	if t.deg != nil && (mv.Err[1] == nil || deg.Exists || errors.Is(mv.Err[1], vip.ErrNoInterface)) {
		t.iface = deg
	}
	if t.lr != nil && (mv.Err[2] == nil || lr.Exists || errors.Is(mv.Err[2], vip.ErrNoInterface)) {
		t.lrIface = lr
	}
	return main, mv.Err[0]
}

// rung is the interface of p's placement: a degraded VIP goes to main
// without a degraded interface, as without the tier.
func (d *Daemon) rung(p netip.Prefix) vip.Place {
	switch d.placementOf(p).Tier {
	case decide.TierDegraded:
		if d.tier.deg != nil {
			return vip.Degraded
		}
	case decide.TierLastResort:
		if d.tier.lr != nil {
			return vip.LastResort
		}
	}
	return vip.Main
}

// noteDegradedErr logs an error setting the degraded interface when it is
// news, and its clearing.
func (d *Daemon) noteDegradedErr(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == d.tier.err {
		return
	}
	d.tier.err = msg
	e := d.log.WithField("iface", d.cfg.Degraded.Interface)
	if err == nil {
		e.Info("degraded interface errors cleared")
		return
	}
	if errors.Is(err, vip.ErrNoInterface) {
		e.WithError(err).Error("the degraded interface is missing: degraded VIPs are announced at full weight from the main interface; retrying every tick")
		return
	}
	e.WithError(err).Error("cannot set VIPs on the degraded interface; retrying every tick")
}

// noteLastResortErr logs an error setting the last-resort interface when
// it is news, and its clearing.
func (d *Daemon) noteLastResortErr(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == d.tier.lrErr {
		return
	}
	d.tier.lrErr = msg
	e := d.log.WithField("iface", d.cfg.LastResort.Interface)
	if err == nil {
		e.Info("last-resort interface errors cleared")
		return
	}
	if errors.Is(err, vip.ErrNoInterface) {
		e.WithError(err).Error("the last-resort interface is missing: the tier is unavailable, and a vip whose health fails stays where it is (never withdrawn for that); retrying every tick")
		return
	}
	e.WithError(err).Error("cannot set VIPs on the last-resort interface; retrying every tick")
}

// withdrawLower deletes every owned VIP from the lower interfaces at
// shutdown (on_shutdown: withdraw). A missing one holds nothing.
func (d *Daemon) withdrawLower(ctx context.Context) error {
	var errs []error
	for _, a := range []Announcer{d.tier.deg, d.tier.lr} {
		if a == nil {
			continue
		}
		if _, err := a.Set(ctx, d.owned); err != nil && !errors.Is(err, vip.ErrNoInterface) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// announcerOf is the announcer of the interface p is on.
func (d *Daemon) announcerOf(p netip.Prefix) Announcer {
	switch {
	case d.iface.Has(p) || !d.tier.has(p):
		return d.ann
	case d.tier.deg != nil && d.tier.iface.Has(p):
		return d.tier.deg
	}
	return d.tier.lr
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
	if !d.tier.on() || len(d.tier.iface.Present)+len(d.tier.lrIface.Present) == 0 {
		return main
	}
	all := main
	all.Present = slices.Clone(main.Present)
	for _, p := range append(slices.Clone(d.tier.iface.Present), d.tier.lrIface.Present...) {
		if !main.Has(p) {
			all.Present = append(all.Present, p)
		}
	}
	slices.SortFunc(all.Present, netip.Prefix.Compare)
	all.Present = slices.Compact(all.Present)
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
	if !d.tier.on() || !(v.Degraded.On() || d.cfg.FailOpen.Enabled()) {
		return ""
	}
	if d.dryRun {
		tier = d.current(v.Address)
	}
	switch tier {
	case decide.TierDegraded:
		if d.tier.deg != nil && v.Degraded.On() {
			return verify.TierDegraded
		}
	case decide.TierLastResort:
		return verify.TierLastResort
	case decide.TierWithdrawn:
		return ""
	}
	return verify.TierFull
}

// known is what a Set says the main interface holds: st, or last when it
// could not be read at all (as vip.Ladder keeps it).
func known(st vip.State, err error, last vip.State) vip.State {
	if err != nil && !st.Exists && !errors.Is(err, vip.ErrNoInterface) {
		return last
	}
	return st
}
