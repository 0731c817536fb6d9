package daemon

import (
	"context"
	"net/netip"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/guardbird"
	"github.com/rhi-daemon/rhi/internal/status"
)

// GuardAsker asks BIRD's guard tables which other sites announce each VIP
// (the fail-open guard, config fail_open); guardbird.Socket satisfies it.
// Ask returns within ctx and reports an unreachable BIRD in Answer.Err.
type GuardAsker interface {
	Ask(ctx context.Context, vips []netip.Prefix) guardbird.Answer
}

// The fail-open guard's questions to BIRD: a round every guardEvery, each
// bounded by guardBudget; an answer older than guardStale counts as none
// (the asker is stuck), so the guard neither engages on it nor counts it
// towards a release.
const (
	guardEvery  = time.Second
	guardBudget = 5 * time.Second
	guardStale  = guardBudget + 3*guardEvery
)

// failOpen is the daemon's side of the guard: the goroutine that asks
// BIRD off the loop, and, owned by the loop, each VIP's guard state and
// the last answer.
type failOpen struct {
	ask     GuardAsker            // nil: BIRD cannot be asked, the guard never engages
	vips    chan []netip.Prefix   // loop → asker: the VIPs to ask about (latest wins)
	answers chan guardbird.Answer // asker → loop (latest wins)
	states  map[netip.Prefix]guard.State
	last    guardbird.Answer
	noBird  string // the reason the guard could not ask BIRD, as last logged
}

func newFailOpen(ask GuardAsker) failOpen {
	return failOpen{
		ask: ask, states: map[netip.Prefix]guard.State{},
		vips: make(chan []netip.Prefix, 1), answers: make(chan guardbird.Answer, 1),
	}
}

// engaged reports whether the guard announces p.
func (f *failOpen) engaged(p netip.Prefix) bool { return f.states[p].Engaged }

// guarded hands the asker the VIPs of the config, none when the guard is
// off.
func (d *Daemon) guarded() {
	var vips []netip.Prefix
	if d.cfg.FailOpen.Enabled() {
		vips = make([]netip.Prefix, 0, len(d.cfg.VIPs))
		for i := range d.cfg.VIPs {
			vips = append(vips, d.cfg.VIPs[i].Address)
		}
	}
	offerLatest(d.fo.vips, vips)
}

// startGuard starts the goroutine that asks BIRD, if there is an asker,
// and returns the function that stops it.
func (d *Daemon) startGuard(ctx context.Context) func() {
	if d.fo.ask == nil {
		return func() {}
	}
	gctx, cancel := context.WithCancel(ctx)
	t := d.newTicker(guardEvery)
	done := make(chan struct{})
	go func() { d.askLoop(gctx, t.C()); close(done) }()
	return func() { t.Stop(); cancel(); <-done }
}

// askLoop asks BIRD about the latest VIPs at every tick, and hands the
// answers to the loop.
func (d *Daemon) askLoop(ctx context.Context, tick <-chan time.Time) {
	var vips []netip.Prefix
	for {
		select {
		case <-ctx.Done():
			return
		case vips = <-d.fo.vips:
			continue
		case <-tick:
		}
		select { // a new list that came with the tick
		case vips = <-d.fo.vips:
		default:
		}
		if len(vips) == 0 {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, guardBudget)
		a := d.fo.ask.Ask(actx, vips)
		cancel()
		if ctx.Err() != nil {
			return
		}
		a.At = d.now()
		offerLatest(d.fo.answers, a)
	}
}

// takeGuard takes an answer from BIRD in: the guard may engage or release
// between polls.
func (d *Daemon) takeGuard(ctx context.Context, a guardbird.Answer) {
	d.fo.last = a
	if !d.started || !d.stepGuards(d.now()) {
		return
	}
	d.apply(ctx)
	d.requestConfirm()
	d.publish()
}

// observe is what the last answer says about p.
func (d *Daemon) observe(p netip.Prefix, now time.Time) guard.Observation {
	a := &d.fo.last
	if d.fo.ask == nil || a.Err != nil || a.At.IsZero() || now.Sub(a.At) > guardStale {
		return guard.Observation{}
	}
	others, ok := a.Origins[p]
	if !ok {
		return guard.Observation{}
	}
	return guard.Observation{Known: true, Others: others, Self: a.Self}
}

// stepGuards runs the guard for every VIP after decide, and reports
// whether that changed what should be on the interface.
func (d *Daemon) stepGuards(now time.Time) bool {
	cfg := d.cfg.FailOpen
	if !d.vs.ready || (!cfg.Enabled() && len(d.fo.states) == 0) {
		return false
	}
	changed, noBird := false, false
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		health := d.vs.state[i].Announced
		in := guard.Input{Health: health, Drained: d.drained.Has(p), Obs: d.observe(p, now), Now: now}
		next, ev, why := guard.Step(cfg, d.fo.states[p], in)
		d.fo.states[p] = next
		noBird = noBird || why == guard.WhyNoBird
		if ev == guard.None {
			continue
		}
		d.logGuard(p, ev, why, next)
		if !health && !in.Drained {
			changed = true
			d.vs.touch(i, now, true)
		}
	}
	if !cfg.Enabled() {
		clear(d.fo.states)
	}
	for p := range d.fo.states {
		if !d.owns(p) {
			delete(d.fo.states, p) // dropped by a reload
		}
	}
	d.noteNoBird(noBird)
	return changed
}

// logGuard logs an engagement or a release, as an error: either means
// that health and the announcement disagree, or did.
func (d *Daemon) logGuard(p netip.Prefix, ev guard.Event, why guard.Why, s guard.State) {
	e := d.log.WithFields(logrus.Fields{"vip": p.String(), "min_other_sites": d.cfg.FailOpen.MinOtherSites, "other_sites": s.Sites})
	if ev == guard.Engage {
		e.WithFields(logrus.Fields{"action": "announce", "reason": string(guard.Reason), "hold": d.cfg.FailOpen.Hold}).
			Error("fail-open guard engaged: too few other sites announce the vip; announcing it although health would withdraw it")
		return
	}
	e.WithField("why", string(why)).Error("fail-open guard released: the vip follows its health again")
}

// noteNoBird logs, when it changes, that the guard would have to ask BIRD
// for a VIP health withdraws and cannot.
func (d *Daemon) noteNoBird(now bool) {
	msg := ""
	if now {
		switch {
		case d.fo.ask == nil:
			msg = "no BIRD socket to ask"
		case d.fo.last.Err != nil:
			msg = d.fo.last.Err.Error()
		case d.fo.last.VIPErr != nil:
			msg = d.fo.last.VIPErr.Error()
		case d.fo.last.At.IsZero():
			// Waiting for the first answer, which comes within a
			// second of start-up: not worth a warning.
		default:
			msg = "no fresh answer from BIRD"
		}
	}
	if msg == d.fo.noBird {
		return
	}
	if msg == "" {
		d.log.Info("fail-open guard can ask BIRD again")
	} else {
		d.log.WithField("error", msg).Warn("fail-open guard cannot ask BIRD which other sites announce a withdrawn vip: it will not engage")
	}
	d.fo.noBird = msg
}

// guardErr is why the guard cannot ask BIRD, for /status; "" when it can
// or the guard is off.
func (d *Daemon) guardErr() string {
	switch {
	case !d.cfg.FailOpen.Enabled():
		return ""
	case d.fo.ask == nil:
		return "no BIRD socket to ask"
	case d.fo.last.Err != nil:
		return d.fo.last.Err.Error()
	case d.fo.last.At.IsZero():
		return "no answer from BIRD yet"
	case d.now().Sub(d.fo.last.At) > guardStale:
		return "no fresh answer from BIRD"
	}
	return ""
}

// renderFailOpen adds the guard's view to a VIP's status.
func renderFailOpen(vs *status.VIPStatus, v *view, rec vipRec) {
	if !v.cfg.FailOpen.Enabled() {
		return
	}
	g := rec.guard
	fo := &status.VIPFailOpen{Engaged: g.Engaged, Since: g.Since, OtherSites: g.Sites}
	if g.Sites < 0 {
		fo.Error = v.guardErr
		if fo.Error == "" {
			fo.Error = "BIRD did not answer for this VIP"
		}
	}
	vs.FailOpen = fo
	if g.Engaged && !vs.Drained {
		// Health's tier is "withdrawn"; the guard puts the VIP on the
		// main interface, at full weight.
		vs.Reason, vs.Desired, vs.Tier = guard.Reason, true, decide.TierAnnounced
	}
}
