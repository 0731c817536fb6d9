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

// Peer is a point-to-point entry on an interface: a local address and the
// prefix of the peer the kernel routes to.
type Peer struct {
	Local netip.Addr
	Peer  netip.Prefix
}

// String formats p as ip(8) does: "10.9.0.1 peer 10.9.0.2/32".
func (p Peer) String() string { return p.Local.String() + " peer " + p.Peer.String() }

func comparePeers(x, y Peer) int {
	if c := x.Local.Compare(y.Local); c != 0 {
		return c
	}
	return x.Peer.Compare(y.Peer)
}

// Has reports whether p is in s.Present.
func (s State) Has(p netip.Prefix) bool {
	_, ok := slices.BinarySearchFunc(s.Present, p, netip.Prefix.Compare)
	return ok
}

// Announcer keeps the VIPs rhi owns on one interface. It remembers only
// what it needs to log changes once (and to notice addresses changed by
// someone else); every call re-reads the kernel.
//
// An Announcer is not safe for concurrent use: the daemon's loop owns it
// and calls it from one goroutine.
type Announcer struct {
	nl    Netlink
	iface string
	log   logrus.FieldLogger

	// reached holds, for every prefix owned by the previous Set, whether it
	// was on the interface when that Set returned. It lets Set tell a change
	// made by someone else from one it asked for.
	reached map[netip.Prefix]bool
	// present is the sorted Present of the previous Set, reused while the
	// owned set and what is on the interface stay the same: sorting 10,000
	// prefixes on every tick would be a fifth of its cost.
	present []netip.Prefix
	// addrs is reused by every read, to spare the daemon a 10,000-entry map
	// of garbage per tick.
	addrs map[netip.Prefix]struct{}
	// peers is reused by every read, like addrs.
	peers []Peer
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
		nl:      nl,
		iface:   iface,
		log:     log.WithField("iface", iface),
		reached: map[netip.Prefix]bool{},
		addrs:   map[netip.Prefix]struct{}{},
	}
}

// reading is one consistent read of the interface.
type reading struct {
	link    netlink.Link
	up      bool
	lowerUp bool
	addrs   map[netip.Prefix]struct{}
	peers   []Peer // point-to-point entries, not in addrs
}

// Observe reads the interface and changes nothing. Its error wraps
// ErrNoInterface when the interface is missing.
func (a *Announcer) Observe(ctx context.Context) (State, error) {
	r, err := a.read(ctx)
	if err != nil {
		return State{}, err
	}
	st := State{Exists: true, Up: r.up, LowerUp: r.lowerUp}
	for p := range r.addrs {
		if isHost(p) {
			st.Present = append(st.Present, p)
		} else {
			st.Foreign = append(st.Foreign, p)
		}
	}
	slices.SortFunc(st.Present, netip.Prefix.Compare)
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	st.ForeignPeers = sortedPeers(r.peers)
	return st, nil
}

// sortedPeers returns a sorted copy of peers, nil when there are none.
func sortedPeers(peers []Peer) []Peer {
	if len(peers) == 0 {
		return nil
	}
	out := slices.Clone(peers)
	slices.SortFunc(out, comparePeers)
	return out
}

// op is one address change.
type op struct {
	p      netip.Prefix
	add    bool
	repair bool // the address was changed by someone else since the previous Set
}

// Set makes the interface hold exactly the wanted ones among owned: owned
// maps every VIP rhi is responsible for to whether it should be present.
// Addresses not in owned are never touched. Missing wanted addresses are
// added before present unwanted ones are deleted, so that a VIP moving
// between configurations never leaves a gap. A failed address does not stop
// the others: the error joins one error per failed address, and the
// returned State says what was reached. Calling Set again with the same
// owned does no netlink writes.
//
// Set is idempotent and may be called on every tick. When the interface is
// missing it changes nothing and its error wraps ErrNoInterface. A
// cancelled ctx stops it between two writes (a Handle writes in batches:
// between two sends of up to batchSize writes). Each netlink call is
// bounded by the netlink socket's own timeout (see NewHandle).
func (a *Announcer) Set(ctx context.Context, owned map[netip.Prefix]bool) (State, error) {
	r, err := a.read(ctx)
	if err != nil {
		if errors.Is(err, ErrNoInterface) {
			a.linkKnown = false
		}
		return State{}, err
	}
	a.noteLink(r.up)

	// One pass over owned: diff, note what is present in a.reached, and take
	// every owned address out of r.addrs so that what is left is foreign. At
	// 10,000 VIPs this pass is most of the cost of a tick that changes nothing.
	var errs []error
	var adds, dels []op
	hosts, present := 0, 0
	same := !a.stale // owned and the interface are as the previous Set left them
	for p, want := range owned {
		if !isHost(p) {
			errs = append(errs, fmt.Errorf("vip %q: not a /32 or /128 host prefix", p))
			continue
		}
		hosts++
		_, have := r.addrs[p]
		if have {
			delete(r.addrs, p)
			present++
		}
		prev, known := a.reached[p]
		changed := known && prev != have
		if !known || changed {
			a.reached[p] = have
		}
		same = same && known && !changed
		switch {
		case want && !have:
			adds = append(adds, op{p: p, add: true, repair: changed})
		case !want && have:
			dels = append(dels, op{p: p, repair: changed})
		case changed:
			a.log.WithField("vip", p.String()).Debug("address changed by someone else, now as wanted")
		}
	}
	if len(a.reached) > hosts { // some prefixes are no longer owned
		same = false
		for p := range a.reached {
			if _, ok := owned[p]; !ok {
				delete(a.reached, p)
			}
		}
	}
	byPrefix := func(x, y op) int { return x.p.Compare(y.p) }
	slices.SortFunc(adds, byPrefix)
	slices.SortFunc(dels, byPrefix)
	adds = a.dropTaken(adds, r.addrs, r.peers, &errs)
	a.log.Debugf("set: %d owned, %d present, %d to add, %d to delete", len(owned), present, len(adds), len(dels))

	same = same && len(adds) == 0 && len(dels) == 0
	changed, added := 0, 0
	var needless []refused
	ops := append(adds, dels...)
	answers, stop := a.writeAll(ctx, r.link, ops)
	unwritten := 0
	for i, o := range ops {
		err := answers[i]
		if err == ErrNotWritten {
			unwritten++ // the next Set reads again and retries
			continue
		}
		if !o.add && isGone(err) {
			needless = append(needless, refused{o, err})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("vip %q: %s on %q: %w%s", o.p, actionName(o.add), a.iface, err, permHint(err)))
			continue
		}
		a.logChange(o)
		a.reached[o.p] = o.add
		changed++
		if o.add {
			added++
		}
	}
	if stop != nil {
		errs = append(errs, fmt.Errorf("set on %q: %d of %d changes not made: %w", a.iface, unwritten, len(ops), stop))
	}
	if len(needless) > 0 {
		changed += a.checkGone(ctx, needless, &errs)
	}
	a.logSummary(added, changed-added)

	if !same {
		a.stale = false
		a.present = a.present[:0] // callers only ever get copies
		for p, in := range a.reached {
			if in {
				a.present = append(a.present, p)
			}
		}
		// Host prefixes of one family have one length, so comparing
		// addresses orders them as Prefix.Compare would, at a third of the cost.
		slices.SortFunc(a.present, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	}
	st := State{Exists: true, Up: r.up, LowerUp: r.lowerUp, Changed: changed}
	if len(a.present) > 0 {
		st.Present = slices.Clone(a.present) // the caller may keep and change its State
	}
	for p := range r.addrs {
		st.Foreign = append(st.Foreign, p)
	}
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	st.ForeignPeers = sortedPeers(r.peers)
	a.noteForeign(st.Foreign, st.ForeignPeers)
	return st, errors.Join(errs...)
}

// dropTaken takes out of adds the IPv6 VIPs whose address is already on the
// interface with another prefix length (2001:db8::1/64 for 2001:db8::1/128)
// or as the local end of a point-to-point entry, adding an error for each.
// The kernel holds an IPv6 address once whatever its length or peer, so the
// add would fail with EEXIST, be taken for success, and BIRD would go on
// announcing the other prefix: a conflict an operator must hear about on
// every tick. foreign holds the addresses not owned. (IPv4 has no such
// conflict: 10.9.0.1/32 and 10.9.0.1 peer 10.9.0.2/32 are two entries.)
func (a *Announcer) dropTaken(adds []op, foreign map[netip.Prefix]struct{}, peers []Peer, errs *[]error) []op {
	if !slices.ContainsFunc(adds, func(o op) bool { return o.p.Addr().Is6() }) {
		return adds
	}
	taken := map[netip.Addr]fmt.Stringer{}
	for q := range foreign {
		if q.Addr().Is6() {
			taken[q.Addr()] = q
		}
	}
	for _, q := range peers {
		if q.Local.Is6() {
			taken[q.Local] = q
		}
	}
	return slices.DeleteFunc(adds, func(o op) bool {
		q, ok := taken[o.p.Addr()]
		if ok {
			*errs = append(*errs, fmt.Errorf("vip %q: add on %q: the address is already there as %q", o.p, a.iface, q))
		}
		return ok
	})
}

// writeAll makes the changes, in order, and returns the answer to each as
// batchWriter.WriteAddrs does: in a few sends when a.nl is a batchWriter,
// else one write after the other, stopping when ctx ends. An add of an
// address that is already there has reached its goal.
func (a *Announcer) writeAll(ctx context.Context, link netlink.Link, ops []op) ([]error, error) {
	if bw, ok := a.nl.(batchWriter); ok {
		changes := make([]AddrChange, len(ops))
		for i, o := range ops {
			changes[i] = AddrChange{Prefix: o.p, Add: o.add}
		}
		answers, err := bw.WriteAddrs(ctx, link.Attrs().Index, changes)
		for i, o := range ops {
			if o.add && errors.Is(answers[i], unix.EEXIST) {
				answers[i] = nil
			}
		}
		return answers, err
	}
	answers := make([]error, len(ops))
	for i, o := range ops {
		if err := ctx.Err(); err != nil {
			for j := i; j < len(ops); j++ {
				answers[j] = ErrNotWritten
			}
			return answers, err
		}
		answers[i] = a.write(link, o)
	}
	return answers, nil
}

// write makes one change. An add of an address that is already there has
// reached its goal. A delete the kernel calls needless (isGone) is returned
// as such: the address may be gone, or the kernel may hold no entry of that
// name though a read showed one, and only another read can tell.
func (a *Announcer) write(link netlink.Link, o op) error {
	addr := hostAddr(o.p)
	if !o.add {
		return a.nl.AddrDel(link, addr)
	}
	if err := a.nl.AddrAdd(link, addr); !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
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
	now, err := a.readInto(ctx, map[netip.Prefix]struct{}{}, nil)
	n := 0
	for _, d := range dels {
		_, listed := now.addrs[d.o.p]
		switch {
		case err != nil:
			*errs = append(*errs, fmt.Errorf("vip %q: delete on %q: %w, and reading again to check failed: %w", d.o.p, a.iface, d.err, err))
		case listed:
			*errs = append(*errs, fmt.Errorf("vip %q: delete on %q: %w, yet the address is still listed", d.o.p, a.iface, d.err))
		default:
			a.logChange(d.o)
			a.reached[d.o.p] = false
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
		all = append(all, p.String())
	}
	for _, p := range peers {
		all = append(all, p.String())
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
	r, err := a.readInto(ctx, a.addrs, a.peers)
	a.peers = r.peers[:0] // keep what append grew, for the next read
	return r, err
}

// readInto is read with the addresses put into addrs (cleared first) and
// the peer entries appended to peers[:0].
func (a *Announcer) readInto(ctx context.Context, addrs map[netip.Prefix]struct{}, peers []Peer) (reading, error) {
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return reading{}, fmt.Errorf("read %q: %w", a.iface, err)
		}
		r, err := a.readOnce(addrs, peers[:0])
		peers = r.peers
		if err == nil || !errors.Is(err, netlink.ErrDumpInterrupted) {
			return r, err
		}
		if i == maxReads {
			return reading{}, fmt.Errorf("%w (%d reads)", err, i)
		}
		a.log.WithField("err", err).Debug("netlink dump interrupted, reading again")
	}
}

// readOnce reads the link and its addresses once, into addrs (cleared
// first) and peers. The reading's peers is what became of peers, even on
// an error, so that its storage can be reused.
func (a *Announcer) readOnce(addrs map[netip.Prefix]struct{}, peers []Peer) (reading, error) {
	link, err := a.nl.LinkByName(a.iface)
	if err != nil {
		if isLinkNotFound(err) {
			return reading{peers: peers}, fmt.Errorf("%w %q: %w", ErrNoInterface, a.iface, err)
		}
		return reading{peers: peers}, fmt.Errorf("read interface %q: %w", a.iface, err)
	}
	attrs := link.Attrs()
	clear(addrs)
	r := reading{
		link:    link,
		up:      attrs.Flags&net.FlagUp != 0,
		lowerUp: attrs.RawFlags&unix.IFF_LOWER_UP != 0,
		addrs:   addrs,
	}
	// Link-local addresses come with every link (the kernel's fe80::/64 on
	// an ifb or a dummy); they are never VIPs and not worth reporting.
	if pl, ok := a.nl.(prefixLister); ok {
		r.peers, err = pl.ListPrefixes(attrs.Index, r.addrs, peers)
		if err != nil {
			return reading{peers: r.peers}, fmt.Errorf("list addresses on %q: %w", a.iface, err)
		}
		return r, nil
	}
	list, err := a.nl.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return reading{peers: peers}, fmt.Errorf("list addresses on %q: %w", a.iface, err)
	}
	for _, ad := range list {
		p, peer, ok := fromLibrary(ad)
		switch {
		case !ok:
		case peer.Local.IsValid():
			if !peer.Local.IsLinkLocalUnicast() {
				peers = append(peers, peer)
			}
		case !p.Addr().IsLinkLocalUnicast():
			r.addrs[p] = struct{}{}
		}
	}
	r.peers = peers
	return r, nil
}

// fromLibrary reads an address of the netlink library as parseIfaddr reads
// the kernel's message: a point-to-point entry (a Peer that is not the
// local address) as a Peer, any other entry as a prefix. The library gives
// the local address of an entry with a Peer a full-length mask; the
// kernel's prefix length is the peer's.
func fromLibrary(ad netlink.Addr) (netip.Prefix, Peer, bool) {
	p, ok := toPrefix(ad)
	if !ok || ad.Peer == nil {
		return p, Peer{}, ok
	}
	q, ok := toPrefix(netlink.Addr{IPNet: ad.Peer})
	switch {
	case !ok || q.Addr().Is4() != p.Addr().Is4():
		return netip.Prefix{}, Peer{}, false
	case q.Addr() == p.Addr():
		return q, Peer{}, true
	}
	return netip.Prefix{}, Peer{Local: p.Addr(), Peer: q}, true
}

// toPrefix turns a kernel address into the address and prefix length that
// `ip addr` shows, e.g. 10.0.0.100/24 (not masked).
func toPrefix(ad netlink.Addr) (netip.Prefix, bool) {
	if ad.IPNet == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(ad.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := ad.Mask.Size()
	if bits == 32 {
		ip = ip.Unmap()
	}
	p := netip.PrefixFrom(ip, ones)
	return p, p.IsValid()
}

// hostAddr is the netlink form of a VIP: scope global, so that BIRD's
// direct protocol takes it, and for IPv6 nodad, so that it is usable (and
// visible to BIRD) at once instead of tentative for a second.
func hostAddr(p netip.Prefix) *netlink.Addr {
	ip := p.Addr()
	n := ip.BitLen()
	ad := &netlink.Addr{
		IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(n, n)},
		Scope: unix.RT_SCOPE_UNIVERSE,
	}
	if ip.Is6() {
		ad.Flags = unix.IFA_F_NODAD
	}
	return ad
}

// isHost reports whether p is a VIP rhi can manage: a /32 or a /128 that is
// not an IPv4-mapped IPv6 address.
func isHost(p netip.Prefix) bool {
	return p.IsValid() && p.Bits() == p.Addr().BitLen() && !p.Addr().Is4In6()
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
	r, err := a.read(ctx)
	if err != nil {
		return err
	}
	_, have := r.addrs[p]
	if have != present {
		return fmt.Errorf("vip %q: renew on %q: the address is %s, not %s", p, a.iface, presence(have), presence(present))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("vip %q: renew on %q: %w", p, a.iface, err)
	}
	for i, add := range []bool{!present, present} {
		err := a.write(r.link, op{p: p, add: add})
		if !add && isGone(err) {
			err = nil // someone else took it meanwhile: the goal of this step
		}
		if err == nil {
			continue
		}
		err = fmt.Errorf("vip %q: renew (%s) on %q: %w%s", p, actionName(add), a.iface, err, permHint(err))
		if i == 1 {
			a.reached[p] = !present
			a.stale = true
			err = fmt.Errorf("%w; the address is %s until the next Set", err, presence(!present))
		}
		return err
	}
	a.reached[p] = present
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
