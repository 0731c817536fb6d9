//go:build integration

package rtnl

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/inns"
	"github.com/rhi-daemon/rhi/internal/vip/rtnl/rtnltest"
)

const iface = rtnltest.Iface

// labNS creates a namespace holding an up ifb link called rhi0 and returns
// its name and a netlink handle inside it. Both go away at cleanup.
func labNS(t testing.TB) (string, *Handle) {
	t.Helper()
	ns := rtnltest.NS(t, "rhi-rtnl")
	nsh, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatalf("open namespace %q: %v", ns, err)
	}
	defer nsh.Close() // the handle keeps its own sockets in the namespace
	h, err := NewHandleAt(nsh, 2*time.Second)
	if err != nil {
		t.Fatalf("netlink handle in %q: %v", ns, err)
	}
	t.Cleanup(h.Close)
	rtnltest.SetLink(t, h, true)
	return ns, h
}

func TestNewHandle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs with the integration tests, as root")
	}
	h, err := NewHandle(time.Second)
	if err != nil {
		t.Fatalf("NewHandle: %v", err)
	}
	defer h.Close()
	if _, err := h.LinkByName("lo"); err != nil {
		t.Errorf("LinkByName lo through the new handle: %v", err)
	}
	if _, err := NewHandle(0); err == nil {
		t.Error("NewHandle(0): no error, want one: a zero timeout would mean none")
	}
}

// TestLeanDumpAgreesWithTheLibrary compares the lean address dump with the
// netlink library's AddrList on one link holding every kind of address,
// while another link holds addresses that must not show up.
func TestLeanDumpAgreesWithTheLibrary(t *testing.T) {
	ns, h := labNS(t)
	rtnltest.IP(t, "-n", ns, "link", "add", "other0", "type", "ifb")
	rtnltest.IP(t, "-n", ns, "link", "set", "other0", "up")
	for _, a := range []string{"10.0.0.1/32", "10.0.0.100/24", "192.0.2.1/32", "10.9.0.1 peer 10.9.0.2/32", "10.9.1.1 peer 10.9.1.0/24"} {
		rtnltest.IP(t, append([]string{"-n", ns, "addr", "add"}, append(strings.Fields(a), "dev", iface)...)...)
	}
	// The kernel sends IFA_LOCAL for IPv6 only with a peer, then with
	// IFA_ADDRESS the peer; a peer equal to the address is no peer at all.
	for _, a := range []string{"2001:db8::1/128", "2001:db8:1::1/64", "2001:db8:2::1 peer 2001:db8:2::2/128", "2001:db8:3::1 peer 2001:db8:3::1/128"} {
		rtnltest.IP(t, append([]string{"-n", ns, "addr", "add"}, append(strings.Fields(a), "dev", iface, "nodad")...)...)
	}
	for i := 0; i < 300; i++ { // more than one datagram's worth
		rtnltest.IP(t, "-n", ns, "addr", "add", fmt.Sprintf("10.1.%d.%d/32", i/250, i%250+1), "dev", iface)
	}
	rtnltest.IP(t, "-n", ns, "addr", "add", "198.51.100.1/32", "dev", "other0")
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	fastList, fastPeers, err := h.AppendPrefixes(link.Attrs().Index, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fast := setOf(fastList)
	if len(fast) != len(fastList) {
		t.Errorf("lean dump listed %d addresses, %d of them different", len(fastList), len(fast))
	}
	list, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	slow := map[netip.Prefix]struct{}{}
	var slowPeers []Peer
	for _, ad := range list {
		p, peer, ok := fromLibrary(ad)
		switch {
		case !ok:
			t.Errorf("library address %+v not understood", ad)
		case peer.Local.IsValid():
			slowPeers = append(slowPeers, peer)
		case !p.Addr().IsLinkLocalUnicast():
			slow[p] = struct{}{}
		}
	}
	if len(fast) != 306 {
		t.Errorf("lean dump found %d addresses, want 306", len(fast))
	}
	if diff := cmpDiff(slow, fast); diff != "" {
		t.Errorf("lean dump differs from AddrList (-library +lean):\n%s", diff)
	}
	slices.SortFunc(fastPeers, Peer.Compare)
	slices.SortFunc(slowPeers, Peer.Compare)
	if diff := cmpDiff(slowPeers, fastPeers); diff != "" {
		t.Errorf("lean dump's peers differ from AddrList's (-library +lean):\n%s", diff)
	}
	wantPeers := peers("10.9.0.1 peer 10.9.0.2/32", "10.9.1.1 peer 10.9.1.0/24", "2001:db8:2::1 peer 2001:db8:2::2/128")
	if diff := cmpDiff(wantPeers, fastPeers); diff != "" {
		t.Errorf("point-to-point entries (-want +got):\n%s", diff)
	}
	for _, p := range prefixes("10.9.0.1/32", "2001:db8:2::1/128", "2001:db8:2::2/128") {
		if _, ok := fast[p]; ok {
			t.Errorf("the point-to-point entry was read as the address %s", p)
		}
	}
	if _, ok := fast[netip.MustParsePrefix("2001:db8:3::1/128")]; !ok {
		t.Error("an IPv6 entry whose peer is its own address: not read as that address")
	}
	// Again, on the same socket: sequence numbers keep answers apart.
	again, againPeers, err := h.AppendPrefixes(link.Attrs().Index, nil, nil)
	if err != nil || len(again) != len(fast) || len(againPeers) != len(fastPeers) {
		t.Errorf("second dump: %d addresses, %d peers, %v", len(again), len(againPeers), err)
	}
	appendsInOrder(t, h, link.Attrs().Index, fast, fastPeers)
}

// setOf is the set of ps.
func setOf(ps []netip.Prefix) map[netip.Prefix]struct{} {
	m := make(map[netip.Prefix]struct{}, len(ps))
	for _, p := range ps {
		m[p] = struct{}{}
	}
	return m
}

// appendsInOrder checks that AppendPrefixes lists set and peers, as an
// earlier dump read them, after what into held, and lists them twice in
// the same order (a Set skips its plan only when it does).
func appendsInOrder(t *testing.T, h *Handle, index int, set map[netip.Prefix]struct{}, peers []Peer) {
	t.Helper()
	head := prefixes("192.0.2.99/32")
	first, firstPeers, err := h.AppendPrefixes(index, slices.Clone(head), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first[:1], head) {
		t.Errorf("AppendPrefixes changed what into held: %v", first[:1])
	}
	got := map[netip.Prefix]struct{}{}
	for _, p := range first[1:] {
		got[p] = struct{}{}
	}
	if len(got) != len(first)-1 {
		t.Errorf("AppendPrefixes listed %d addresses, %d of them different", len(first)-1, len(got))
	}
	if diff := cmpDiff(set, got); diff != "" {
		t.Errorf("AppendPrefixes differs from the earlier dump (-earlier +append):\n%s", diff)
	}
	slices.SortFunc(firstPeers, Peer.Compare)
	if diff := cmpDiff(peers, firstPeers); diff != "" {
		t.Errorf("AppendPrefixes' peers differ from the earlier dump's (-earlier +append):\n%s", diff)
	}
	second, _, err := h.AppendPrefixes(index, nil, nil)
	if err != nil || !slices.Equal(first[1:], second) {
		t.Errorf("a second AppendPrefixes listed the same addresses otherwise (%v)", err)
	}
}

// TestLeanDumpReopensInItsNamespace: after a dump that failed midway (a
// receive timeout, EAGAIN) the dumper drops its socket and opens a new one
// on the next call. That socket must be in the handle's namespace, not in
// that of the calling thread: else a handle of NewHandleAt reads the
// host's link that happens to have the same index.
func TestLeanDumpReopensInItsNamespace(t *testing.T) {
	ns, h := labNS(t)
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.0.0.1/32", "dev", iface)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	index := link.Attrs().Index
	list := func() map[netip.Prefix]struct{} {
		t.Helper()
		got, _, err := h.AppendPrefixes(index, nil, nil)
		if err != nil {
			t.Fatalf("AppendPrefixes: %v", err)
		}
		return setOf(got)
	}
	want := list()
	if _, ok := want[netip.MustParsePrefix("10.0.0.1/32")]; !ok || len(want) != 1 {
		t.Fatalf("first dump: %v, want 10.0.0.1/32", want)
	}
	timedOut := func() {
		h.dump.mu.Lock()
		h.dump.drop() // what list does after EAGAIN
		h.dump.mu.Unlock()
	}

	// From a thread in this process's own namespace, as in the daemon.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lab, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	here, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	if here.Equal(lab) {
		t.Fatal("the test runs inside the lab namespace")
	}
	timedOut()
	if diff := cmpDiff(want, list()); diff != "" {
		t.Errorf("after a reopen from another namespace (-want +got):\n%s", diff)
	}

	// From a thread inside the handle's namespace.
	timedOut()
	var inside map[netip.Prefix]struct{}
	if err := inns.Do(lab, func() error { inside = list(); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(want, inside); diff != "" {
		t.Errorf("after a reopen from inside the namespace (-want +got):\n%s", diff)
	}
}

// TestWriteAddrsOnTheKernel sends changes in batches of BatchSize to the
// real kernel: more than two sends, both families, an add of an address
// that is there and a delete of one that is not, each answered on its own,
// and the addresses made as the library's AddrAdd makes VIPs (scope global,
// IPv6 nodad and not tentative).
func TestWriteAddrsOnTheKernel(t *testing.T) {
	ns, h := labNS(t)
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.7.0.2/32", "dev", iface)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	var adds []AddrChange
	var want []string
	for i := range 2*BatchSize + 40 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 7, byte(i / 250), byte(i%250 + 1)}), 32)
		if i%5 == 0 {
			p = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}), 128)
			want = append(want, p.String()+" global nodad")
		} else {
			want = append(want, p.String()+" global")
		}
		adds = append(adds, AddrChange{Prefix: p, Add: true})
	}
	answers, err := h.WriteAddrs(context.Background(), link.Attrs().Index, adds)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		wantErr := error(nil)
		if adds[i].Prefix.String() == "10.7.0.2/32" {
			wantErr = unix.EEXIST // added by ip(8) before
		}
		if !errors.Is(a, wantErr) && a != wantErr {
			t.Errorf("add %s: answer %v, want %v", adds[i].Prefix, a, wantErr)
		}
	}
	got, _ := rtnltest.Addrs(t, ns)
	slices.Sort(want)
	if diff := cmp.Diff(want, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("after the adds (-want +got):\n%s", diff)
	}

	dels := []AddrChange{{Prefix: netip.MustParsePrefix("10.7.9.9/32")}} // not there
	for _, c := range adds {
		dels = append(dels, AddrChange{Prefix: c.Prefix})
	}
	answers, err = h.WriteAddrs(context.Background(), link.Attrs().Index, dels)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(answers[0], unix.EADDRNOTAVAIL) {
		t.Errorf("delete of an absent address: answer %v, want EADDRNOTAVAIL", answers[0])
	}
	for i, a := range answers[1:] {
		if a != nil {
			t.Errorf("delete %s: answer %v", dels[i+1].Prefix, a)
		}
	}
	if got, _ := rtnltest.Addrs(t, ns); len(rtnltest.WithoutLinkLocal(got)) != 0 {
		t.Errorf("after the deletes: %v", got)
	}
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

func peers(ss ...string) []Peer {
	var out []Peer
	for _, s := range ss {
		local, peer, _ := strings.Cut(s, " peer ")
		out = append(out, Peer{Local: netip.MustParseAddr(local), Peer: netip.MustParsePrefix(peer)})
	}
	return out
}

// TestDeletePeerEntriesOnTheKernel: a change with a Peer deletes the
// point-to-point entry it names, IPv4 and IPv6, and leaves the host
// address with the same local address alone.
func TestDeletePeerEntriesOnTheKernel(t *testing.T) {
	ns, h := labNS(t)
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.9.0.1", "peer", "10.0.0.99/32", "dev", iface)
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.9.0.1/32", "dev", iface)
	rtnltest.IP(t, "-n", ns, "addr", "add", "2001:db8:2::1", "peer", "2001:db8:2::2/128", "dev", iface)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	dels := []AddrChange{
		{Prefix: netip.MustParsePrefix("10.9.0.1/32"), Peer: netip.MustParsePrefix("10.0.0.99/32")},
		{Prefix: netip.MustParsePrefix("2001:db8:2::1/128"), Peer: netip.MustParsePrefix("2001:db8:2::2/128")},
		{Prefix: netip.MustParsePrefix("10.9.0.1/32"), Peer: netip.MustParsePrefix("10.0.0.98/32")}, // not there
	}
	answers, err := h.WriteAddrs(context.Background(), link.Attrs().Index, dels)
	if err != nil {
		t.Fatal(err)
	}
	if answers[0] != nil || answers[1] != nil || !errors.Is(answers[2], unix.EADDRNOTAVAIL) {
		t.Errorf("answers %v, want nil, nil, EADDRNOTAVAIL", answers)
	}
	got, _ := rtnltest.Addrs(t, ns)
	if diff := cmp.Diff([]string{"10.9.0.1/32 global"}, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("after the deletes (-want +got):\n%s", diff)
	}
}
