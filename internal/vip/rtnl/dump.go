package rtnl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Peer is a point-to-point entry on an interface: a local address and the
// prefix of the peer the kernel routes to.
type Peer struct {
	Local netip.Addr
	Peer  netip.Prefix
}

// String formats p as ip(8) does: "10.9.0.1 peer 10.9.0.2/32".
func (p Peer) String() string { return p.Local.String() + " peer " + p.Peer.String() }

// Compare orders peers by local address, then by peer prefix.
func (p Peer) Compare(q Peer) int {
	if c := p.Local.Compare(q.Local); c != 0 {
		return c
	}
	return p.Peer.Compare(q.Peer)
}

const nlmsgHdrLen = 16

func align4(n int) int { return (n + 3) &^ 3 }

// sink is where a dump's entries go: the addresses appended to *list in
// the order of the dump, the point-to-point entries to *peers.
type sink struct {
	list  *[]netip.Prefix
	peers *[]Peer
}

func (s sink) add(p netip.Prefix) { *s.list = append(*s.list, p) }

// collect reads the datagrams of the dump numbered seq from next, up to
// its end, putting the addresses of link index and its point-to-point
// entries into s. The kernel flags with NLM_F_DUMP_INTR the message at
// which it saw the addresses change, which need not be in the last
// datagram, so the flag is remembered until the end: then the dump is
// reported as netlink.ErrDumpInterrupted, having been read to its end so
// that no rest of it is left on the socket.
func collect(next func() ([]byte, error), seq uint32, index int, s sink) error {
	interrupted := false
	for {
		b, err := next()
		if err != nil {
			return err
		}
		done, intr, err := parseAddrMessages(b, seq, index, s)
		interrupted = interrupted || intr
		if err != nil {
			return err
		}
		if done {
			if interrupted {
				return netlink.ErrDumpInterrupted
			}
			return nil
		}
	}
}

// parseAddrMessages reads one datagram of a dump into s: done when it
// holds the end of the dump, interrupted when the kernel flagged the dump
// as inconsistent. Messages of another sequence (a late answer to an
// earlier request) are skipped.
func parseAddrMessages(b []byte, seq uint32, index int, s sink) (done, interrupted bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= nlmsgHdrLen {
		l := int(ne.Uint32(b[0:]))
		typ, flags, mseq := ne.Uint16(b[4:]), ne.Uint16(b[6:]), ne.Uint32(b[8:])
		if l < nlmsgHdrLen || l > len(b) {
			return false, false, fmt.Errorf("address dump: message of %d bytes in %d", l, len(b))
		}
		msg := b[nlmsgHdrLen:l]
		b = b[min(align4(l), len(b)):]
		if mseq != seq {
			continue
		}
		if flags&unix.NLM_F_DUMP_INTR != 0 {
			interrupted = true
		}
		switch typ {
		case unix.NLMSG_DONE:
			if len(msg) >= 4 {
				if e := int32(ne.Uint32(msg)); e < 0 {
					return true, interrupted, fmt.Errorf("address dump: %w", syscall.Errno(-e))
				}
			}
			return true, interrupted, nil
		case unix.NLMSG_ERROR:
			if len(msg) < 4 {
				return false, false, errors.New("address dump: short error message")
			}
			if e := int32(ne.Uint32(msg)); e < 0 {
				return true, interrupted, fmt.Errorf("address dump: %w", syscall.Errno(-e))
			}
		case unix.RTM_NEWADDR:
			parseIfaddr(msg, index, s)
		}
	}
	return false, interrupted, nil
}

// parseIfaddr reads an ifaddrmsg and its attributes into s: its addresses,
// or its peers when it is a point-to-point entry, one whose peer is not its local
// address (the prefix length is then the peer's). The address is IFA_LOCAL
// when there is one, else IFA_ADDRESS, as in the netlink library: the
// kernel sends both for IPv4, and for an IPv6 point-to-point entry, with
// IFA_ADDRESS the peer, and only IFA_ADDRESS for other IPv6 entries. An
// entry of another link, a link-local one or a garbled one is skipped.
func parseIfaddr(msg []byte, index int, s sink) {
	const ifaddrLen = 8
	if len(msg) < ifaddrLen {
		return
	}
	family, bits := msg[0], int(msg[1])
	if int(binary.NativeEndian.Uint32(msg[4:])) != index {
		return
	}
	var local, address []byte
	for a := msg[ifaddrLen:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		typ := binary.NativeEndian.Uint16(a[2:])
		if l < 4 || l > len(a) {
			return
		}
		switch typ {
		case unix.IFA_LOCAL:
			local = a[4:l]
		case unix.IFA_ADDRESS:
			address = a[4:l]
		}
		a = a[min(align4(l), len(a)):]
	}
	raw := address
	if local != nil {
		raw = local
	}
	addr, ok := ipOf(family, raw)
	if !ok || addr.IsLinkLocalUnicast() || bits > addr.BitLen() {
		return
	}
	if local == nil || address == nil || bytes.Equal(local, address) {
		s.add(netip.PrefixFrom(addr, bits))
		return
	}
	if peer, ok := ipOf(family, address); ok {
		*s.peers = append(*s.peers, Peer{Local: addr, Peer: netip.PrefixFrom(peer, bits)})
	}
}

// ipOf reads an address attribute of the given family.
func ipOf(family byte, raw []byte) (netip.Addr, bool) {
	switch {
	case family == unix.AF_INET && len(raw) == 4:
		return netip.AddrFrom4([4]byte(raw)), true
	case family == unix.AF_INET6 && len(raw) == 16:
		return netip.AddrFrom16([16]byte(raw)), true
	}
	return netip.Addr{}, false
}
