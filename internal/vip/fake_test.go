package vip

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fakeKernel is a Netlink that behaves like the kernel where rhi cares:
// adding an address twice fails with EEXIST (for IPv6 the same address
// with any prefix length or peer counts, as in the kernel), deleting one
// that is not there fails with EADDRNOTAVAIL, links are found by index, and
// a link that is missing answers ENODEV. It logs every write and can inject
// failures.
//
// Point-to-point entries ("10.9.0.1 peer 10.9.0.2/32") are kept apart, as
// the kernel matches them: an IPv4 one is another entry than 10.9.0.1/32
// (both can be there, and deleting 10.9.0.1/32 never takes the peer entry),
// while IPv6 matches a delete on address and length only, so deleting
// 2001:db8::1/128 takes 2001:db8::1 peer 2001:db8::2/128.
type fakeKernel struct {
	links map[string]*fakeLink

	ops    []string // every write attempted, in order: "add 10.0.0.1/32"
	writes int

	failAdd map[netip.Prefix]error // AddrAdd of this prefix fails with the error
	failDel map[netip.Prefix]error
	// interrupted is how many of the next reads (AddrList, or the lean
	// dump of leanKernel) return half of the list and say that the dump was
	// interrupted.
	interrupted int
	seq         uint32 // of the last lean dump
	// beforeWrite, when set, runs before each write is applied, to play
	// someone else changing the interface at the same time.
	beforeWrite func(op string, p netip.Prefix)
	// loseAcks, when n > 0, makes the batch path lose its answers from the
	// n-th change of a send on, as a socket whose deadline passes: the
	// changes before it are made and answered, the n-th is made, and the
	// rest of that send is neither made nor answered.
	loseAcks int
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

// peerOf returns the point-to-point entry addr describes, if it is one.
func peerOf(addr *netlink.Addr) (Peer, bool) {
	_, peer, ok := fromLibrary(*addr)
	return peer, ok && peer.Local.IsValid()
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

func (f *fakeKernel) AddrList(link netlink.Link, family int) ([]netlink.Addr, error) {
	if family != netlink.FAMILY_ALL {
		return nil, fmt.Errorf("fake: family %d not supported", family)
	}
	l := f.byIndex(link.Attrs().Index)
	if l == nil {
		return nil, nil // the kernel's dump simply has no address for it
	}
	out := make([]netlink.Addr, 0, len(l.addrs))
	for p, a := range l.addrs {
		n := p.Addr().BitLen()
		out = append(out, netlink.Addr{
			IPNet:     &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), n)},
			Flags:     a.flags,
			Scope:     a.scope,
			LinkIndex: l.index,
		})
	}
	for p, a := range l.peers {
		// As the library reads the kernel's message: the local address with
		// a full-length mask, the peer with the entry's prefix length.
		n := p.Local.BitLen()
		out = append(out, netlink.Addr{
			IPNet:     &net.IPNet{IP: p.Local.AsSlice(), Mask: net.CIDRMask(n, n)},
			Peer:      &net.IPNet{IP: p.Peer.Addr().AsSlice(), Mask: net.CIDRMask(p.Peer.Bits(), n)},
			Flags:     a.flags,
			Scope:     a.scope,
			LinkIndex: l.index,
		})
	}
	if f.interrupted > 0 {
		f.interrupted--
		return out[:len(out)/2], netlink.ErrDumpInterrupted
	}
	return out, nil
}

func (f *fakeKernel) write(op string, link netlink.Link, addr *netlink.Addr) (*fakeLink, netip.Prefix, error) {
	f.writes++
	p, ok := toPrefix(*addr)
	if !ok {
		return nil, p, unix.EINVAL
	}
	if peer, ok := peerOf(addr); ok {
		f.ops = append(f.ops, op+" "+peer.String())
	} else {
		f.ops = append(f.ops, op+" "+p.String())
	}
	if f.beforeWrite != nil {
		f.beforeWrite(op, p)
	}
	l := f.byIndex(link.Attrs().Index)
	if l == nil {
		return nil, p, unix.ENODEV
	}
	return l, p, nil
}

func (f *fakeKernel) AddrAdd(link netlink.Link, addr *netlink.Addr) error {
	l, p, err := f.write("add", link, addr)
	if err != nil {
		return err
	}
	if err := f.failAdd[p]; err != nil {
		return err
	}
	peer, isPeer := peerOf(addr)
	if p.Addr().Is6() {
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
	a := fakeAddr{flags: addr.Flags, scope: addr.Scope}
	if isPeer {
		if _, ok := l.peers[peer]; ok {
			return unix.EEXIST
		}
		l.peers[peer] = a
		return nil
	}
	if _, ok := l.addrs[p]; ok {
		return unix.EEXIST
	}
	l.addrs[p] = a
	return nil
}

func (f *fakeKernel) AddrDel(link netlink.Link, addr *netlink.Addr) error {
	l, p, err := f.write("del", link, addr)
	if err != nil {
		return err
	}
	if err := f.failDel[p]; err != nil {
		return err
	}
	peer, isPeer := peerOf(addr)
	if p.Addr().Is6() {
		if isPeer {
			p = netip.PrefixFrom(peer.Local, peer.Peer.Bits())
		}
		if _, ok := l.addrs[p]; ok {
			delete(l.addrs, p)
			return nil
		}
		if q, ok := l.ipv6Del(p); ok {
			delete(l.peers, q)
			return nil
		}
		return unix.EADDRNOTAVAIL
	}
	if isPeer {
		if _, ok := l.peers[peer]; !ok {
			return unix.EADDRNOTAVAIL
		}
		delete(l.peers, peer)
		return nil
	}
	if _, ok := l.addrs[p]; !ok {
		return unix.EADDRNOTAVAIL
	}
	delete(l.addrs, p)
	return nil
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

// leanKernel is the fake reached through the lean dump, the read path of
// the production Handle: its ListPrefixes encodes the link's addresses as
// the kernel's RTM_NEWADDR messages, two to a datagram after a late message
// of an earlier dump, and hands the datagrams to the Handle's own collect.
// An interrupted dump carries NLM_F_DUMP_INTR on its last address message,
// not on its end, as the kernel flags the message at which it noticed the
// change.
type leanKernel struct{ *fakeKernel }

var _ prefixLister = leanKernel{}

func (k leanKernel) ListPrefixes(index int, into map[netip.Prefix]struct{}, peers []Peer) ([]Peer, error) {
	f := k.fakeKernel
	f.seq++
	var msgs [][]byte
	if l := f.byIndex(index); l != nil {
		for p, a := range l.addrs {
			msgs = append(msgs, nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, f.seq, kernelIfaddr(p, a, uint32(l.index))))
		}
		for p, a := range l.peers {
			msgs = append(msgs, nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, f.seq, kernelPeer(p, a, uint32(l.index))))
		}
	}
	end := nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, f.seq, []byte{0, 0, 0, 0})
	if f.interrupted > 0 {
		f.interrupted--
		msgs = msgs[:len(msgs)/2]
		flagged := end
		if len(msgs) > 0 {
			flagged = msgs[len(msgs)-1]
		}
		binary.NativeEndian.PutUint16(flagged[6:], binary.NativeEndian.Uint16(flagged[6:])|unix.NLM_F_DUMP_INTR)
	}
	late := nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, f.seq-1, kernelIfaddr(netip.MustParsePrefix("192.0.2.99/32"), fakeAddr{}, uint32(index)))
	datagrams := [][]byte{late}
	for i, m := range msgs {
		if i%2 == 0 && i > 0 {
			datagrams = append(datagrams, nil)
		}
		datagrams[len(datagrams)-1] = append(datagrams[len(datagrams)-1], m...)
	}
	datagrams = append(datagrams, end)
	next := func() ([]byte, error) {
		if len(datagrams) == 0 {
			return nil, errors.New("fake: read past the end of the dump")
		}
		b := datagrams[0]
		datagrams = datagrams[1:]
		return b, nil
	}
	err := collect(next, f.seq, index, into, &peers)
	return peers, err
}

// kernelIfaddr encodes an address as the kernel does in a dump: an IPv4
// entry carries IFA_LOCAL and IFA_ADDRESS, an IPv6 one only IFA_ADDRESS.
func kernelIfaddr(p netip.Prefix, a fakeAddr, index uint32) []byte {
	attrs := map[uint16][]byte{unix.IFA_ADDRESS: p.Addr().AsSlice()}
	family := byte(unix.AF_INET6)
	if p.Addr().Is4() {
		family = unix.AF_INET
		attrs[unix.IFA_LOCAL] = p.Addr().AsSlice()
	}
	b := ifaddr(family, byte(p.Bits()), index, attrs)
	b[2], b[3] = byte(a.flags), byte(a.scope)
	return b
}

// kernelPeer encodes a point-to-point entry as the kernel does, for both
// families: IFA_LOCAL the local address, IFA_ADDRESS the peer, and the
// peer's prefix length.
func kernelPeer(p Peer, a fakeAddr, index uint32) []byte {
	family := byte(unix.AF_INET6)
	if p.Local.Is4() {
		family = unix.AF_INET
	}
	b := ifaddr(family, byte(p.Peer.Bits()), index, map[uint16][]byte{unix.IFA_LOCAL: p.Local.AsSlice(), unix.IFA_ADDRESS: p.Peer.Addr().AsSlice()})
	b[2], b[3] = byte(a.flags), byte(a.scope)
	return b
}

// leanKernel writes as the production Handle does, through the batch path:
// WriteAddrs encodes the changes with appendAddrMsg, and the fake decodes
// each message as the kernel would, applies it with AddrAdd or AddrDel, and
// answers with acknowledgements, three to a datagram and after a late one
// of an earlier request, that the Handle's own parseAcks reads.
var _ batchWriter = leanKernel{}

func (k leanKernel) WriteAddrs(ctx context.Context, index int, changes []AddrChange) ([]error, error) {
	f := k.fakeKernel
	var queue [][]byte
	send := func(b []byte) error {
		var acks []byte
		acks = append(acks, nlmsg(unix.NLMSG_ERROR, 0, 0, make([]byte, 20))...) // late, seq 0
		for n := 0; len(b) >= nlmsgHdrLen; n++ {
			l := int(binary.NativeEndian.Uint32(b))
			typ, seq := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint32(b[8:])
			err := f.apply(typ, b[nlmsgHdrLen:l])
			if f.loseAcks > 0 {
				f.loseAcks--
				if f.loseAcks == 0 {
					if len(acks) > 0 {
						queue = append(queue, acks)
					}
					return nil // this and later answers never come
				}
			}
			var errno [4]byte
			if e, ok := err.(syscall.Errno); ok {
				binary.NativeEndian.PutUint32(errno[:], uint32(-int32(e)))
			}
			acks = append(acks, nlmsg(unix.NLMSG_ERROR, 0, seq, append(errno[:], b[:nlmsgHdrLen]...))...)
			if n%3 == 2 {
				queue, acks = append(queue, acks), nil
			}
			b = b[align4(l):]
		}
		if len(acks) > 0 {
			queue = append(queue, acks)
		}
		return nil
	}
	recv := func() ([]byte, error) {
		if len(queue) == 0 {
			return nil, fmt.Errorf("no answer within 2s: %w", unix.EAGAIN)
		}
		b := queue[0]
		queue = queue[1:]
		return b, nil
	}
	return writeAddrs(ctx, index, changes, &f.seq, send, recv)
}

// apply decodes an RTM_NEWADDR or RTM_DELADDR as the kernel reads it and
// makes the change.
func (f *fakeKernel) apply(typ uint16, msg []byte) error {
	family, bits, flags, scope := msg[0], int(msg[1]), int(msg[2]), int(msg[3])
	index := int(binary.NativeEndian.Uint32(msg[4:]))
	var local []byte
	for a := msg[8:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a))
		if binary.NativeEndian.Uint16(a[2:]) == unix.IFA_LOCAL {
			local = a[4:l]
		}
		a = a[align4(l):]
	}
	ip, ok := ipOf(family, local)
	if !ok {
		return unix.EINVAL
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, ip.BitLen())}, Flags: flags, Scope: scope}
	link := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Index: index}}
	if typ == unix.RTM_NEWADDR {
		return f.AddrAdd(link, addr)
	}
	return f.AddrDel(link, addr)
}
