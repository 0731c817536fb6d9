package daemon

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/place"
	"github.com/rhi-daemon/rhi/internal/status"
)

// GuardViewer asks BIRD, in one round, which other sites serve each VIP
// (the fail-open guard, config fail_open). View returns within ctx; a
// round that cannot tell sets View.Err, a VIP it cannot tell is in
// View.Unknown or absent. It is called from one goroutine at a time.
type GuardViewer interface {
	View(ctx context.Context, vips []netip.Prefix) guard.View
}

// The guard's questions to BIRD: a round every guardEvery, each bounded by
// guardBudget. When no answer has come for guardStale (the viewer is
// stuck), the loop takes that as an answer that cannot tell: it breaks
// every run, so a VIP whose health fails goes back to last resort.
const (
	guardEvery  = time.Second
	guardBudget = 5 * time.Second
	guardStale  = guardBudget + 3*guardEvery
)

// errStale is the error of the answer the loop takes when none came for
// guardStale.
var errStale = errors.New("no fresh answer from BIRD")

// failOpen is the daemon's side of the guard: the goroutine that asks
// BIRD off the loop, and, owned by the loop, each VIP's run and the last
// answer.
type failOpen struct {
	ask      GuardViewer         // nil: BIRD cannot be asked, the view is unknown
	vips     chan []netip.Prefix // loop → asker: the VIPs to ask about (latest wins)
	answers  chan guard.View     // asker → loop (latest wins)
	asked    []netip.Prefix      // the VIPs handed to the asker; nil while the guard is off
	runs     guard.Runs
	min      int        // the min_other_sites the runs were counted under
	last     guard.View // the last answer taken; At zero: none since start-up
	answered bool       // an answer came since start-up: the phase is running
	// fell is when each VIP's health last failed (decide withdrew it);
	// none: before start-up. The guard needs answers after it.
	fell    map[netip.Prefix]time.Time
	unknown string // why the view is unknown, as last logged
}

func newFailOpen(ask GuardViewer) failOpen {
	return failOpen{
		ask: ask, fell: map[netip.Prefix]time.Time{},
		vips: make(chan []netip.Prefix, 1), answers: make(chan guard.View, 1),
	}
}

// guarded hands the asker the VIPs of the config, none when the guard is
// off, and starts the runs afresh when min_other_sites changed: a run
// counted under another rule proves nothing.
func (d *Daemon) guarded() {
	var vips []netip.Prefix
	fo := d.cfg.FailOpen
	if fo.Enabled() {
		vips = make([]netip.Prefix, 0, len(d.cfg.VIPs))
		for i := range d.cfg.VIPs {
			vips = append(vips, d.cfg.VIPs[i].Address)
		}
	}
	if fo.MinOtherSites != d.fo.min {
		d.fo.runs.Reset()
		d.fo.min = fo.MinOtherSites
	}
	d.fo.runs.Keep(d.owns)
	for p := range d.fo.fell {
		if !d.owns(p) {
			delete(d.fo.fell, p)
		}
	}
	d.fo.asked = vips
	offerLatest(d.fo.vips, vips)
}

// startGuard starts the goroutine that asks BIRD, if there is an asker,
// and returns the function that stops it.
func (d *Daemon) startGuard(ctx context.Context) func() {
	if d.fo.ask == nil {
		return func() {}
	}
	gctx, cancel := context.WithCancel(ctx)
	t := d.env.newTicker(guardEvery)
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
		v := d.fo.ask.View(actx, vips)
		cancel()
		if ctx.Err() != nil {
			return
		}
		v.At = d.env.now()
		offerLatest(d.fo.answers, v)
	}
}

// takeGuard takes an answer from BIRD in, and sets the interfaces at once
// if that moves a VIP.
func (d *Daemon) takeGuard(ctx context.Context, v guard.View) {
	d.noteView(v)
	if !d.stage.started || !d.placeAll() {
		return
	}
	d.apply(ctx)
	d.requestConfirm()
	d.publish()
}

// noteView advances every VIP's run by v and logs a change of whether the
// view is known.
func (d *Daemon) noteView(v guard.View) {
	d.fo.last, d.fo.answered = v, true
	if d.cfg.FailOpen.Enabled() {
		d.fo.runs.Take(d.cfg.FailOpen.MinOtherSites, &v, d.fo.asked)
	}
	d.noteUnknown()
}

// expireView takes, at a tick, the absence of an answer for guardStale as
// an answer that cannot tell.
func (d *Daemon) expireView(now time.Time) {
	if d.fo.ask != nil && d.fo.answered && d.cfg.FailOpen.Enabled() && now.Sub(d.fo.last.At) > guardStale {
		d.noteView(guard.View{At: now, Err: errStale})
	}
}

// fellAt notes when health withdrew the i-th VIP, for the guard.
func (d *Daemon) fellAt(p netip.Prefix, announced bool, at time.Time) {
	if announced {
		delete(d.fo.fell, p)
		return
	}
	d.fo.fell[p] = at
}

// phase is the daemon's phase for placement: stopping once a withdrawing
// shutdown began; starting until the guard's first answer (when it has a
// BIRD to ask); running otherwise.
func (d *Daemon) phase() place.Phase {
	switch {
	case d.stage.stopping:
		return place.Stopping
	case d.fo.ask != nil && !d.fo.answered && d.cfg.FailOpen.Enabled():
		return place.Starting
	}
	return place.Running
}

// verdict is the guard's verdict on p.
func (d *Daemon) verdict(p netip.Prefix) guard.Verdict {
	return d.fo.runs.Of(p).Verdict(d.cfg.FailOpen.Hold, d.fo.fell[p])
}

// viewUnknown is why the guard's view as a whole is unknown; "" when it is
// known or the guard is off.
func (d *Daemon) viewUnknown() string {
	switch {
	case !d.cfg.FailOpen.Enabled():
		return ""
	case d.fo.ask == nil:
		return "no BIRD socket to ask"
	case !d.fo.answered:
		return "no answer from BIRD yet"
	case d.fo.last.Err != nil:
		return d.fo.last.Err.Error()
	}
	return ""
}

// noteUnknown logs, when it changes, that the guard's view is unknown: no
// VIP whose health fails is withdrawn meanwhile, every one stays in last
// resort.
func (d *Daemon) noteUnknown() {
	msg := d.viewUnknown()
	if msg == d.fo.unknown {
		return
	}
	d.fo.unknown = msg
	if msg == "" {
		d.log.Info("fail-open guard: BIRD's view of the other sites is known again")
		return
	}
	d.log.WithField("error", msg).Error("fail-open guard: BIRD's view of the other sites is unknown; every vip whose health fails stays in last resort")
}

// guardStatus is the guard's part of /status; nil while it is off.
func guardStatus(v *view) *status.FailOpenStatus {
	if !v.cfg.FailOpen.Enabled() {
		return nil
	}
	return &status.FailOpenStatus{
		Known: v.viewErr == "", Error: v.viewErr, LastAnswer: v.viewAt,
		MinOtherSites: v.cfg.FailOpen.MinOtherSites, HoldSeconds: v.cfg.FailOpen.Hold.Seconds(),
		LastResortInterface: v.cfg.LastResort.Interface, LastResortExists: v.lastResort.Exists,
	}
}

// renderFailOpen adds the guard's view of one VIP to its status.
func renderFailOpen(vs *status.VIPStatus, v *view, r guard.Run) {
	if !v.cfg.FailOpen.Enabled() {
		return
	}
	fo := &status.VIPFailOpen{OtherSites: r.Sites, Since: r.Since}
	if r.Last.IsZero() {
		fo.OtherSites = -1
		fo.Error = v.viewErr
		if fo.Error == "" {
			fo.Error = "no answer from BIRD for this VIP yet"
		}
	} else if r.Err != nil {
		fo.Error = r.Err.Error()
	}
	vs.FailOpen = fo
}
