package rtnl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// AddrChange is one address write: add or delete a VIP on a link.
type AddrChange struct {
	Prefix netip.Prefix // a /32 or /128
	Add    bool
	// Peer, when valid, makes the change a delete of the point-to-point
	// entry "Prefix.Addr() peer Peer" (Add must be false): the kernel
	// names such an entry by its local address and its peer prefix.
	Peer netip.Prefix
}

// ErrNotWritten is the answer of a change a batch did not get to, or got
// no answer for.
var ErrNotWritten = errors.New("not written")

// BatchSize bounds the changes of one send: 64 bytes each, and their
// acknowledgements, fit the socket buffers with room to spare. A cancelled
// ctx stops WriteAddrs between two sends, never within one.
const BatchSize = 256

// addrMsgLen is an RTM_NEWADDR or RTM_DELADDR of a VIP: the header, an
// ifaddrmsg, and IFA_LOCAL and IFA_ADDRESS of up to 16 bytes each.
const addrMsgLen = nlmsgHdrLen + 8 + 2*(4+16)

// writeAddrs is WriteAddrs over a netlink socket's send and recv: the
// changes go BatchSize to a send, numbered from *seq on, and each send's
// acknowledgements are read before the next, so that the kernel makes the
// changes in order.
func writeAddrs(ctx context.Context, index int, changes []AddrChange, seq *uint32, send func([]byte) error, recv func() ([]byte, error)) ([]error, error) {
	answers := make([]error, len(changes))
	got := make([]bool, len(changes)) // the kernel answered
	req := make([]byte, 0, min(len(changes), BatchSize)*addrMsgLen)
	for start := 0; start < len(changes); start += BatchSize {
		if err := ctx.Err(); err != nil {
			return notWritten(answers, got, start), err
		}
		end := min(start+BatchSize, len(changes))
		first := *seq + 1
		req = req[:0]
		for _, c := range changes[start:end] {
			*seq++
			req = appendAddrMsg(req, *seq, index, c)
		}
		if err := send(req); err != nil {
			return notWritten(answers, got, start), fmt.Errorf("address write: send: %w", err)
		}
		for pending := end - start; pending > 0; {
			b, err := recv()
			if err == nil {
				var n int
				n, err = parseAcks(b, first, answers[start:end], got[start:end])
				pending -= n
			}
			if err != nil {
				return notWritten(answers, got, start), fmt.Errorf("address write: %w", err)
			}
		}
	}
	return answers, nil
}

// notWritten marks as ErrNotWritten every answer from from on that did not
// come (got nil: none did).
func notWritten(answers []error, got []bool, from int) []error {
	for i := from; i < len(answers); i++ {
		if got == nil || !got[i] {
			answers[i] = ErrNotWritten
		}
	}
	return answers
}

// appendAddrMsg appends an RTM_NEWADDR (with NLM_F_CREATE|NLM_F_EXCL, as
// the netlink library sends it) or RTM_DELADDR for c, asking for an
// acknowledgement: what the library's AddrAdd and AddrDel of c.Prefix,
// with scope global and, for IPv6, nodad, send.
func appendAddrMsg(b []byte, seq uint32, index int, c AddrChange) []byte {
	ip := c.Prefix.Addr()
	raw := ip.AsSlice()
	attr := 4 + len(raw)
	l := nlmsgHdrLen + 8 + 2*align4(attr)
	typ, flags := uint16(unix.RTM_DELADDR), uint16(unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	if c.Add {
		typ, flags = unix.RTM_NEWADDR, flags|unix.NLM_F_CREATE|unix.NLM_F_EXCL
	}
	family, ifaFlags := byte(unix.AF_INET), byte(0)
	if ip.Is6() {
		family, ifaFlags = unix.AF_INET6, unix.IFA_F_NODAD
	}
	bits, addr := byte(ip.BitLen()), raw // IFA_ADDRESS
	if c.Peer.IsValid() && !c.Add && c.Peer.Addr().BitLen() == ip.BitLen() {
		bits, addr = byte(c.Peer.Bits()), c.Peer.Addr().AsSlice()
	}
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, uint32(l))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 0)
	b = append(b, family, bits, ifaFlags, unix.RT_SCOPE_UNIVERSE)
	b = ne.AppendUint32(b, uint32(index))
	for i, t := range []uint16{unix.IFA_LOCAL, unix.IFA_ADDRESS} {
		b = ne.AppendUint16(b, uint16(attr))
		b = ne.AppendUint16(b, t)
		if i == 0 {
			b = append(b, raw...)
		} else {
			b = append(b, addr...)
		}
		for range align4(attr) - attr {
			b = append(b, 0)
		}
	}
	return b
}

// parseAcks reads the acknowledgements in one datagram. Those whose
// sequence is first+i answer the change whose result is errs[i]: nil for
// success, the errno otherwise; got[i] records that it came. Other
// sequences are late answers to earlier requests and are skipped. It
// returns how many changes the datagram answered.
func parseAcks(b []byte, first uint32, errs []error, got []bool) (int, error) {
	ne := binary.NativeEndian
	n := 0
	for len(b) >= nlmsgHdrLen {
		l := int(ne.Uint32(b[0:]))
		typ, seq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		if l < nlmsgHdrLen || l > len(b) {
			return n, fmt.Errorf("message of %d bytes in %d", l, len(b))
		}
		msg := b[nlmsgHdrLen:l]
		b = b[min(align4(l), len(b)):]
		i := int(seq - first) // wraps to a large value below first
		if typ != unix.NLMSG_ERROR || i < 0 || i >= len(errs) || got[i] {
			continue
		}
		if len(msg) < 4 {
			return n, errors.New("short acknowledgement")
		}
		if e := int32(ne.Uint32(msg)); e < 0 {
			errs[i] = syscall.Errno(-e)
		}
		got[i] = true
		n++
	}
	return n, nil
}
