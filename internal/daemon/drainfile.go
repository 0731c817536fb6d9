package daemon

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/drain"
)

// drainEvery is how often the loop looks at the drain file between polls:
// a stat, and a read only when it changed.
const drainEvery = 250 * time.Millisecond

// drainStamp identifies a version of the drain file without reading it.
type drainStamp struct {
	path  string
	exist bool
	mod   time.Time
	size  int64
	ino   uint64
}

func stampOf(path string) (drainStamp, error) {
	st := drainStamp{path: path}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.exist, st.mod, st.size = true, fi.ModTime(), fi.Size()
	st.ino = inode(fi)
	return st, nil
}

// loadDrain re-reads the drain file when it changed and reports whether the
// drain set changed. A file that cannot be read keeps the last good set:
// forgetting a drain would put a VIP under maintenance back into service.
func (d *Daemon) loadDrain() bool {
	path := d.cfg.DrainFile
	if path == "" {
		return false
	}
	stamp, err := stampOf(path)
	if err == nil && stamp == d.drainSeen && d.drained.VIPs != nil {
		return false
	}
	var set drain.Set
	if err == nil {
		set, err = drain.Read(path)
	}
	if err != nil {
		if err.Error() != d.drainErr {
			d.log.WithField("drain_file", path).WithError(err).Error("cannot read the drain file; keeping the drains already in force")
			d.drainErr = err.Error()
		}
		return false
	}
	if d.drainErr != "" {
		d.log.WithField("drain_file", path).Info("drain file readable again")
		d.drainErr = ""
	}
	d.drainSeen = stamp
	changed := false
	for i := range d.cfg.VIPs {
		p := d.cfg.VIPs[i].Address
		was, now := d.drained.Has(p), set.Has(p)
		if was == now {
			continue
		}
		changed = true
		e := d.log.WithFields(logrus.Fields{"vip": p.String(), "drain_file": path})
		if now {
			e.WithField("action", "drain").Info("vip drained by the operator: withdrawing it whatever its health")
		} else {
			e.WithField("action", "undrain").Info("vip undrained: its health decides again")
		}
	}
	for p := range set.VIPs {
		if !d.owns(p) {
			d.log.WithFields(logrus.Fields{"vip": p.String(), "drain_file": path}).Warn("drain file names a VIP that is not in the configuration; ignored")
		}
	}
	d.drained = set
	return changed
}

func (d *Daemon) owns(p netip.Prefix) bool {
	_, ok := d.states[p]
	return ok
}
