package rtnl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// wireKernel is one link of a kernel reached through bytes, as a Handle
// reaches the real one: dump answers the lean dump with the kernel's
// RTM_NEWADDR messages, and write decodes RTM_NEWADDR and RTM_DELADDR
// messages as the kernel reads them, applies them (EEXIST for an address
// that is there, EADDRNOTAVAIL for one that is not) and answers with
// acknowledgements. Both put a late message of an earlier request first,
// and spread the rest over several datagrams, so that the codec's
// sequence numbers and framing are what keeps them apart.
type wireKernel struct {
	index int
	addrs map[netip.Prefix]wireAddr
	peers map[Peer]struct{}
	seq   uint32
	// interrupted makes the next dump return half the addresses, with
	// NLM_F_DUMP_INTR on its last address message, not on its end, as the
	// kernel flags the message at which it noticed the change.
	interrupted bool
	// loseAcks, when n > 0, makes write lose its answers from the n-th
	// change of a send on, as a socket whose deadline passes: the changes
	// before it are made and answered, the n-th is made, and the rest of
	// that send is neither made nor answered.
	loseAcks int
	// beforeWrite, when set, runs before each change is applied.
	beforeWrite func()
	ops         []string // every change applied: "add 10.0.0.1/32"
}

// wireAddr is how a change asked for an address: its ifaddrmsg flags and
// scope, and the netlink flags of the request.
type wireAddr struct {
	flags, scope int
	nlFlags      uint16
}

func newWireKernel(addrs ...string) *wireKernel {
	k := &wireKernel{index: 3, addrs: map[netip.Prefix]wireAddr{}, peers: map[Peer]struct{}{}}
	for _, a := range addrs {
		if local, peer, ok := strings.Cut(a, " peer "); ok {
			k.peers[Peer{Local: netip.MustParseAddr(local), Peer: netip.MustParsePrefix(peer)}] = struct{}{}
			continue
		}
		k.addrs[netip.MustParsePrefix(a)] = wireAddr{}
	}
	return k
}

// dump runs one lean dump of link index through collect, and returns how
// many datagrams were left unread.
func (k *wireKernel) dump(index int, into *[]netip.Prefix, peers *[]Peer) (int, error) {
	k.seq++
	var msgs [][]byte
	if index == k.index {
		for p := range k.addrs {
			msgs = append(msgs, nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, k.seq, kernelIfaddr(p, uint32(index))))
		}
		for p := range k.peers {
			msgs = append(msgs, nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, k.seq, kernelPeer(p, uint32(index))))
		}
	}
	end := nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, k.seq, []byte{0, 0, 0, 0})
	if k.interrupted {
		k.interrupted = false
		msgs = msgs[:len(msgs)/2]
		flagged := end
		if len(msgs) > 0 {
			flagged = msgs[len(msgs)-1]
		}
		binary.NativeEndian.PutUint16(flagged[6:], binary.NativeEndian.Uint16(flagged[6:])|unix.NLM_F_DUMP_INTR)
	}
	late := nlmsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, k.seq-1, kernelIfaddr(netip.MustParsePrefix("192.0.2.99/32"), uint32(index)))
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
			return nil, errors.New("wire: read past the end of the dump")
		}
		b := datagrams[0]
		datagrams = datagrams[1:]
		return b, nil
	}
	err := collect(next, k.seq, index, sink{list: into, peers: peers})
	return len(datagrams), err
}

// kernelIfaddr encodes an address as the kernel does in a dump: an IPv4
// entry carries IFA_LOCAL and IFA_ADDRESS, an IPv6 one only IFA_ADDRESS.
func kernelIfaddr(p netip.Prefix, index uint32) []byte {
	attrs := map[uint16][]byte{unix.IFA_ADDRESS: p.Addr().AsSlice()}
	family := byte(unix.AF_INET6)
	if p.Addr().Is4() {
		family = unix.AF_INET
		attrs[unix.IFA_LOCAL] = p.Addr().AsSlice()
	}
	return ifaddr(family, byte(p.Bits()), index, attrs)
}

// kernelPeer encodes a point-to-point entry as the kernel does, for both
// families: IFA_LOCAL the local address, IFA_ADDRESS the peer, and the
// peer's prefix length.
func kernelPeer(p Peer, index uint32) []byte {
	family := byte(unix.AF_INET6)
	if p.Local.Is4() {
		family = unix.AF_INET
	}
	return ifaddr(family, byte(p.Peer.Bits()), index, map[uint16][]byte{unix.IFA_LOCAL: p.Local.AsSlice(), unix.IFA_ADDRESS: p.Peer.Addr().AsSlice()})
}

// write runs writeAddrs against the kernel: acknowledgements three to a
// datagram, after a late one of an earlier request.
func (k *wireKernel) write(ctx context.Context, changes []AddrChange) ([]error, error) {
	var queue [][]byte
	send := func(b []byte) error {
		acks := ack(0, 0) // late, seq 0
		for n := 0; len(b) >= nlmsgHdrLen; n++ {
			l := int(binary.NativeEndian.Uint32(b))
			typ, nlFlags, seq := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint16(b[6:]), binary.NativeEndian.Uint32(b[8:])
			if k.beforeWrite != nil {
				k.beforeWrite()
			}
			err := k.apply(typ, nlFlags, b[nlmsgHdrLen:l])
			if k.loseAcks > 0 {
				k.loseAcks--
				if k.loseAcks == 0 {
					queue = append(queue, acks)
					return nil // this and later answers never come
				}
			}
			var errno unix.Errno
			if e, ok := err.(syscall.Errno); ok {
				errno = e
			}
			acks = append(acks, ack(seq, errno)...)
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
	return writeAddrs(ctx, k.index, changes, &k.seq, send, recv)
}

// apply decodes an RTM_NEWADDR or RTM_DELADDR as the kernel reads it and
// makes the change. The kernel takes IFA_LOCAL as the address; an
// IFA_ADDRESS that differs would make a point-to-point entry.
func (k *wireKernel) apply(typ, nlFlags uint16, msg []byte) error {
	family, bits, flags, scope := msg[0], int(msg[1]), int(msg[2]), int(msg[3])
	if int(binary.NativeEndian.Uint32(msg[4:])) != k.index {
		return unix.ENODEV
	}
	var local, address []byte
	for a := msg[8:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a))
		switch binary.NativeEndian.Uint16(a[2:]) {
		case unix.IFA_LOCAL:
			local = a[4:l]
		case unix.IFA_ADDRESS:
			address = a[4:l]
		}
		a = a[align4(l):]
	}
	ip, ok := ipOf(family, local)
	if !ok || !slices.Equal(local, address) {
		return unix.EINVAL
	}
	p := netip.PrefixFrom(ip, bits)
	_, there := k.addrs[p]
	switch {
	case typ == unix.RTM_NEWADDR && there:
		return unix.EEXIST
	case typ == unix.RTM_NEWADDR:
		k.addrs[p] = wireAddr{flags: flags, scope: scope, nlFlags: nlFlags}
		k.ops = append(k.ops, "add "+p.String())
	case typ == unix.RTM_DELADDR && !there:
		return unix.EADDRNOTAVAIL
	case typ == unix.RTM_DELADDR:
		delete(k.addrs, p)
		k.ops = append(k.ops, "del "+p.String())
	default:
		return unix.EOPNOTSUPP
	}
	return nil
}

// String prints the addresses, sorted, with how they were asked for:
// "2001:db8::1/128 nodad", and the scope when it is not global.
func (k *wireKernel) String() string {
	var lines []string
	for p, a := range k.addrs {
		line := p.String()
		if a.flags&unix.IFA_F_NODAD != 0 {
			line += " nodad"
		}
		if a.scope != unix.RT_SCOPE_UNIVERSE {
			line += fmt.Sprintf(" scope %d", a.scope)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestDumpOverTheWire(t *testing.T) {
	k := newWireKernel("10.0.0.1/32", "10.0.0.100/24", "2001:db8::1/128", "fe80::1/64",
		"10.9.0.1 peer 10.9.0.2/32", "2001:db8:1::1 peer 2001:db8:1::2/128")
	var got []netip.Prefix
	var peers []Peer
	left, err := k.dump(k.index, &got, &peers)
	if err != nil || left != 0 {
		t.Fatalf("dump: %v, %d datagrams left", err, left)
	}
	slices.SortFunc(got, netip.Prefix.Compare)
	// Not the late 192.0.2.99/32 of an earlier dump, nor the link-local one.
	if diff := cmpDiff(prefixes("10.0.0.100/24", "10.0.0.1/32", "2001:db8::1/128"), got); diff != "" {
		t.Errorf("prefixes (-want +got):\n%s", diff)
	}
	slices.SortFunc(peers, Peer.Compare)
	wantPeers := []Peer{
		{netip.MustParseAddr("10.9.0.1"), netip.MustParsePrefix("10.9.0.2/32")},
		{netip.MustParseAddr("2001:db8:1::1"), netip.MustParsePrefix("2001:db8:1::2/128")},
	}
	if diff := cmpDiff(wantPeers, peers); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}

	var other []netip.Prefix
	if _, err := k.dump(k.index+1, &other, &peers); err != nil || len(other) != 0 {
		t.Errorf("dump of another link: %v, %v", other, err)
	}

	k.interrupted = true
	left, err = k.dump(k.index, new([]netip.Prefix), &peers)
	if !errors.Is(err, netlink.ErrDumpInterrupted) || left != 0 {
		t.Errorf("interrupted dump: %v, %d datagrams left; want ErrDumpInterrupted, read to its end", err, left)
	}
}

func TestWriteAddrsOverTheWire(t *testing.T) {
	k := newWireKernel("10.0.0.5/32")
	changes := []AddrChange{
		{Prefix: netip.MustParsePrefix("10.0.0.1/32"), Add: true},
		{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Add: true},
		{Prefix: netip.MustParsePrefix("10.0.0.5/32"), Add: true},
		{Prefix: netip.MustParsePrefix("10.0.0.9/32")},
		{Prefix: netip.MustParsePrefix("10.0.0.5/32")},
	}
	answers, err := k.write(context.Background(), changes)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	wantAnswers := []error{nil, nil, unix.EEXIST, unix.EADDRNOTAVAIL, nil}
	if diff := cmpDiff(fmt.Sprint(wantAnswers), fmt.Sprint(answers)); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	// As AddrAdd of a host prefix: scope global, IPv6 nodad.
	if diff := cmpDiff("10.0.0.1/32\n2001:db8::1/128 nodad", k.String()); diff != "" {
		t.Errorf("kernel (-want +got):\n%s", diff)
	}
	wantFlags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL)
	if got := k.addrs[netip.MustParsePrefix("10.0.0.1/32")].nlFlags; got != wantFlags {
		t.Errorf("add flags %#x, want %#x", got, wantFlags)
	}
}

// TestWriteAddrsAnswersLost: a send whose answers stop coming (the
// socket's deadline) returns what was answered, and ErrNotWritten for the
// rest, whether made or not.
func TestWriteAddrsAnswersLost(t *testing.T) {
	k := newWireKernel()
	k.loseAcks = 4
	var changes []AddrChange
	for i := range 6 {
		changes = append(changes, AddrChange{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 32), Add: true})
	}
	answers, err := k.write(context.Background(), changes)
	if !errors.Is(err, unix.EAGAIN) {
		t.Errorf("write error = %v, want EAGAIN", err)
	}
	want := []error{nil, nil, nil, ErrNotWritten, ErrNotWritten, ErrNotWritten}
	if diff := cmpDiff(fmt.Sprint(want), fmt.Sprint(answers)); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if got := len(k.addrs); got != 4 {
		t.Errorf("%d addresses made, want 4: the unanswered one too", got)
	}
}

// TestWriteAddrsStopsWhenCancelled: a cancelled ctx stops WriteAddrs
// between two sends: the send under way is made whole, the rest is not.
func TestWriteAddrsStopsWhenCancelled(t *testing.T) {
	k := newWireKernel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.beforeWrite = cancel
	var changes []AddrChange
	for i := range BatchSize + 44 {
		changes = append(changes, AddrChange{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(i%250 + 1)}), 32), Add: true})
	}
	answers, err := k.write(ctx, changes)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("write error = %v, want context.Canceled", err)
	}
	if len(k.ops) != BatchSize {
		t.Errorf("%d changes made, want the first send's %d", len(k.ops), BatchSize)
	}
	for i, a := range answers {
		if want := i >= BatchSize; errors.Is(a, ErrNotWritten) != want || !want && a != nil {
			t.Fatalf("answer %d: %v", i, a)
		}
	}
}
