package daemon

import (
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// OwnershipRecord is the record of the VIPs rhi owns on its interface
// (state_file): owned.File. The loop alone calls it, one call at a time.
type OwnershipRecord interface {
	// Read returns the record; a missing one is an error matching
	// fs.ErrNotExist. It is bounded and follows no link.
	Read() (owned.Record, error)
	// Write replaces the record atomically: a reader, or a restart after
	// a crash, finds the old record or the new one.
	Write(owned.Record) error
	String() string // the path, for logs
}

// ownership is the loop's side of the ownership record. The loop alone
// uses it.
type ownership struct {
	file  OwnershipRecord // nil: none is kept
	dirty bool            // the owned set changed since the record was written
	err   string          // why the last write failed; "" once one succeeds
}

// save writes r, unless no record is kept, and logs a failure once per
// change of error and the first success after one. The record stays dirty
// while it cannot be written, so the next Set tries again.
func (o *ownership) save(r owned.Record, log logrus.FieldLogger) {
	if o.file == nil {
		o.dirty = false
		return
	}
	e := log.WithField("state_file", o.file.String())
	if err := o.file.Write(r); err != nil {
		if err.Error() != o.err {
			o.err = err.Error()
			e.WithError(err).Error("cannot write the ownership record; retrying before every change: until it is written, a restart cannot tell which addresses rhi put on the interface")
		}
		return
	}
	if o.err != "" {
		e.Info("ownership record written again")
		o.err = ""
	}
	o.dirty = false
	e.WithField("vips", len(r.VIPs)).Debug("ownership record written")
}

// adoptRecord reads the ownership record at start-up. An address it lists
// that is on the interface but no longer in the config was put there by
// rhi under a previous configuration: it becomes an orphan, withdrawn on
// the first tick exactly as a reload that dropped it would be. A missing
// or unreadable record is reported and taken as empty: nothing is
// withdrawn on its word, and what it would have named is then reported as
// unmanaged. The record is rewritten before the first Set, to list what
// this configuration owns.
func (d *Daemon) adoptRecord(st vip.State) {
	d.own.dirty = true
	if d.own.file == nil {
		return
	}
	e := d.log.WithField("state_file", d.own.file.String())
	r, err := d.own.file.Read()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e.Info("no ownership record yet: no address on the interface is known to have been put there by rhi before")
		return
	case err != nil:
		e.WithError(err).Error("cannot read the ownership record; taken as empty: addresses that a previous configuration put on the interface are reported as unmanaged, not withdrawn")
		return
	case r.Iface != d.cfg.Interface:
		e.WithField("recorded_iface", r.Iface).Warn("the ownership record is of another interface; taken as empty")
		return
	}
	for _, p := range r.VIPs {
		if d.owns(p) || !st.Has(p) {
			continue
		}
		d.orphans[p] = true
		e.WithFields(logrus.Fields{"vip": p.String(), "action": "withdraw", "reason": "removed_from_config"}).Warn("vip that rhi put on the interface is no longer in the config; withdrawing")
	}
}

// saveRecord writes the ownership record: every VIP of the config and
// every one still being withdrawn. It is called before a Set when the
// owned set has grown or shrunk, never on a tick that changes neither. A
// failed write is logged once per change of error and retried before each
// Set; addresses are still set meanwhile (health decides them), but a
// restart could not tell which of them rhi put there.
func (d *Daemon) saveRecord() {
	r := owned.Record{Iface: d.cfg.Interface, VIPs: make([]netip.Prefix, 0, len(d.cfg.VIPs)+len(d.orphans))}
	for i := range d.cfg.VIPs {
		r.VIPs = append(r.VIPs, d.cfg.VIPs[i].Address)
	}
	for p := range d.orphans {
		r.VIPs = append(r.VIPs, p)
	}
	d.own.save(r, d.log)
}

// withdrawUnmanaged adds the unmanaged addresses last seen to d.owned as
// unwanted, under unmanaged_addresses: withdraw, so that Set deletes them.
func (d *Daemon) withdrawUnmanaged() {
	if d.cfg.Unmanaged != config.UnmanagedWithdraw {
		return
	}
	for _, p := range d.unmanaged.list {
		if _, ok := d.owned[p]; !ok {
			d.owned[p] = false
		}
	}
}

// unmanagedAddrs is the host addresses on the interface that rhi neither
// has in its config nor is withdrawing. The loop alone changes it.
type unmanagedAddrs struct {
	list []netip.Prefix // sorted; replaced, never changed in place: views share it
	buf  []netip.Prefix // scratch for update
}

// update finds the unmanaged addresses in st, what Set returned: its
// foreign host addresses, and those listed before that are still there and
// not managed (withdrawing them failed). managed tells the addresses rhi
// has in its config or is withdrawing. It reports whether the list changed.
func (u *unmanagedAddrs) update(st vip.State, managed func(netip.Prefix) bool) bool {
	now := u.buf[:0] // reused: the set seldom changes
	for _, p := range st.Foreign {
		if p.IsValid() && p.Bits() == p.Addr().BitLen() && !p.Addr().Is4In6() {
			now = append(now, p)
		}
	}
	for _, p := range u.list {
		if st.Has(p) && !managed(p) && !slices.Contains(now, p) {
			now = append(now, p)
		}
	}
	slices.SortFunc(now, netip.Prefix.Compare)
	u.buf = now
	if slices.Equal(now, u.list) {
		return false
	}
	u.list = nil
	if len(now) > 0 {
		u.list = slices.Clone(now)
	}
	return true
}

// noteUnmanaged finds, in what Set returned, the host addresses on the
// interface that rhi neither has in its config nor is withdrawing: BIRD
// announces them with no health check behind them. It warns once per
// change of that set. Addresses being withdrawn under
// unmanaged_addresses: withdraw stay listed until they are gone.
func (d *Daemon) noteUnmanaged(st vip.State) {
	if !d.unmanaged.update(st, func(p netip.Prefix) bool { return d.owns(p) || d.orphans[p] }) {
		return
	}
	now := d.unmanaged.list
	e := d.log.WithFields(logrus.Fields{"iface": d.cfg.Interface, "unmanaged_addresses": d.cfg.Unmanaged})
	if len(now) == 0 {
		e.Info("no unmanaged addresses on the interface any more")
		return
	}
	all := make([]string, len(now))
	for i, p := range now {
		all[i] = p.String()
	}
	e = e.WithFields(logrus.Fields{"addresses": strings.Join(all, " "), "count": len(now)})
	if d.cfg.Unmanaged == config.UnmanagedWithdraw {
		e.Warn("addresses on the interface that rhi does not manage, announced without a health check; withdrawing them")
		return
	}
	e.Warn("addresses on the interface that rhi does not manage, announced without a health check; left in place (unmanaged_addresses: report)")
}

// owns reports whether p is a VIP of the configuration.
func (d *Daemon) owns(p netip.Prefix) bool {
	_, ok := d.vs.at(p)
	return ok
}
