package vip

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fakeKernel is a Netlink that behaves like the kernel where rhi cares:
// adding an address twice fails with EEXIST (for IPv6 the same address
// with any prefix length counts, as in the kernel), deleting one that is not
// there fails with EADDRNOTAVAIL, links are found by index, and a link that
// is missing answers ENODEV. It logs every write and can inject failures.
type fakeKernel struct {
	links map[string]*fakeLink

	ops    []string // every write attempted, in order: "add 10.0.0.1/32"
	writes int

	failAdd map[netip.Prefix]error // AddrAdd of this prefix fails with the error
	failDel map[netip.Prefix]error
	// interrupted is how many of the next AddrList calls return half of
	// the list and netlink.ErrDumpInterrupted.
	interrupted int
	// beforeWrite, when set, runs before each write is applied, to play
	// someone else changing the interface at the same time.
	beforeWrite func(op string, p netip.Prefix)
}

type fakeLink struct {
	index int
	up    bool
	addrs map[netip.Prefix]fakeAddr
}

type fakeAddr struct {
	flags int
	scope int
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{links: map[string]*fakeLink{}}
}

// addLink creates an up link with the given addresses, as if by ip(8).
func (f *fakeKernel) addLink(name string, addrs ...string) *fakeLink {
	l := &fakeLink{index: len(f.links) + 2, up: true, addrs: map[netip.Prefix]fakeAddr{}}
	f.links[name] = l
	for _, a := range addrs {
		l.addrs[netip.MustParsePrefix(a)] = fakeAddr{}
	}
	return l
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
	f.ops = append(f.ops, op+" "+p.String())
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
	if _, ok := l.addrs[p]; ok {
		return unix.EEXIST
	}
	if p.Addr().Is6() {
		for q := range l.addrs {
			if q.Addr() == p.Addr() {
				return unix.EEXIST
			}
		}
	}
	l.addrs[p] = fakeAddr{flags: addr.Flags, scope: addr.Scope}
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
	if _, ok := l.addrs[p]; !ok {
		return unix.EADDRNOTAVAIL
	}
	delete(l.addrs, p)
	return nil
}

// String prints every link and address, sorted, one per line:
// "rhi0 up", "rhi0 2001:db8::1/128 nodad". Scope is printed only when it
// is not global.
func (f *fakeKernel) String() string {
	var lines []string
	for name, l := range f.links {
		state := "down"
		if l.up {
			state = "up"
		}
		lines = append(lines, name+" "+state)
		for p, a := range l.addrs {
			line := name + " " + p.String()
			if a.flags&unix.IFA_F_NODAD != 0 {
				line += " nodad"
			}
			if a.scope != unix.RT_SCOPE_UNIVERSE {
				line += fmt.Sprintf(" scope %d", a.scope)
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
