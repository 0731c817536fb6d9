package daemon

import (
	"context"
	"net/netip"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/drain"
)

// watchDrain starts the drain file's watcher, which looks at the file on a
// goroutine of its own (the loop does no file I/O for the drain: a FIFO or
// a hung file system there must not stop it), and waits for its first
// answer, so that the first tick already knows the drains: a restart must
// not announce a drained VIP even for a moment. The watcher bounds each
// look (drain.Timeout), so this wait is bounded too. It returns the
// function that stops the watcher.
func (d *Daemon) watchDrain(ctx context.Context) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	t := d.env.newTicker(drain.Every)
	done := make(chan struct{})
	go func() { d.drains.drainW.Run(wctx, t.C(), d.in.drains); close(done) }()
	select {
	case u := <-d.in.drains:
		d.takeDrain(ctx, u)
	case <-ctx.Done():
	}
	return func() { cancel(); t.Stop(); <-done }
}

// takeDrain applies what the watcher found, at once rather than at the next
// poll: a drain is an operator waiting at a prompt.
func (d *Daemon) takeDrain(ctx context.Context, u drain.Update) {
	if u.Path != d.cfg.DrainFile {
		return // found before a reload changed drain_file
	}
	switch {
	case d.noteDrain(u):
		d.reapply(ctx)
	case d.stage.started:
		d.publish() // the error, or its end
	}
}

// noteDrain records the drain set in force, logs what changed and reports
// whether any configured VIP's drain changed. A file that cannot be used
// comes with the last good set (the watcher keeps it: forgetting a drain
// would put a VIP under maintenance back into service), and is reported
// once per change of the file, since the watcher sends nothing while the
// file stays as it is.
func (d *Daemon) noteDrain(u drain.Update) bool {
	path := u.Path
	switch {
	case u.Err != nil && u.Unread:
		// At start-up no drain is in force yet: forgetting the file's would
		// put a VIP under maintenance back into service on the first tick.
		d.log.WithField("drain_file", path).WithError(u.Err).Error("cannot read the drain file, and no version of it was ever read: every VIP is treated as drained until it can be read")
		d.drains.drainErr = u.Err.Error() + " (every VIP treated as drained until the file can be read)"
	case u.Err != nil:
		d.log.WithField("drain_file", path).WithError(u.Err).Error("cannot read the drain file; keeping the drains already in force")
		d.drains.drainErr = u.Err.Error()
	case d.drains.drainErr != "":
		d.log.WithField("drain_file", path).Info("drain file readable again")
		d.drains.drainErr = ""
	}
	set := u.Set
	changed := false
	now := d.env.now()
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		was, on := d.drains.drained.Has(p), set.Has(p)
		if was == on {
			continue
		}
		changed = true
		e := d.log.WithFields(logrus.Fields{"vip": p.String(), "drain_file": path})
		if on {
			d.startGrace(i, now)
			e = e.WithFields(logrus.Fields{"action": "drain", "drain_grace": d.cfg.VIPs[i].DrainGrace})
			if d.cfg.VIPs[i].DrainGrace > 0 {
				e.Info("vip drained by the operator: withdrawing it whatever its health, after its drain_grace in last resort if it is announced")
			} else {
				e.Info("vip drained by the operator: withdrawing it whatever its health")
			}
		} else {
			d.endGrace(p)
			e.WithField("action", "undrain").Info("vip undrained: its health decides again")
		}
	}
	if u.Err == nil && len(set.VIPs) > 0 {
		// The config, not d.states: the first answer comes before start.
		configured := make(map[netip.Prefix]bool, len(d.cfg.VIPs))
		for i := range d.cfg.VIPs {
			configured[d.cfg.VIPs[i].Address] = true
		}
		for p := range set.VIPs {
			if !configured[p] {
				d.log.WithFields(logrus.Fields{"vip": p.String(), "drain_file": path}).Warn("drain file names a VIP that is not in the configuration; ignored")
			}
		}
	}
	d.drains.drained = set
	return changed
}
