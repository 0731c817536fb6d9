package daemon

import (
	"context"
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
	file     OwnershipRecord       // nil: none is kept
	dirty    bool                  // the owned set changed since the record was written
	err      string                // why the last write failed; "" once one succeeds
	recorded map[netip.Prefix]bool // the VIPs of the last record read or written
	held     int                   // VIPs kept off the interface until the record is written
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
			e.WithError(err).Error("cannot write the ownership record; retrying before every change: until it is written, no VIP it does not list is added to the interface (withdrawals go on)")
		}
		return
	}
	o.recorded = setOf(r.VIPs)
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
	d.own.recorded = setOf(r.VIPs)
	for _, p := range r.VIPs {
		if d.owns(p) || !st.Has(p) {
			continue
		}
		d.set.orphans[p] = true
		msg := "vip that rhi put on the interface is no longer in the config; withdrawing"
		if d.env.dryRun {
			msg = "vip that rhi put on the interface is no longer in the config; would withdraw it (dry run: left in place)"
		}
		e.WithFields(logrus.Fields{"vip": p.String(), "action": "withdraw", "reason": "removed_from_config"}).Warn(msg)
	}
}

// saveRecord writes the ownership record: every VIP of the config and
// every one still being withdrawn. It is called before a Set when the
// owned set has grown or shrunk, never on a tick that changes neither. A
// failed write is logged once per change of error and retried before each
// Set; meanwhile holdUnrecorded keeps off the interface every VIP the
// record does not list yet.
func (d *Daemon) saveRecord() {
	r := owned.Record{Iface: d.cfg.Interface, VIPs: make([]netip.Prefix, 0, len(d.cfg.VIPs)+len(d.set.orphans))}
	for i := range d.cfg.VIPs {
		r.VIPs = append(r.VIPs, d.cfg.VIPs[i].Address)
	}
	for p := range d.set.orphans {
		r.VIPs = append(r.VIPs, p)
	}
	d.own.save(r, d.log)
}

// withdrawUnmanaged adds the unmanaged addresses last seen to d.set.want as
// unwanted, under unmanaged_addresses: withdraw, so that Set deletes them,
// and deletes the unmanaged point-to-point entries (Set cannot: the kernel
// names them by local address and peer). A failed delete is logged once
// per change of error and retried on every tick.
func (d *Daemon) withdrawUnmanaged(ctx context.Context) {
	if d.cfg.Unmanaged != config.UnmanagedWithdraw {
		return
	}
	w, added := &d.set.want, false
	for _, p := range d.unmanaged.list {
		if _, ok := w.Want(p); !ok {
			w.Absent, added = append(w.Absent, p), true
		}
	}
	if added {
		sortPrefixes(w.Absent)
	}
	if len(d.unmanaged.peers) == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, applyTimeout)
	err := d.ann.DeletePeers(dctx, d.unmanaged.peers)
	cancel()
	switch {
	case err != nil && err.Error() != d.unmanaged.peersErr:
		d.unmanaged.peersErr = err.Error()
		d.log.WithField("iface", d.cfg.Interface).WithError(err).Error("cannot delete unmanaged point-to-point entries; retrying on every tick")
	case err == nil:
		d.unmanaged.peersErr = ""
	}
}

// holdUnrecorded keeps off the interface, while the record cannot be
// written, every VIP that is not on it and that the last record written or
// read does not list: the record is written before an address is added,
// so that a restart always knows which addresses rhi put there (one it did
// not know would stay announced, with no health check, once dropped from
// the config). VIPs already on the interface stay as health says, and
// withdrawals go on. The VIPs held are logged once per change of their
// number.
func (d *Daemon) holdUnrecorded() {
	held := 0
	if w := &d.set.want; d.own.dirty && d.own.file != nil {
		var keep []netip.Prefix // a new list: Present may be shared (fillWant)
		for _, p := range w.Present {
			if !d.own.recorded[p] && !d.onAny(p) { // on rhi1 too
				w.Absent = append(w.Absent, p)
				held++
				continue
			}
			keep = append(keep, p)
		}
		if held > 0 {
			w.Present = keep
			sortPrefixes(w.Absent)
		}
	}
	if held != d.own.held {
		d.own.held = held
		if held > 0 {
			d.log.WithFields(logrus.Fields{"state_file": d.own.file.String(), "vips": held}).Error("vips not added: the ownership record that must list them first cannot be written")
		} else {
			d.log.Info("no vip held back for the ownership record any more")
		}
	}
}

// setOf returns the set of ps.
func setOf(ps []netip.Prefix) map[netip.Prefix]bool {
	m := make(map[netip.Prefix]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}

// unmanagedAddrs is the host addresses on the interface that rhi neither
// has in its config nor is withdrawing. The loop alone changes it.
type unmanagedAddrs struct {
	list     []netip.Prefix // sorted; replaced, never changed in place: views share it
	buf      []netip.Prefix // scratch for update
	peers    []vip.Peer     // the unmanaged point-to-point entries last seen
	peersErr string         // the last error deleting them
}

// update finds the unmanaged addresses in st, what Set returned: its
// foreign host addresses, and those listed before that are still there and
// not managed (withdrawing them failed). managed tells the addresses rhi
// has in its config or is withdrawing. It reports whether the list changed.
func (u *unmanagedAddrs) update(st vip.State, managed func(netip.Prefix) bool) bool {
	now := u.buf[:0] // reused: the set seldom changes
	for _, p := range st.Foreign {
		if announceable(p) {
			now = append(now, p)
		}
	}
	// A point-to-point entry "10.9.0.1 peer 10.0.0.99/32" makes BIRD's
	// direct protocol originate its peer prefix: a host route with no
	// health check behind it, even when the peer is a configured VIP.
	u.peers = u.peers[:0]
	for _, q := range st.ForeignPeers {
		if announceable(q.Peer) {
			now = append(now, q.Peer)
			u.peers = append(u.peers, q)
		}
	}
	for _, p := range u.list {
		if st.Has(p) && !managed(p) && !slices.Contains(now, p) {
			now = append(now, p)
		}
	}
	slices.SortFunc(now, netip.Prefix.Compare)
	now = slices.Compact(now)
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

// maxListedUnmanaged bounds the addresses the unmanaged warning names (the
// first ones, sorted); "count" has them all, "not_listed" the rest: 10,000
// addresses someone put on the interface must not make one 200 KB line.
const maxListedUnmanaged = 100

// noteUnmanaged finds, in what Set returned, the host addresses on the
// interface that rhi neither has in its config nor is withdrawing: BIRD
// announces them with no health check behind them. It warns once per
// change of that set. Addresses being withdrawn under
// unmanaged_addresses: withdraw stay listed until they are gone.
func (d *Daemon) noteUnmanaged(st vip.State) {
	if !d.unmanaged.update(st, func(p netip.Prefix) bool { return d.owns(p) || d.set.orphans[p] }) {
		return
	}
	now := d.unmanaged.list
	e := d.log.WithFields(logrus.Fields{"iface": d.cfg.Interface, "unmanaged_addresses": d.cfg.Unmanaged})
	if len(now) == 0 {
		e.Info("no unmanaged addresses on the interface any more")
		return
	}
	listed := now[:min(len(now), maxListedUnmanaged)]
	all := make([]string, len(listed))
	for i, p := range listed {
		all[i] = p.String()
	}
	e = e.WithFields(logrus.Fields{"addresses": strings.Join(all, " "), "count": len(now)})
	if len(now) > len(listed) {
		e = e.WithField("not_listed", len(now)-len(listed))
	}
	switch {
	case d.cfg.Unmanaged == config.UnmanagedWithdraw && d.env.dryRun:
		e.Warn("addresses on the interface that rhi does not manage, announced without a health check; would withdraw them (dry run: left in place)")
		return
	case d.cfg.Unmanaged == config.UnmanagedWithdraw:
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

// announceable reports whether BIRD would announce p, a prefix on the
// interface, as a host route: a /32 or /128 (not IPv4-mapped) of a global
// unicast address. Loopback (::1, 127/8), link-local, multicast and
// unspecified addresses are never exported by the direct protocol's
// shipped filter: they are not "announced without a health check", and
// unmanaged_addresses: withdraw must never delete them (::1 on lo).
func announceable(p netip.Prefix) bool {
	a := p.Addr()
	return p.IsValid() && p.Bits() == a.BitLen() && !a.Is4In6() && a.IsGlobalUnicast()
}

// setOwned sets the interfaces to the desired state (d.set.want): every
// VIP of the config as its placement says, the orphans and, under
// unmanaged_addresses: withdraw, the unmanaged addresses as unwanted,
// writing the ownership record first if it changed and holding back what
// it does not list yet. Set is cheap when all that is as the last tick
// left it.
func (d *Daemon) setOwned(ctx context.Context) (vip.State, error) {
	d.fillWant()
	if d.own.dirty {
		d.saveRecord() // before any address is added
	}
	d.holdUnrecorded()
	d.withdrawUnmanaged(ctx)
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	return d.setInterfaces(actx)
}

// fillWant refills d.set.want with every VIP of the config as its
// placement says and the orphans as unwanted, in address order
// (vipStates.order). When the VIPs wanted are those the main interface
// held after the last Set, as on most ticks, Present is that list
// (State.Present, never changed) rather than a second copy of every VIP,
// and one walk does. Otherwise a second walk builds Present. Both are
// built in d.set.buf, reused while it is not much larger than they need;
// each list's capacity is its length, so that an append (an orphan, a
// VIP held back) moves it out.
func (d *Daemon) fillWant() {
	last := d.ifc.iface.Present
	s := &d.set
	absent := s.buf[:0]
	present, k := 0, 0
	for _, pos := range d.vs.order {
		p := d.vs.vips[pos].Address
		if !d.desiredAt(int(pos)) {
			absent = append(absent, p)
			continue
		}
		if present == k && k < len(last) && last[k] == p {
			k++
		}
		present++
	}
	w := &s.want
	w.Absent, w.Present = absent[:len(absent):len(absent)], last
	used := len(absent)
	if present != k || k != len(last) {
		if cap(absent)-len(absent) < present { // room for both, kept for the next
			absent = append(make([]netip.Prefix, 0, len(absent)+present), absent...)
			w.Absent = absent[:len(absent):len(absent)]
		}
		pres := absent[len(absent) : len(absent) : len(absent)+present]
		for _, pos := range d.vs.order {
			if d.desiredAt(int(pos)) {
				pres = append(pres, d.vs.vips[pos].Address)
			}
		}
		w.Present = pres[:len(pres):len(pres)]
		used += len(pres)
	}
	s.buf = absent
	if cap(s.buf) > 4*used+64 {
		s.buf = nil // the storage of a tick that changed much: let it go
	}
	if len(d.set.orphans) > 0 {
		for p := range d.set.orphans {
			w.Absent = append(w.Absent, p)
		}
		sortPrefixes(w.Absent)
	}
}

// sortPrefixes sorts ps as vip.Desired's lists are.
func sortPrefixes(ps []netip.Prefix) { slices.SortFunc(ps, netip.Prefix.Compare) }

// isOwned reports whether p was in what this tick's Set was told.
func (d *Daemon) isOwned(p netip.Prefix) bool {
	_, ok := d.set.want.Want(p)
	return ok
}
