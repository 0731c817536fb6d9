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

// tiers is the loop's side of the degraded tier (issue 14): the announcer
// of the degraded interface, the pair that moves VIPs between it and the
// main one add before delete, and what the degraded interface held after
// the last Set. The loop alone uses it. A daemon without Deps.Degraded has
// none and sets only the main interface, as before the tier.
type tiers struct {
	ann    Announcer // nil: no degraded interface is managed
	pair   vip.Pair
	iface  vip.State // the degraded interface after the last Set
	prev   vip.State // the degraded interface before the last Set
	moved  bool      // the last Set changed what the degraded interface holds
	err    string    // the last error setting it, logged once per change
	places map[netip.Prefix]vip.Place
	// onFor is the config onCfg was computed for: whether any of its VIPs
	// can be degraded.
	onFor *config.Config
	onCfg bool
}

// needed reports whether the pair must set both interfaces: some VIP of
// cfg can be degraded, or the degraded interface holds something of rhi's
// (from start-up, or a tier turned off by a reload), or a host address rhi
// does not manage (BIRD announces it degraded: it must stay in view, and
// unmanaged_addresses: withdraw deletes it through the pair). Otherwise
// the main interface alone is set, as without the tier, at no extra cost
// per tick.
func (t *tiers) needed(cfg *config.Config) bool {
	if t.onFor != cfg {
		t.onFor, t.onCfg = cfg, false
		for i := range cfg.VIPs {
			t.onCfg = t.onCfg || cfg.VIPs[i].Degraded.On()
		}
	}
	return t.onCfg || len(t.iface.Present) > 0 || slices.ContainsFunc(t.iface.Foreign, announceable)
}

// on reports whether the daemon manages a degraded interface.
func (t *tiers) on() bool { return t.ann != nil }

// has reports whether p is on the degraded interface.
func (t *tiers) has(p netip.Prefix) bool { return t.on() && t.iface.Has(p) }

// observeDegraded reads the degraded interface at start-up and seeds the
// pair with both readings, so the first Set deletes nothing on the word of
// an empty memory. A missing degraded interface holds nothing. It reports
// false when the interface could not be read (the next tick tries again).
func (d *Daemon) observeDegraded(ctx context.Context, main vip.State) bool {
	if !d.tier.on() {
		return true
	}
	st, err := d.tier.ann.Observe(ctx)
	if err != nil && !errors.Is(err, vip.ErrNoInterface) {
		d.noteDegradedErr(err)
		return false
	}
	d.tier.iface = st
	d.tier.pair.LastMain, d.tier.pair.LastDegraded = main, st
	return true
}

// seedTier marks as degraded the announced VIPs found on the degraded
// interface at start-up (BIRD exports a VIP on both as degraded).
func (d *Daemon) seedTier() {
	for i := range d.cfg.VIPs {
		v := &d.cfg.VIPs[i]
		if st := &d.vs.state[i]; st.Announced && v.Degraded.On() && d.tier.has(v.Address) {
			st.Degraded = true
		}
	}
}

// presenceChanged reports whether p's presence on either interface
// changed in the last Set, main going from before to after: a move
// between the interfaces is no change of presence (the tier's change has
// its own time).
func (t *tiers) presenceChanged(p netip.Prefix, after, before vip.State) bool {
	if !t.on() {
		return true // the caller saw main's presence change
	}
	return (after.Has(p) || t.iface.Has(p)) != (before.Has(p) || t.prev.Has(p))
}

// withForeign is main with the degraded interface's addresses added, for
// the unmanaged-address check: a host address on rhi1 that rhi neither
// has in its config nor is withdrawing is unmanaged there too (reported,
// and deleted under unmanaged_addresses: withdraw).
func (t *tiers) withForeign(main vip.State) vip.State {
	if !t.on() || len(t.iface.Foreign)+len(t.iface.Present) == 0 {
		return main
	}
	both := main
	both.Foreign = append(slices.Clone(main.Foreign), t.iface.Foreign...)
	both.Present = append(slices.Clone(main.Present), t.iface.Present...)
	slices.SortFunc(both.Present, netip.Prefix.Compare)
	both.Present = slices.Compact(both.Present)
	return both
}

// onEither reports whether p is on the main or the degraded interface.
func (d *Daemon) onEither(p netip.Prefix) bool { return d.iface.Has(p) || d.tier.has(p) }

// setInterfaces sets the interface(s) to d.owned: the main one alone
// without a degraded tier; else both, through the pair, each VIP on the
// interface its tier names. It returns what the main interface holds and
// its error; the degraded interface's error is logged once per change.
func (d *Daemon) setInterfaces(ctx context.Context) (vip.State, error) {
	if !d.tier.on() {
		return d.ann.Set(ctx, d.owned)
	}
	if !d.tier.needed(d.cfg) {
		st, err := d.ann.Set(ctx, d.owned)
		d.tier.prev, d.tier.moved = d.tier.iface, false
		d.tier.pair.LastMain = known(st, err, d.tier.pair.LastMain)
		return st, err
	}
	if d.tier.places == nil {
		d.tier.places = map[netip.Prefix]vip.Place{}
	}
	clear(d.tier.places)
	anyDegraded := false
	for p, want := range d.owned {
		pl := vip.Off
		if want {
			pl = vip.Main
			if d.vs.get(p).Degraded {
				pl, anyDegraded = vip.Degraded, true
			}
		}
		d.tier.places[p] = pl
	}
	d.tier.pair.Main, d.tier.pair.Degraded = d.ann, d.tier.ann
	main, deg, mainErr, degErr := d.tier.pair.MoveSet(ctx, d.tier.places)
	if errors.Is(degErr, vip.ErrNoInterface) && !anyDegraded {
		degErr = nil // no degraded interface, and no VIP needs one
	}
	d.noteDegradedErr(degErr)
	d.tier.prev = d.tier.iface
	d.tier.moved = deg.Changed > 0 || !slices.Equal(deg.Present, d.tier.iface.Present) || deg.Up != d.tier.iface.Up
	if degErr == nil || deg.Exists || errors.Is(degErr, vip.ErrNoInterface) {
		d.tier.iface = deg
	}
	return main, mainErr
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

// withdrawDegraded deletes every owned VIP from the degraded interface at
// shutdown (on_shutdown: withdraw).
func (d *Daemon) withdrawDegraded(ctx context.Context) error {
	if !d.tier.on() {
		return nil
	}
	st, err := d.tier.ann.Set(ctx, d.owned)
	d.tier.iface = st
	if errors.Is(err, vip.ErrNoInterface) {
		return nil
	}
	return err
}

// announcerOf is the announcer of the interface p is on.
func (d *Daemon) announcerOf(p netip.Prefix) Announcer {
	if d.tier.has(p) && !d.iface.Has(p) {
		return d.tier.ann
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

// bothIfaces is main with the degraded interface's VIPs added to Present,
// for the ownership record at start-up: an address rhi recorded is rhi's on
// either interface.
func (d *Daemon) bothIfaces(main vip.State) vip.State {
	if !d.tier.on() || len(d.tier.iface.Present) == 0 {
		return main
	}
	both := main
	both.Present = slices.Clone(main.Present)
	for _, p := range d.tier.iface.Present {
		if !main.Has(p) {
			both.Present = append(both.Present, p)
		}
	}
	slices.SortFunc(both.Present, netip.Prefix.Compare)
	return both
}

// renderTier fills the degraded tier's fields of vs: the tier rhi wants
// (drain included), and where the VIP is. OnInterface counts either
// interface, so that it keeps meaning "announced from this host".
func renderTier(vs *status.VIPStatus, v *view, p netip.Prefix, st decide.State) {
	vs.OnDegraded = v.degraded.Has(p)
	vs.OnInterface = vs.OnInterface || vs.OnDegraded
	vs.Tier = decide.TierWithdrawn
	if vs.Desired {
		vs.Tier = st.Tier()
	}
}

// tierExpected is how BIRD must export the i-th VIP when want says it is
// present: verify.TierDegraded or verify.TierFull while its tier is on, ""
// (not checked) otherwise. A dry run holds BIRD to the interface as it is.
func (d *Daemon) tierExpected(i int, want bool) string {
	v := &d.cfg.VIPs[i]
	if !want || !d.tier.on() || !v.Degraded.On() {
		return ""
	}
	degraded := d.vs.get(v.Address).Degraded
	if d.dryRun {
		degraded = d.tier.has(v.Address)
	}
	if degraded {
		return verify.TierDegraded
	}
	return verify.TierFull
}

// known is what a Set says the main interface holds: st, or last when it
// could not be read at all (as vip.Pair keeps it).
func known(st vip.State, err error, last vip.State) vip.State {
	if err != nil && !st.Exists && !errors.Is(err, vip.ErrNoInterface) {
		return last
	}
	return st
}
