package daemon

import (
	"context"
	"maps"
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/place"
	"github.com/rhi-daemon/rhi/internal/status"
)

// graces are the drain_grace deadlines: an operator's drain, or a
// withdrawing shutdown, first moves a VIP to last resort (BIRD exports it
// with the GRACEFUL_SHUTDOWN community and the largest prepend), so that
// routers move the traffic while this path still exists, and withdraws it
// when its grace ends (docs/semantics.md, "Drain").
type graces struct {
	// until holds the VIPs whose grace runs: when it ends. An entry past
	// its deadline is dropped at the next placement.
	until map[netip.Prefix]time.Time
	// timer fires at armed, the earliest deadline, so that the loop
	// withdraws the VIP then rather than at the next poll; nil when no
	// grace runs.
	timer ticker
	armed time.Time
	// noLR: the missing last-resort interface has been logged since it
	// was last seen; reset when it is back.
	noLR bool
}

// in reports whether p's grace still runs at now.
func (g *graces) in(p netip.Prefix, now time.Time) bool {
	if len(g.until) == 0 { // most ticks: spare the lookup
		return false
	}
	t, ok := g.until[p]
	return ok && now.Before(t)
}

// c is the timer's channel; nil (never ready) when no timer is armed.
func (g *graces) c() <-chan time.Time {
	if g.timer == nil {
		return nil
	}
	return g.timer.C()
}

func (g *graces) stopTimer() {
	if g.timer != nil {
		g.timer.Stop()
		g.timer, g.armed = nil, time.Time{}
	}
}

// startGrace starts the grace of the i-th VIP of the config, drained now;
// a VIP whose drain_grace is 0 has none and is withdrawn at once.
func (d *Daemon) startGrace(i int, now time.Time) {
	g := d.cfg.VIPs[i].DrainGrace
	if g <= 0 {
		return
	}
	if d.drains.gr.until == nil {
		d.drains.gr.until = map[netip.Prefix]time.Time{}
	}
	d.drains.gr.until[d.cfg.VIPs[i].Address] = now.Add(g)
}

// endGrace forgets p's grace: it was undrained or left the config.
func (d *Daemon) endGrace(p netip.Prefix) { delete(d.drains.gr.until, p) }

// graceInput fills the drain's part of in for p at now: whether its
// grace runs.
func (d *Daemon) graceInput(in *place.Input, p netip.Prefix, now time.Time) {
	in.Grace = d.drains.gr.in(p, now)
}

// noteNoLastResort logs, once while the last-resort interface stays
// missing, that a VIP in its grace is withdrawn at once because it cannot
// step down.
func (d *Daemon) noteNoLastResort(p netip.Prefix, in *place.Input) {
	if in.LastResort {
		d.drains.gr.noLR = false
		return
	}
	if d.drains.gr.noLR || !in.Grace || !(in.Drained || in.Phase == place.Stopping) || !in.Current.Present() {
		return
	}
	d.drains.gr.noLR = true
	d.log.WithFields(logrus.Fields{"vip": p.String(), "iface": d.cfg.LastResort.Interface, "action": "withdraw"}).
		Warn("the last-resort interface is missing: drained and stopping VIPs are withdrawn at once, without their drain_grace (logged once until it is back)")
}

// armGrace drops the graces that ended by now and arms the timer for the
// earliest deadline left, if it is not armed for it already.
func (d *Daemon) armGrace(now time.Time) {
	var first time.Time
	for p, t := range d.drains.gr.until {
		if !now.Before(t) {
			delete(d.drains.gr.until, p)
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.Equal(d.drains.gr.armed) && (d.drains.gr.timer != nil || first.IsZero()) {
		return
	}
	d.drains.gr.stopTimer()
	if first.IsZero() {
		return
	}
	d.drains.gr.timer, d.drains.gr.armed = d.env.newTicker(first.Sub(now)), first
}

// graceDue is the timer firing: a grace has ended, so the VIP is placed
// again (withdrawn) at once and BIRD asked to confirm.
func (d *Daemon) graceDue(ctx context.Context) {
	d.drains.gr.stopTimer()
	d.reapply(ctx)
}

// graceDeadlines is a copy of the running graces for a view; nil when
// none runs.
func (d *Daemon) graceDeadlines() map[netip.Prefix]time.Time {
	if len(d.drains.gr.until) == 0 {
		return nil
	}
	return maps.Clone(d.drains.gr.until)
}

// stepDownAll is the first half of on_shutdown: withdraw. Every VIP that
// is announced steps down to last resort, and the daemon waits for the
// longest of their drain_grace (or of a drain's grace already running)
// before shutdown withdraws everything. It reports how many VIPs stepped
// down. A dry run, a daemon that never started, a missing last-resort
// interface or graces of 0 step nothing down.
func (d *Daemon) stepDownAll() int {
	if d.env.dryRun || !d.stage.started || !d.vs.ready {
		return 0
	}
	now := d.env.now()
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		if _, running := d.drains.gr.until[p]; running || d.drains.drained.Has(p) {
			continue // a drain keeps its own deadline; one whose grace is over stays withdrawn
		}
		d.startGrace(i, now)
	}
	d.stage.stopping = true
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	_, err := d.apply(ctx)
	cancel()
	d.drains.gr.stopTimer()
	var last time.Time
	n := 0
	for i := range d.cfg.VIPs {
		if pl := d.vs.placement(i); pl.Tier == decide.TierLastResort && pl.Reason == place.ReasonStopping {
			n++
			if t := d.drains.gr.until[d.cfg.VIPs[i].Address]; t.After(last) {
				last = t
			}
		}
	}
	if err != nil {
		d.log.WithError(err).Error("stopping; stepping VIPs down to last resort failed; withdrawing after the grace all the same")
	}
	if n == 0 {
		return 0
	}
	d.publish()
	wait := last.Sub(d.env.now())
	d.log.WithFields(logrus.Fields{"on_shutdown": "withdraw", "vips": n, "until": last.Format(time.RFC3339Nano), "wait": wait.Round(time.Millisecond)}).
		Info("stopping; VIPs announced in last resort (GRACEFUL_SHUTDOWN) for their drain_grace before they are withdrawn")
	if wait > 0 {
		d.env.sleep(wait)
	}
	return n
}

// realSleep waits for dur; tests replace Daemon.sleep with a fake clock's.
func realSleep(dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	<-t.C
}

// The drain phases /status shows (status.VIPStatus.DrainPhase).
const (
	PhaseDraining = "draining" // in last resort until its drain_grace ends
	PhaseStopping = "stopping" // in last resort while a withdrawing stop waits
	PhaseDrained  = "drained"  // withdrawn by the drain
)

// renderDrain fills vs's drain phase from its placement pl.
func renderDrain(vs *status.VIPStatus, v *view, p netip.Prefix, pl place.Placement) {
	switch {
	case pl.Tier == decide.TierLastResort && pl.Reason == place.ReasonDraining:
		vs.DrainPhase, vs.DrainDeadline = PhaseDraining, v.graces[p]
	case pl.Tier == decide.TierLastResort && pl.Reason == place.ReasonStopping:
		vs.DrainPhase, vs.DrainDeadline = PhaseStopping, v.graces[p]
	case vs.Drained:
		vs.DrainPhase = PhaseDrained
	}
}

// finishDrains completes, when rhi stops with on_shutdown: keep, the
// drains whose grace still runs: it waits for the last of their deadlines
// and withdraws those VIPs, so that a stopped rhi never leaves a drained
// VIP announced in last resort (package removal drains everything, and
// without a control socket cannot wait for the grace itself). The other
// VIPs stay as they are.
func (d *Daemon) finishDrains() {
	if d.env.dryRun || !d.stage.started || !d.vs.ready || len(d.drains.gr.until) == 0 {
		return
	}
	var last time.Time
	for _, t := range d.drains.gr.until {
		if t.After(last) {
			last = t
		}
	}
	if wait := last.Sub(d.env.now()); wait > 0 {
		d.log.WithFields(logrus.Fields{"on_shutdown": "keep", "vips": len(d.drains.gr.until), "until": last.Format(time.RFC3339Nano), "wait": wait.Round(time.Millisecond)}).
			Info("stopping; waiting for the drains in their grace to end, then withdrawing those VIPs")
		d.env.sleep(wait)
	}
	d.drains.gr.until = nil
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	if _, err := d.apply(ctx); err != nil {
		d.log.WithError(err).Error("stopping; withdrawing the drained VIPs failed")
	}
	d.drains.gr.stopTimer()
}
