package rtnl

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// nlmsg builds one netlink message.
func nlmsg(typ, flags uint16, seq uint32, payload []byte) []byte {
	b := make([]byte, 16, 16+len(payload)+3)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(16+len(payload)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ifaddr builds an RTM_NEWADDR payload with the given attributes.
func ifaddr(family byte, bits byte, index uint32, attrs map[uint16][]byte) []byte {
	b := []byte{family, bits, 0, 0, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(b[4:], index)
	for _, typ := range []uint16{unix.IFA_ADDRESS, unix.IFA_LOCAL} {
		v, ok := attrs[typ]
		if !ok {
			continue
		}
		a := make([]byte, 4, 4+len(v)+3)
		binary.NativeEndian.PutUint16(a[0:], uint16(4+len(v)))
		binary.NativeEndian.PutUint16(a[2:], typ)
		a = append(a, v...)
		for len(a)%4 != 0 {
			a = append(a, 0)
		}
		b = append(b, a...)
	}
	return b
}

func ip(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

func TestParseAddrMessages(t *testing.T) {
	const seq, index = 7, 3
	var b []byte
	add := func(seq uint32, family, bits byte, index uint32, attrs map[uint16][]byte) {
		b = append(b, nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, seq, ifaddr(family, bits, index, attrs))...)
	}
	// As the kernel sends them: IPv4 always with IFA_LOCAL and IFA_ADDRESS,
	// the latter the peer when there is one; IPv6 with IFA_ADDRESS only,
	// unless there is a peer: then IFA_LOCAL is the address, IFA_ADDRESS the peer.
	add(seq, unix.AF_INET, 32, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("10.0.0.1"), unix.IFA_LOCAL: ip("10.0.0.1")})
	add(seq, unix.AF_INET, 24, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("10.0.0.100"), unix.IFA_LOCAL: ip("10.0.0.100")})
	add(seq, unix.AF_INET, 32, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("10.9.0.2"), unix.IFA_LOCAL: ip("10.9.0.1")})
	add(seq, unix.AF_INET6, 128, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("2001:db8::1")})
	add(seq, unix.AF_INET6, 128, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("2001:db8:1::2"), unix.IFA_LOCAL: ip("2001:db8:1::1")})
	add(seq, unix.AF_INET6, 64, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("2001:db8:2::1"), unix.IFA_LOCAL: ip("2001:db8:2::1")})
	add(seq, unix.AF_INET6, 64, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("fe80::1")})
	add(seq, unix.AF_INET6, 128, index, map[uint16][]byte{unix.IFA_ADDRESS: ip("2001:db8:3::2"), unix.IFA_LOCAL: ip("fe80::1")})
	add(seq, unix.AF_INET, 32, index+1, map[uint16][]byte{unix.IFA_LOCAL: ip("10.0.0.9")})
	add(seq-1, unix.AF_INET, 32, index, map[uint16][]byte{unix.IFA_LOCAL: ip("10.0.0.8")})
	var got []netip.Prefix
	var peers []Peer
	s := sink{list: &got, peers: &peers}
	done, intr, err := parseAddrMessages(b, seq, index, s)
	if err != nil || done || intr {
		t.Fatalf("done %v, interrupted %v, err %v", done, intr, err)
	}
	// In the order of the messages.
	if diff := cmpDiff(prefixes("10.0.0.1/32", "10.0.0.100/24", "2001:db8::1/128", "2001:db8:2::1/64"), got); diff != "" {
		t.Errorf("prefixes (-want +got):\n%s", diff)
	}
	wantPeers := []Peer{
		{netip.MustParseAddr("10.9.0.1"), netip.MustParsePrefix("10.9.0.2/32")},
		{netip.MustParseAddr("2001:db8:1::1"), netip.MustParsePrefix("2001:db8:1::2/128")},
	}
	if diff := cmpDiff(wantPeers, peers); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}

	end := nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI|unix.NLM_F_DUMP_INTR, seq, []byte{0, 0, 0, 0})
	if done, intr, err := parseAddrMessages(end, seq, index, s); !done || !intr || err != nil {
		t.Errorf("end of an interrupted dump: done %v, interrupted %v, err %v", done, intr, err)
	}
	e := make([]byte, 4)
	errno := -int32(unix.EINVAL)
	binary.NativeEndian.PutUint32(e, uint32(errno))
	_, _, err = parseAddrMessages(nlmsg(unix.NLMSG_ERROR, 0, seq, append(e, make([]byte, 16)...)), seq, index, s)
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("error message: %v, want EINVAL", err)
	}
	bad := nlmsg(unix.RTM_NEWADDR, 0, seq, nil)
	binary.NativeEndian.PutUint32(bad[0:], 999)
	if _, _, err := parseAddrMessages(bad, seq, index, s); err == nil {
		t.Error("a message longer than the datagram was accepted")
	}
}

func FuzzParseAddrMessages(f *testing.F) {
	f.Add(nlmsg(unix.RTM_NEWADDR, 0, 1, ifaddr(unix.AF_INET, 32, 2, map[uint16][]byte{unix.IFA_LOCAL: ip("10.0.0.1")})))
	f.Add(nlmsg(unix.RTM_NEWADDR, 0, 1, ifaddr(unix.AF_INET6, 128, 2, map[uint16][]byte{unix.IFA_LOCAL: ip("2001:db8::1"), unix.IFA_ADDRESS: ip("2001:db8::2")})))
	f.Add(nlmsg(unix.NLMSG_DONE, 0, 1, []byte{0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var into []netip.Prefix
		var peers []Peer
		parseAddrMessages(b, 1, 2, sink{list: &into, peers: &peers})
		for _, p := range into {
			if !p.IsValid() || p.Addr().IsLinkLocalUnicast() {
				t.Fatalf("bad prefix %v", p)
			}
		}
		for _, p := range peers {
			if !p.Local.IsValid() || !p.Peer.IsValid() || p.Local.IsLinkLocalUnicast() || p.Local.Is4() != p.Peer.Addr().Is4() || p.Local == p.Peer.Addr() {
				t.Fatalf("bad peer %v", p)
			}
		}
	})
}

// BenchmarkParseAddrMessages parses one dump's worth of 10,000 IPv4 /32s
// as the kernel sends them (IFA_ADDRESS and IFA_LOCAL), in 64 KiB
// datagrams: the CPU share of the lean dump, without the kernel's.
func BenchmarkParseAddrMessages(b *testing.B) {
	const seq, index = 1, 2
	var datagrams [][]byte
	var cur []byte
	a := netip.MustParseAddr("10.0.0.0")
	for range 10000 {
		a = a.Next()
		m := nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, seq, ifaddr(unix.AF_INET, 32, index, map[uint16][]byte{unix.IFA_ADDRESS: a.AsSlice(), unix.IFA_LOCAL: a.AsSlice()}))
		if len(cur)+len(m) > 64<<10 {
			datagrams = append(datagrams, cur)
			cur = nil
		}
		cur = append(cur, m...)
	}
	datagrams = append(datagrams, cur)
	into := make([]netip.Prefix, 0, 10000)
	var peers []Peer
	b.ReportAllocs()
	for b.Loop() {
		into, peers = into[:0], peers[:0]
		for _, d := range datagrams {
			if _, _, err := parseAddrMessages(d, seq, index, sink{list: &into, peers: &peers}); err != nil {
				b.Fatal(err)
			}
		}
		if len(into) != 10000 {
			b.Fatalf("%d addresses", len(into))
		}
	}
}
