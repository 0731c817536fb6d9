package vip

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// fakeKernel is a Netlink that behaves like the kernel where rhi cares:
// adding an address twice fails with EEXIST (for IPv6 the same address
// with any prefix length or peer counts, as in the kernel), deleting one
// that is not there fails with EADDRNOTAVAIL, links are found by index, and
// a link that is missing answers ENODEV. Its WriteAddrs writes in sends of
// rtnl.BatchSize changes and checks ctx between two, as a Handle does. It
// logs every write and can inject failures. (Package rtnl tests that a
// Handle speaks the kernel's bytes; this fake speaks the Netlink contract.)
//
// Point-to-point entries ("10.9.0.1 peer 10.9.0.2/32") are kept apart, as
// the kernel matches them: an IPv4 one is another entry than 10.9.0.1/32
// (both can be there, and deleting 10.9.0.1/32 never takes the peer entry),
// while IPv6 matches a delete on address and length only, so deleting
// 2001:db8::1/128 takes 2001:db8::1 peer 2001:db8::2/128.
type fakeKernel struct {
	links map[string]*fakeLink

	ops []string // every write attempted, in order: "add 10.0.0.1/32"
	// trace is ops with the link's name: "rhi1 add 10.0.0.1/32", across links.
	trace  []string
	writes int

	failAdd map[netip.Prefix]error // AddrAdd of this prefix fails with the error
	failDel map[netip.Prefix]error
	// interrupted is how many of the next reads return half of the list
	// and say that the dump was interrupted.
	interrupted int
	// beforeWrite, when set, runs before each write is applied, to play
	// someone else changing the interface at the same time.
	beforeWrite func(op string, p netip.Prefix)
	// loseAcks, when n > 0, makes WriteAddrs lose its answers from the n-th
	// change on, as a socket whose deadline passes: the changes before it
	// are made and answered, the n-th is made, and the rest of that send is
	// neither made nor answered.
	loseAcks int
	// reversed makes AppendPrefixes list in reverse order.
	reversed bool
}

type fakeLink struct {
	index int
	up    bool
	addrs map[netip.Prefix]fakeAddr
	peers map[Peer]fakeAddr
}

type fakeAddr struct {
	flags int
	scope int
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{links: map[string]*fakeLink{}}
}

// addLink creates an up link with the given addresses, as if by ip(8):
// "10.0.0.1/32", or "10.9.0.1 peer 10.9.0.2/32".
func (f *fakeKernel) addLink(name string, addrs ...string) *fakeLink {
	l := &fakeLink{index: len(f.links) + 2, up: true, addrs: map[netip.Prefix]fakeAddr{}, peers: map[Peer]fakeAddr{}}
	f.links[name] = l
	for _, a := range addrs {
		if local, peer, ok := strings.Cut(a, " peer "); ok {
			l.peers[Peer{Local: netip.MustParseAddr(local), Peer: netip.MustParsePrefix(peer)}] = fakeAddr{}
			continue
		}
		l.addrs[netip.MustParsePrefix(a)] = fakeAddr{}
	}
	return l
}

// ipv6Del finds the entry an IPv6 delete of p takes: the kernel matches on
// address and prefix length only, peer or not.
func (l *fakeLink) ipv6Del(p netip.Prefix) (Peer, bool) {
	for q := range l.peers {
		if q.Local == p.Addr() && q.Peer.Bits() == p.Bits() {
			return q, true
		}
	}
	return Peer{}, false
}

func (f *fakeKernel) byIndex(i int) *fakeLink {
	for _, l := range f.links {
		if l.index == i {
			return l
		}
	}
	return nil
}

func (f *fakeKernel) LinkByName(name string) (netlink.Link, error) {
	l, ok := f.links[name]
	if !ok {
		return nil, unix.ENODEV
	}
	attrs := netlink.LinkAttrs{Index: l.index, Name: name}
	if l.up {
		attrs.Flags = net.FlagUp
		attrs.RawFlags = unix.IFF_UP | unix.IFF_LOWER_UP
	}
	return &netlink.Ifb{LinkAttrs: attrs}, nil
}

// collect adds to into the addresses on the link with the given index,
// and appends to peers its point-to-point entries, in no order: a dump
// that f.interrupted cuts off halfway.
func (f *fakeKernel) collect(index int, into map[netip.Prefix]struct{}, peers []Peer) ([]Peer, error) {
	l := f.byIndex(index)
	if l == nil {
		return peers, nil // the kernel's dump simply has no address for it
	}
	left := len(l.addrs) + len(l.peers) // how many entries the dump gets to
	var err error
	if f.interrupted > 0 {
		f.interrupted--
		left, err = left/2, netlink.ErrDumpInterrupted
	}
	for p := range l.addrs {
		if left--; left < 0 {
			return peers, err
		}
		if !p.Addr().IsLinkLocalUnicast() {
			into[p] = struct{}{}
		}
	}
	for p := range l.peers {
		if left--; left < 0 {
			return peers, err
		}
		if !p.Local.IsLinkLocalUnicast() {
			peers = append(peers, p)
		}
	}
	return peers, err
}

// AppendPrefixes lists what collect finds, in a stable order as the
// kernel's dump: sorted, or the other way round when reversed is set (a
// kernel listing the same addresses in another order).
func (f *fakeKernel) AppendPrefixes(index int, into []netip.Prefix, peers []Peer) ([]netip.Prefix, []Peer, error) {
	set := map[netip.Prefix]struct{}{}
	peers, err := f.collect(index, set, peers)
	start := len(into)
	for p := range set {
		into = append(into, p)
	}
	slices.SortFunc(into[start:], netip.Prefix.Compare)
	if f.reversed {
		slices.Reverse(into[start:])
	}
	return into, peers, err
}

func (f *fakeKernel) WriteAddrs(ctx context.Context, index int, changes []rtnl.AddrChange) ([]error, error) {
	answers := make([]error, len(changes))
	for i := range answers {
		answers[i] = rtnl.ErrNotWritten
	}
	for start := 0; start < len(changes); start += rtnl.BatchSize {
		if err := ctx.Err(); err != nil {
			return answers, err
		}
		for i := start; i < min(start+rtnl.BatchSize, len(changes)); i++ {
			err := f.change(index, changes[i])
			if f.loseAcks > 0 {
				f.loseAcks--
				if f.loseAcks == 0 {
					return answers, fmt.Errorf("address write: no answer within 2s: %w", unix.EAGAIN)
				}
			}
			answers[i] = err
		}
	}
	return answers, nil
}

// change makes one change as the kernel would, with scope global and, for
// IPv6, nodad, as a Handle asks for.
func (f *fakeKernel) change(index int, c rtnl.AddrChange) error {
	f.writes++
	op := "del"
	if c.Add {
		op = "add"
	}
	f.ops = append(f.ops, op+" "+c.Prefix.String())
	for name, l := range f.links {
		if l.index == index {
			f.trace = append(f.trace, name+" "+op+" "+c.Prefix.String())
		}
	}
	if f.beforeWrite != nil {
		f.beforeWrite(op, c.Prefix)
	}
	l := f.byIndex(index)
	if l == nil {
		return unix.ENODEV
	}
	if c.Add {
		return f.add(l, c.Prefix)
	}
	return f.del(l, c.Prefix)
}

func (f *fakeKernel) add(l *fakeLink, p netip.Prefix) error {
	if err := f.failAdd[p]; err != nil {
		return err
	}
	a := fakeAddr{scope: unix.RT_SCOPE_UNIVERSE}
	if p.Addr().Is6() {
		a.flags = unix.IFA_F_NODAD
		for q := range l.addrs {
			if q.Addr() == p.Addr() {
				return unix.EEXIST
			}
		}
		for q := range l.peers {
			if q.Local == p.Addr() {
				return unix.EEXIST
			}
		}
	}
	if _, ok := l.addrs[p]; ok {
		return unix.EEXIST
	}
	l.addrs[p] = a
	return nil
}

func (f *fakeKernel) del(l *fakeLink, p netip.Prefix) error {
	if err := f.failDel[p]; err != nil {
		return err
	}
	if _, ok := l.addrs[p]; ok {
		delete(l.addrs, p)
		return nil
	}
	if p.Addr().Is6() {
		if q, ok := l.ipv6Del(p); ok {
			delete(l.peers, q)
			return nil
		}
	}
	return unix.EADDRNOTAVAIL
}

// String prints every link and address, sorted, one per line:
// "rhi0 up", "rhi0 2001:db8::1/128 nodad", "rhi0 10.9.0.1 peer 10.9.0.2/32".
// Scope is printed only when it is not global.
func (f *fakeKernel) String() string {
	var lines []string
	for name, l := range f.links {
		state := "down"
		if l.up {
			state = "up"
		}
		lines = append(lines, name+" "+state)
		line := func(p fmt.Stringer, a fakeAddr) string {
			line := name + " " + p.String()
			if a.flags&unix.IFA_F_NODAD != 0 {
				line += " nodad"
			}
			if a.scope != unix.RT_SCOPE_UNIVERSE {
				line += fmt.Sprintf(" scope %d", a.scope)
			}
			return line
		}
		for p, a := range l.addrs {
			lines = append(lines, line(p, a))
		}
		for p, a := range l.peers {
			lines = append(lines, line(p, a))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
