package vip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// ErrNoInterface is wrapped by the errors of Observe and Set when the
// interface does not exist. It is worth a retry: the interface may be
// created later (by systemd-networkd, by the lab), and nothing was changed.
var ErrNoInterface = errors.New("no such interface")

// maxReads bounds how many times one call reads the interface when netlink
// keeps reporting that its dump was interrupted by a concurrent change. An
// interrupted dump may be missing addresses, so it is never taken as the
// truth: acting on it could delete or re-add a VIP that is in fact there.
const maxReads = 5

// State is what an interface holds, as far as rhi is concerned.
type State struct {
	// Exists is false when the interface is missing; the rest is then empty.
	Exists bool
	// Up is the administrative state (IFF_UP). BIRD announces nothing from
	// a link that is down, though the kernel keeps its addresses.
	Up bool
	// LowerUp is the carrier (IFF_LOWER_UP), for reports.
	LowerUp bool
	// Present lists, sorted, the VIPs on the interface. From Set: the
	// owned prefixes that are on it after the changes. From Observe, which
	// is told nothing about ownership: every host prefix (/32, /128) on it.
	// Set's is shared with the Announcer and the States it returned before
	// (10,000 VIPs are 320 KB): it is never changed in place, and the
	// caller must not change it either (append to it is safe: its capacity
	// is its length).
	Present []netip.Prefix
	// Foreign lists, sorted, the other addresses on the interface with the
	// prefix length the kernel reports (a 10.0.0.100/24 is foreign even when
	// 10.0.0.100/32 is a VIP). From Set: everything not owned. From Observe:
	// every address that is not a host prefix.
	Foreign []netip.Prefix
	// ForeignPeers lists, sorted, the point-to-point entries on the
	// interface: those whose peer is not their local address. They are
	// foreign too, and never in Present: a 10.9.0.1 peer 10.9.0.2/32 is not
	// the VIP 10.9.0.1/32 (BIRD announces its peer prefix, and the kernel
	// will not delete it as 10.9.0.1/32), whatever its local address.
	ForeignPeers []Peer
	// Changed counts the addresses Set added or deleted in this call
	// (repairs included); always 0 from Observe.
	Changed int
}

// Has reports whether p is in s.Present.
func (s State) Has(p netip.Prefix) bool {
	_, ok := slices.BinarySearchFunc(s.Present, p, netip.Prefix.Compare)
	return ok
}

// EachDifference calls f, in order, with every prefix that is in exactly
// one of a and b, which must be sorted by netip.Prefix.Compare without
// repeats (as State.Present is). Two States' Present that are one slice
// (Set shares it while nothing changed) have none, found without a walk.
func EachDifference(a, b []netip.Prefix, f func(netip.Prefix)) {
	if samePrefixes(a, b) {
		return
	}
	for len(a) > 0 && len(b) > 0 {
		switch c := compareHosts(a[0], b[0]); {
		case c < 0:
			f(a[0])
			a = a[1:]
		case c > 0:
			f(b[0])
			b = b[1:]
		default:
			a, b = a[1:], b[1:]
		}
	}
	for _, p := range a {
		f(p)
	}
	for _, p := range b {
		f(p)
	}
}

// compareHosts is netip.Prefix.Compare, faster for two host prefixes
// (what Present holds): they sort as their addresses do, one length per
// family, and Prefix.Compare masks both addresses first.
func compareHosts(x, y netip.Prefix) int {
	if x.Bits() == x.Addr().BitLen() && y.Bits() == y.Addr().BitLen() {
		return x.Addr().Compare(y.Addr())
	}
	return x.Compare(y)
}

// Announcer keeps the VIPs rhi owns on one interface. It remembers only
// what it needs to log changes once, to notice addresses changed by
// someone else, and to know a Set with nothing to do from the previous
// one; every call re-reads the kernel.
//
// An Announcer is not safe for concurrent use: the daemon's loop owns it
// and calls it from one goroutine.
type Announcer struct {
	nl    Netlink
	iface string
	log   logrus.FieldLogger

	// reached holds, for every prefix owned by the previous Set, whether it
	// was on the interface when that Set returned. It lets Set tell a change
	// made by someone else from one it asked for. Between calls it is nil
	// and kept as present (true) and absent (false), two sorted lists, the
	// first of which is kept anyway: 10,000 VIPs in a map are 0.77 MB.
	// A Set that plans builds it (reachedMap) and compact
	// drops it again; a Renew builds it for the next Set.
	reached map[netip.Prefix]bool
	// absent lists, sorted, the prefixes owned by the previous Set that
	// it left off the interface (see reached).
	absent []netip.Prefix
	// present is the sorted Present of the previous Set, reused while the
	// owned set and what is on the interface stay the same: sorting 10,000
	// prefixes on every tick would be a fifth of its cost. It is handed to
	// callers as State.Present, so it is replaced, never changed in place.
	// It is also the true part of reached.
	present []netip.Prefix
	// addrs is reused by every plan, to spare the daemon a 10,000-entry map
	// of garbage per tick; nil while armed (a Set that skips its plan needs
	// no map, and 10,000 entries are 0.8 MB of heap).
	addrs map[netip.Prefix]struct{}
	// list and peers are reused by every read, like addrs.
	list  []netip.Prefix
	peers []Peer
	// armed says that the previous Set read last from the interface and
	// found nothing to do: no change, no error, no foreign address, no
	// point-to-point entry. Then a.present and a.absent were its Desired,
	// and last held exactly a.present. While it stays armed (Renew
	// disarms it), a Set that reads last again with the same Desired
	// would plan nothing: it skips the plan (steady). last is kept as
	// lastAt: the position in a.present of each prefix of last, in the
	// dump's order (a.present holds them all, and is not replaced while
	// armed), 40 KB at 10,000 VIPs where a copy of the list was 320 KB;
	// or, when last was in a.present's order (the kernel lists addresses
	// as they were added, and Set adds them sorted), by lastSorted alone.
	// lastPresent is that Set's count of present VIPs, for its log line.
	armed       bool
	lastAt      []int32
	lastSorted  bool
	lastPresent int
	// fullOnly makes every Set plan (tests compare the two ways); skipped
	// counts the Sets that did not.
	fullOnly bool
	skipped  int
	// stale says that a.present may be out of date although owned and the
	// interface are as the previous Set left them: Renew changed reached.
	stale bool
	// foreign and foreignPeers are the foreign sets last logged.
	foreign      []netip.Prefix
	foreignPeers []Peer
	// linkKnown says whether up holds the link state of a previous Set.
	linkKnown bool
	up        bool
}

// New returns an Announcer for the interface named iface, reached through
// nl. It does not touch the interface.
func New(nl Netlink, iface string, log logrus.FieldLogger) *Announcer {
	return &Announcer{
		nl:    nl,
		iface: iface,
		log:   log.WithField("iface", iface),
		addrs: map[netip.Prefix]struct{}{},
	}
}

// reading is one consistent read of the interface.
type reading struct {
	link    netlink.Link
	up      bool
	lowerUp bool
	list    []netip.Prefix // in the order of the dump
	peers   []Peer         // point-to-point entries, not in list
}

// Observe reads the interface and changes nothing. Its error wraps
// ErrNoInterface when the interface is missing.
func (a *Announcer) Observe(ctx context.Context) (State, error) {
	r, err := a.read(ctx)
	if err != nil {
		return State{}, err
	}
	st := State{Exists: true, Up: r.up, LowerUp: r.lowerUp}
	for _, p := range r.list {
		if isHost(p) {
			st.Present = append(st.Present, p)
		} else {
			st.Foreign = append(st.Foreign, p)
		}
	}
	slices.SortFunc(st.Present, netip.Prefix.Compare)
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	st.Present = slices.Compact(st.Present)
	st.Foreign = slices.Compact(st.Foreign)
	st.ForeignPeers = sortedPeers(r.peers)
	return st, nil
}

// sortedPeers returns a sorted copy of peers, nil when there are none.
func sortedPeers(peers []Peer) []Peer {
	if len(peers) == 0 {
		return nil
	}
	out := slices.Clone(peers)
	slices.SortFunc(out, Peer.Compare)
	return out
}

// Set makes the interface hold want: every VIP of want.Present, none of
// want.Absent. Addresses in neither are never touched. Missing wanted
// addresses are added before present unwanted ones are deleted, so that a
// VIP moving between configurations never leaves a gap. A failed address
// does not stop the others: the error joins one error per failed address,
// and the returned State says what was reached. A want that breaks its
// contract (see Desired) changes nothing and is an error.
//
// Set is idempotent and may be called on every tick. Calling it again
// with the same want does no netlink writes, and when the interface reads
// as the previous Set left it, no work beyond the read and one comparison
// of want with that Set's. When the interface is missing it changes
// nothing and its error wraps ErrNoInterface. A cancelled ctx stops it
// between two sends of up to rtnl.BatchSize writes. Each netlink call is
// bounded by the netlink socket's own timeout (see NewHandle).
func (a *Announcer) Set(ctx context.Context, want Desired) (State, error) {
	r, err := a.read(ctx)
	if err != nil {
		a.armed = false
		if errors.Is(err, ErrNoInterface) {
			a.linkKnown = false
		}
		return State{}, err
	}
	a.noteLink(r.up)
	if a.steady(r, want) {
		a.skipped++
		a.log.Debugf("set: %d owned, %d present, %d to add, %d to delete", want.Len(), a.lastPresent, 0, 0)
		return a.state(r, 0, nil), nil
	}
	if err := want.check(); err != nil {
		a.armed = false
		return State{}, fmt.Errorf("set on %q: %w", a.iface, err)
	}
	c := plan(a.iface, a.set(r.list), r.peers, want, a.reachedMap())
	same := a.record(c, want)
	a.log.Debugf("set: %d owned, %d present, %d to add, %d to delete", want.Len(), c.present, len(c.adds), len(c.dels))
	made, errs := a.apply(ctx, r.link, c)
	a.compact(!same)
	slices.SortFunc(c.foreign, netip.Prefix.Compare)
	errs = append(c.errs, errs...)
	a.arm(r, c, len(errs) == 0)
	return a.state(r, made, c.foreign), errors.Join(errs...)
}

// set returns a.addrs, cleared and filled with list.
func (a *Announcer) set(list []netip.Prefix) map[netip.Prefix]struct{} {
	if a.addrs == nil {
		a.addrs = make(map[netip.Prefix]struct{}, len(list))
	}
	clear(a.addrs)
	for _, p := range list {
		a.addrs[p] = struct{}{}
	}
	return a.addrs
}

// steady reports whether a plan of what r read for want would find
// nothing to do, nothing to log and nothing to record, because the
// previous Set armed the Announcer (see Announcer.armed), r read the same
// list, there are no point-to-point entries, and want is that Set's
// (a.present and a.absent, which it left as they say). It costs one
// comparison per VIP, where a plan costs an insert into a map per address
// read and two lookups per owned VIP. The Announcer is armed only by a Set
// that compacted a.reached, and disarmed by Renew, which builds it: a
// built a.reached (never while armed) makes it plan.
func (a *Announcer) steady(r reading, want Desired) bool {
	return a.armed && !a.fullOnly && !a.stale && a.reached == nil && len(r.peers) == 0 && a.readLast(r.list) &&
		samePrefixes(want.Present, a.present) && samePrefixes(want.Absent, a.absent)
}

// samePrefixes is slices.Equal, at once for one slice twice (a caller may
// hand Set back the Present of the State it returned).
func samePrefixes(x, y []netip.Prefix) bool {
	if len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]) {
		return true
	}
	return slices.Equal(x, y)
}

// reachedMap builds a.reached from a.present and a.absent, unless it is
// built already, and returns it.
func (a *Announcer) reachedMap() map[netip.Prefix]bool {
	if a.reached == nil {
		a.reached = make(map[netip.Prefix]bool, len(a.present)+len(a.absent))
		for _, p := range a.present {
			a.reached[p] = true
		}
		for _, p := range a.absent {
			a.reached[p] = false
		}
	}
	return a.reached
}

// compact lets a.reached go once a Set is done with it, rebuilding
// a.present and a.absent from it first if changed (else they still say
// what it says: the Set found and made no change, and no Renew made one
// since the previous Set, see stale).
func (a *Announcer) compact(changed bool) {
	if changed {
		a.refreshPresent()
	}
	a.reached = nil
}

// arm arms the Announcer after a Set that planned c from r and ended with
// no error (clean), if it found nothing else to do (see Announcer.armed),
// and disarms it otherwise.
func (a *Announcer) arm(r reading, c changes, clean bool) {
	a.armed = clean && !a.stale && len(c.adds) == 0 && len(c.dels) == 0 && len(c.foreign) == 0 && len(r.peers) == 0 && a.keepLast(r.list)
	if a.armed {
		a.lastPresent = c.present
		a.addrs = nil
	}
}

// keepLast sets a.lastAt to the position in a.present of each prefix of
// list, and reports whether a.present holds every one (it does when a Set
// found nothing to do: what it read were the owned VIPs it left present).
func (a *Announcer) keepLast(list []netip.Prefix) bool {
	a.lastAt, a.lastSorted = a.lastAt[:0], slices.Equal(list, a.present)
	if a.lastSorted {
		a.lastAt = nil
		return true
	}
	for _, p := range list {
		i, ok := slices.BinarySearchFunc(a.present, p, netip.Prefix.Compare)
		if !ok {
			return false
		}
		a.lastAt = append(a.lastAt, int32(i))
	}
	return true
}

// readLast reports whether list is the list keepLast was given, prefix by
// prefix in the same order, while armed.
func (a *Announcer) readLast(list []netip.Prefix) bool {
	if a.lastSorted {
		return slices.Equal(list, a.present)
	}
	if len(list) != len(a.lastAt) {
		return false
	}
	for i, p := range list {
		if a.present[a.lastAt[i]] != p {
			return false
		}
	}
	return true
}

// state is what Set returns and logs: the link as r read it, a.present,
// the sorted foreign and what became of the point-to-point entries.
func (a *Announcer) state(r reading, made int, foreign []netip.Prefix) State {
	st := State{Exists: true, Up: r.up, LowerUp: r.lowerUp, Changed: made, Foreign: foreign}
	if len(a.present) > 0 {
		st.Present = a.present // shared: see State.Present
	}
	st.ForeignPeers = sortedPeers(r.peers)
	a.noteForeign(st.Foreign, st.ForeignPeers)
	return st
}

// DeletePeers deletes the point-to-point entries peers from the interface
// (unmanaged_addresses: withdraw: BIRD announces each one's peer prefix
// with no health check behind it). Set never touches them: the kernel
// names such an entry by its local address and peer prefix, not by a host
// prefix. An entry already gone is no error; the error joins one error
// per entry that could not be deleted.
func (a *Announcer) DeletePeers(ctx context.Context, peers []Peer) error {
	if len(peers) == 0 {
		return nil
	}
	link, err := a.nl.LinkByName(a.iface)
	if err != nil {
		return fmt.Errorf("read interface %q: %w", a.iface, err)
	}
	changes := make([]rtnl.AddrChange, len(peers))
	for i, q := range peers {
		changes[i] = rtnl.AddrChange{Prefix: netip.PrefixFrom(q.Local, q.Local.BitLen()), Peer: q.Peer}
	}
	answers, stop := a.nl.WriteAddrs(ctx, link.Attrs().Index, changes)
	var errs []error
	for i, q := range peers {
		switch err := answers[i]; {
		case err == nil:
			a.log.WithFields(logrus.Fields{"entry": q.String(), "action": "delete"}).Warn("deleted point-to-point entry")
		case isGone(err) || err == rtnl.ErrNotWritten:
		default:
			errs = append(errs, fmt.Errorf("point-to-point entry %q: delete on %q: %w%s", q, a.iface, err, permHint(err)))
		}
	}
	if stop != nil {
		errs = append(errs, fmt.Errorf("delete point-to-point entries on %q: %w", a.iface, stop))
	}
	return errors.Join(errs...)
}

// record notes in a.reached the presence of the VIPs plan sighted and
// forgets those no longer owned. It reports whether want and the interface
// are as the previous Set left them, with nothing to write: then a.present
// is still right.
func (a *Announcer) record(c changes, want Desired) bool {
	for _, s := range c.sightings {
		a.reached[s.p] = s.present
		if w, _ := want.Want(s.p); s.byOther && w == s.present {
			a.log.WithField("vip", s.p.String()).Debug("address changed by someone else, now as wanted")
		}
	}
	same := !a.stale && len(c.sightings) == 0 && len(c.adds) == 0 && len(c.dels) == 0
	if len(a.reached) > c.hosts { // some prefixes are no longer owned
		same = false
		for p := range a.reached {
			if _, ok := want.Want(p); !ok {
				delete(a.reached, p)
			}
		}
	}
	return same
}

// apply makes the changes, adds first, records in a.reached each one made
// (or found made by someone else meanwhile) and logs them, and returns how
// many there were and one error per change that failed or was not made.
func (a *Announcer) apply(ctx context.Context, link netlink.Link, c changes) (int, []error) {
	ops := append(c.adds, c.dels...)
	if len(ops) == 0 {
		return 0, nil
	}
	answers, stop := a.writeAll(ctx, link.Attrs().Index, ops)
	var errs []error
	var needless []refused
	made, added, unwritten := 0, 0, 0
	for i, o := range ops {
		switch err := answers[i]; {
		case err == rtnl.ErrNotWritten:
			unwritten++ // the next Set reads again and retries
		case !o.add && isGone(err):
			needless = append(needless, refused{o, err})
		case err != nil:
			errs = append(errs, fmt.Errorf("vip %q: %s on %q: %w%s", o.p, actionName(o.add), a.iface, err, permHint(err)))
		default:
			a.made(o)
			made++
			if o.add {
				added++
			}
		}
	}
	if stop != nil {
		errs = append(errs, fmt.Errorf("set on %q: %d of %d changes not made: %w", a.iface, unwritten, len(ops), stop))
	}
	if len(needless) > 0 {
		made += a.checkGone(ctx, needless, &errs)
	}
	a.logSummary(added, made-added)
	return made, errs
}

// made records and logs a change that reached its goal.
func (a *Announcer) made(o op) {
	a.logChange(o)
	a.reached[o.p] = o.add
}

// refreshPresent rebuilds a.present and a.absent, sorted, from a.reached;
// a.present in a new slice exactly as long as it: the old one may be held
// by callers (see State.Present).
func (a *Announcer) refreshPresent() {
	a.stale = false
	n := 0
	for _, in := range a.reached {
		if in {
			n++
		}
	}
	a.present = nil
	if n > 0 {
		a.present = make([]netip.Prefix, 0, n)
	}
	a.absent = a.absent[:0]
	for p, in := range a.reached {
		if in {
			a.present = append(a.present, p)
		} else {
			a.absent = append(a.absent, p)
		}
	}
	// reached holds host prefixes only (plan sights no other), and host
	// prefixes of one family have one length, so comparing addresses
	// orders them as Prefix.Compare would, at a third of the cost.
	byAddr := func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) }
	slices.SortFunc(a.present, byAddr)
	slices.SortFunc(a.absent, byAddr)
	if len(a.absent) == 0 {
		a.absent = nil // 10,000 VIPs withdrawn once need not keep 320 KB
	}
}

// writeAll makes the changes, in order, in a few sends, and returns the
// answer to each as Netlink.WriteAddrs does, and why it stopped early. An
// add of an address that is already there has reached its goal.
func (a *Announcer) writeAll(ctx context.Context, index int, ops []op) ([]error, error) {
	changes := make([]rtnl.AddrChange, len(ops))
	for i, o := range ops {
		changes[i] = rtnl.AddrChange{Prefix: o.p, Add: o.add}
	}
	answers, err := a.nl.WriteAddrs(ctx, index, changes)
	for i, o := range ops {
		if o.add && errors.Is(answers[i], unix.EEXIST) {
			answers[i] = nil
		}
	}
	return answers, err
}

// write makes one change as writeAll does, once begun whatever becomes of
// ctx. A delete the kernel calls needless (isGone) is returned as such: the
// address may be gone, or the kernel may hold no entry of that name though
// a read showed one, and only another read can tell.
func (a *Announcer) write(ctx context.Context, index int, o op) error {
	answers, err := a.writeAll(context.WithoutCancel(ctx), index, []op{o})
	if answers[0] == rtnl.ErrNotWritten && err != nil {
		return err
	}
	return answers[0]
}

// refused is a delete the kernel answered as needless, with its answer.
type refused struct {
	o   op
	err error
}

// checkGone reads the interface again after deletes the kernel called
// needless. An address no longer listed was deleted by someone else since
// the read, which is the goal reached: it is recorded and logged as a
// delete, and counted in the result. One still listed is not gone, and its
// delete is an error until it is.
func (a *Announcer) checkGone(ctx context.Context, dels []refused, errs *[]error) int {
	now, err := a.readInto(ctx, nil, nil)
	listed := make(map[netip.Prefix]bool, len(now.list))
	for _, p := range now.list {
		listed[p] = true
	}
	n := 0
	for _, d := range dels {
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Errorf("vip %q: delete on %q: %w, and reading again to check failed: %w", d.o.p, a.iface, d.err, err))
		case listed[d.o.p]:
			*errs = append(*errs, fmt.Errorf("vip %q: delete on %q: %w, yet the address is still listed", d.o.p, a.iface, d.err))
		default:
			a.made(d.o)
			n++
		}
	}
	return n
}

// logChange logs one change Set made. A repair of someone else's change
// is worth a warning each; the others are what the caller asked for, and
// the caller logs its reasons: here they get a Debug line each and one
// Info line per Set (logSummary), since 1,000 lines take longer to write
// than the 1,000 changes.
func (a *Announcer) logChange(o op) {
	e := a.log.WithFields(logrus.Fields{"vip": o.p.String(), "action": actionName(o.add)})
	if o.repair {
		e.WithField("reason", "changed by someone else").Warn("repaired address")
	} else if o.add {
		e.Debug("added address")
	} else {
		e.Debug("deleted address")
	}
}

// logSummary logs what one Set changed, in one line.
func (a *Announcer) logSummary(added, deleted int) {
	if added+deleted > 0 {
		a.log.WithFields(logrus.Fields{"added": added, "deleted": deleted}).Info("interface updated")
	}
}

// noteForeign logs the foreign addresses when they differ from the last
// ones logged: an operator hears about them once, not on every tick.
// Point-to-point entries are shown as ip(8) shows them, "10.9.0.1 peer
// 10.9.0.2/32", so that one is not mistaken for the VIP 10.9.0.1/32.
func (a *Announcer) noteForeign(foreign []netip.Prefix, peers []Peer) {
	if slices.Equal(foreign, a.foreign) && slices.Equal(peers, a.foreignPeers) {
		return
	}
	// The caller may keep and change its State.
	a.foreign, a.foreignPeers = slices.Clone(foreign), slices.Clone(peers)
	if len(foreign)+len(peers) == 0 {
		a.log.Info("no foreign addresses on interface any more")
		return
	}
	all := make([]string, 0, len(foreign)+len(peers))
	for _, p := range foreign {
		if !p.Addr().IsLoopback() { // interface: lo carries ::1 and 127/8: not news
			all = append(all, p.String())
		}
	}
	for _, p := range peers {
		all = append(all, p.String())
	}
	if len(all) == 0 {
		return
	}
	a.log.Infof("foreign addresses on interface, left alone: [%s]", strings.Join(all, " "))
}

// noteLink logs a change of the link's administrative state once.
func (a *Announcer) noteLink(up bool) {
	switch {
	case !up && (!a.linkKnown || a.up):
		a.log.Warn("interface is down: addresses are kept, but BIRD announces nothing from it")
	case up && a.linkKnown && !a.up:
		a.log.Info("interface is up again")
	}
	a.linkKnown, a.up = true, up
}

// read reads the link and its addresses into the Announcer's own buffers,
// again while netlink reports that the dump was interrupted, at most
// maxReads times.
func (a *Announcer) read(ctx context.Context) (reading, error) {
	r, err := a.readInto(ctx, a.list, a.peers)
	// Keep what append grew, for the next read.
	a.list, a.peers = r.list[:0], r.peers[:0]
	return r, err
}

// readInto is read with the addresses appended to list[:0] and the peer
// entries to peers[:0]. The reading's list and peers are what became of
// them, even on an error.
func (a *Announcer) readInto(ctx context.Context, list []netip.Prefix, peers []Peer) (reading, error) {
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return reading{list: list, peers: peers}, fmt.Errorf("read %q: %w", a.iface, err)
		}
		r, err := a.readOnce(list[:0], peers[:0])
		list, peers = r.list, r.peers
		if err == nil || !errors.Is(err, netlink.ErrDumpInterrupted) {
			return r, err
		}
		if i == maxReads {
			return reading{list: list, peers: peers}, fmt.Errorf("%w (%d reads)", err, i)
		}
		a.log.WithError(err).Debug("netlink dump interrupted, reading again")
	}
}

// readOnce reads the link and its addresses once, appending them to list
// and peers. The reading's list and peers are what became of them, even
// on an error, so that their storage can be reused.
func (a *Announcer) readOnce(list []netip.Prefix, peers []Peer) (reading, error) {
	link, err := a.nl.LinkByName(a.iface)
	if err != nil {
		if isLinkNotFound(err) {
			return reading{list: list, peers: peers}, fmt.Errorf("%w %q: %w", ErrNoInterface, a.iface, err)
		}
		return reading{list: list, peers: peers}, fmt.Errorf("read interface %q: %w", a.iface, err)
	}
	attrs := link.Attrs()
	r := reading{
		link:    link,
		up:      attrs.Flags&net.FlagUp != 0,
		lowerUp: attrs.RawFlags&unix.IFF_LOWER_UP != 0,
	}
	// AppendPrefixes leaves out link-local addresses: they come with every
	// link (the kernel's fe80::/64 on an ifb), are never VIPs and are not
	// worth reporting.
	r.list, r.peers, err = a.nl.AppendPrefixes(attrs.Index, list, peers)
	if err != nil {
		return reading{list: r.list, peers: r.peers}, fmt.Errorf("list addresses on %q: %w", a.iface, err)
	}
	return r, nil
}

func actionName(add bool) string {
	if add {
		return "add"
	}
	return "delete"
}

// Renew makes the kernel tell its listeners about p again, for a router
// (BIRD) that missed the notification: a present address is deleted and
// added back, an absent one added and deleted. The address ends as present
// says. Renewing is harmless to routing exactly when it is needed: BIRD's
// table disagrees with the interface, so the brief opposite state matches
// what BIRD already believes.
//
// A renewal is no change of state, so it is logged at Debug only (the
// caller reports a batch of them). A cancelled ctx stops it before the
// first write, never between the two (each is bounded by the socket's
// timeout). When the second write fails, the address is left in the
// opposite state and the error says so; the next Set puts it right as an
// ordinary change of its own, not as a repair of someone else's.
func (a *Announcer) Renew(ctx context.Context, p netip.Prefix, present bool) error {
	if !isHost(p) {
		return fmt.Errorf("vip %q: not a /32 or /128 host prefix", p)
	}
	a.armed = false // it changes a.reached and the order of the dump
	reached := a.reachedMap()
	r, err := a.read(ctx)
	if err != nil {
		return err
	}
	have := slices.Contains(r.list, p)
	if have != present {
		return fmt.Errorf("vip %q: renew on %q: the address is %s, not %s", p, a.iface, presence(have), presence(present))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("vip %q: renew on %q: %w", p, a.iface, err)
	}
	for i, add := range []bool{!present, present} {
		err := a.write(ctx, r.link.Attrs().Index, op{p: p, add: add})
		if !add && isGone(err) {
			err = nil // someone else took it meanwhile: the goal of this step
		}
		if err == nil {
			continue
		}
		err = fmt.Errorf("vip %q: renew (%s) on %q: %w%s", p, actionName(add), a.iface, err, permHint(err))
		if i == 1 {
			reached[p] = !present
			a.stale = true
			err = fmt.Errorf("%w; the address is %s until the next Set", err, presence(!present))
		}
		return err
	}
	if was, ok := reached[p]; !ok || was != present {
		a.stale = true // a.present and a.absent no longer say what reached says
	}
	reached[p] = present
	a.log.WithFields(logrus.Fields{"vip": p.String(), "action": "renew"}).Debug("renewed address for BIRD")
	return nil
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

// permHint names what is missing when the kernel refuses an address change:
// the one capability rhi needs.
func permHint(err error) string {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return " (changing addresses needs CAP_NET_ADMIN)"
	}
	return ""
}
