package daemon

import (
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/place"
)

// placeAll places every VIP on the ladder (place.Place) from its health,
// drain, the guard's verdict, where it is and the phase, and reports
// whether a placement changed. Everything that acts on a VIP or shows it
// reads d.vs.placed; nothing else combines those inputs.
func (d *Daemon) placeAll() bool {
	if !d.vs.ready {
		return false
	}
	fo := d.cfg.FailOpen.Enabled()
	in := place.Input{FailOpen: fo, LastResort: d.tier.lastResort(), Phase: d.phase()}
	now := d.env.now()
	changed := false
	if k := keyOf(d.currentLists(), d.vs.vips); k != d.vs.curOf || len(d.vs.cur) != len(d.vs.vips) {
		d.vs.cur, d.vs.curOf = d.currentAll(d.vs.cur), k
	}
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		in.Health, in.Drained, in.Current, in.Guard = d.vs.state[i], d.drains.drained.Has(p), tierAt[d.vs.cur[i]], 0
		if fo && !in.Health.Announced {
			in.Guard = d.verdict(p)
		}
		d.graceInput(&in, p, now)
		d.noteNoLastResort(p, &in)
		pl := place.Place(&in)
		if old := d.vs.placement(i); d.vs.place(i, pl) {
			changed = true
			if old.Tier != "" {
				d.logPlacement(p, old, pl)
			}
		}
	}
	d.armGrace(now)
	return changed
}

// placementOf is p's placement; withdrawn if p is not a configured VIP or
// the state is not seeded yet.
func (d *Daemon) placementOf(p netip.Prefix) place.Placement {
	if i, ok := d.vs.at(p); ok {
		return d.vs.placement(i)
	}
	return place.Placement{Tier: decide.TierWithdrawn}
}

// logPlacement logs the changes of placement that the guard made or that
// the last-resort tier's absence forced; health's own changes are logged
// by logChange.
func (d *Daemon) logPlacement(p netip.Prefix, from, to place.Placement) {
	e := d.log.WithFields(logrus.Fields{"vip": p.String(), "tier": string(to.Tier), "from": string(from.Tier), "reason": string(to.Reason)})
	if r := d.fo.runs.Of(p); d.cfg.FailOpen.Enabled() {
		e = e.WithFields(logrus.Fields{"other_sites": r.Sites, "min_other_sites": d.cfg.FailOpen.MinOtherSites})
	}
	switch to.Reason {
	case place.ReasonFailOpen, place.ReasonGuardUnknown, place.ReasonStarting:
		if from.Tier == decide.TierLastResort {
			e.Debug("vip stays in last resort")
			return
		}
		e.WithField("action", "last_resort").Warn("fail-open guard: vip unavailable and too few other sites are known to serve it; announcing it in last resort")
	case place.ReasonOthersServing:
		e.WithField("action", "withdraw").Info("fail-open guard: enough other sites serve the vip; withdrawing it")
	case place.ReasonDraining:
		e.WithFields(logrus.Fields{"action": "last_resort", "until": d.drains.gr.until[p].Format(time.RFC3339Nano)}).
			Info("vip drained: announced in last resort (GRACEFUL_SHUTDOWN) until its drain_grace ends, then withdrawn")
	case place.ReasonDrained:
		if from.Reason == place.ReasonDraining {
			e.WithField("action", "withdraw").Info("drain grace over: withdrawing the vip")
		}
	case place.ReasonNoLastResort:
		e.WithField("action", "keep").Error("fail-open guard: the vip belongs in last resort but the last-resort interface is missing; keeping it where it is")
	}
}
