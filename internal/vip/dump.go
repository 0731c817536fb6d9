package vip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rhi-daemon/rhi/internal/inns"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle is a route netlink handle for an Announcer: the netlink library's
// handle for links and writes, plus a lean dump of one link's addresses.
// The library's AddrList dumps every address of the host into its own
// types (13 MB and 80,000 allocations a call at 10,000 VIPs, 12 ms); the
// lean dump asks the kernel for one link only and keeps just the prefixes.
type Handle struct {
	*netlink.Handle
	dump *addrDumper
}

// NewHandle opens a route netlink handle in the current network namespace
// whose every send and receive gives up after timeout, so that no netlink
// call can block the daemon's loop for longer. The caller closes it.
func NewHandle(timeout time.Duration) (*Handle, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("netlink timeout %s: must be positive", timeout)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	if err := h.SetSocketTimeout(timeout); err != nil {
		h.Close()
		return nil, fmt.Errorf("set netlink timeout %s: %w", timeout, err)
	}
	d, err := newAddrDumper(timeout)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &Handle{Handle: h, dump: d}, nil
}

// NewHandleAt is NewHandle in the network namespace ns (tests and labs).
func NewHandleAt(ns netns.NsHandle, timeout time.Duration) (*Handle, error) {
	var h *Handle
	err := inns.Do(ns, func() error {
		var err error
		h, err = NewHandle(timeout)
		return err
	})
	if err != nil && h != nil {
		h.Close()
		return nil, err
	}
	return h, err
}

// Close closes both sockets.
func (h *Handle) Close() {
	h.Handle.Close()
	h.dump.close()
}

// ListPrefixes adds to into every address on the link with the given index,
// with its prefix length, leaving out link-local ones. An error that is
// netlink.ErrDumpInterrupted means the list may be incomplete.
func (h *Handle) ListPrefixes(index int, into map[netip.Prefix]struct{}) error {
	return h.dump.list(index, into)
}

// prefixLister is the fast path readOnce takes when the Netlink has one.
type prefixLister interface {
	ListPrefixes(index int, into map[netip.Prefix]struct{}) error
}

var _ prefixLister = (*Handle)(nil)

// addrDumper runs RTM_GETADDR dumps on a raw netlink socket of its own.
type addrDumper struct {
	mu      sync.Mutex
	fd      int // -1 when closed or broken
	timeout time.Duration
	seq     uint32
	req     [24]byte
	buf     []byte
}

func newAddrDumper(timeout time.Duration) (*addrDumper, error) {
	d := &addrDumper{fd: -1, timeout: timeout, buf: make([]byte, 64<<10)}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *addrDumper) open() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("open netlink: %w", err)
	}
	tv := unix.NsecToTimeval(d.timeout.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			unix.Close(fd)
			return fmt.Errorf("set netlink timeout: %w", err)
		}
	}
	// Let the kernel filter by link (Linux 4.20+); older kernels send every
	// address and the filter below does the same work.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("bind netlink: %w", err)
	}
	d.fd = fd
	return nil
}

func (d *addrDumper) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

const nlmsgHdrLen = 16

func align4(n int) int { return (n + 3) &^ 3 }

func (d *addrDumper) list(index int, into map[netip.Prefix]struct{}) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		// A socket that timed out may still get the rest of that dump:
		// start afresh rather than sort old answers from new.
		if err := d.open(); err != nil {
			return err
		}
	}
	err := d.dump(index, into)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno == unix.EAGAIN || errno == unix.EINTR || errno == unix.ENOBUFS {
			unix.Close(d.fd)
			d.fd = -1
		}
	}
	return err
}

func (d *addrDumper) dump(index int, into map[netip.Prefix]struct{}) error {
	d.seq++
	ne := binary.NativeEndian
	ne.PutUint32(d.req[0:], uint32(len(d.req)))
	ne.PutUint16(d.req[4:], unix.RTM_GETADDR)
	ne.PutUint16(d.req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(d.req[8:], d.seq)
	ne.PutUint32(d.req[12:], 0)
	d.req[16] = unix.AF_UNSPEC // ifaddrmsg: family, prefixlen, flags, scope, index
	d.req[17], d.req[18], d.req[19] = 0, 0, 0
	ne.PutUint32(d.req[20:], uint32(index))
	if err := unix.Sendto(d.fd, d.req[:], 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("address dump: send: %w", err)
	}
	return collect(d.recv, d.seq, index, into)
}

// recv reads one datagram of a dump into d.buf.
func (d *addrDumper) recv() ([]byte, error) {
	n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return nil, fmt.Errorf("address dump: no answer within %s: %w", d.timeout, err)
		}
		return nil, fmt.Errorf("address dump: receive: %w", err)
	}
	return d.buf[:n], nil
}

// collect reads the datagrams of the dump numbered seq from next, up to
// its end, adding the addresses of link index to into. The kernel flags
// with NLM_F_DUMP_INTR the message at which it saw the addresses change,
// which need not be in the last datagram, so the flag is remembered until
// the end: then the dump is reported as netlink.ErrDumpInterrupted, having
// been read to its end so that no rest of it is left on the socket.
func collect(next func() ([]byte, error), seq uint32, index int, into map[netip.Prefix]struct{}) error {
	interrupted := false
	for {
		b, err := next()
		if err != nil {
			return err
		}
		done, intr, err := parseAddrMessages(b, seq, index, into)
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

// parseAddrMessages reads one datagram of a dump: done when it holds the
// end of the dump, interrupted when the kernel flagged the dump as
// inconsistent. Messages of another sequence (a late answer to an earlier
// request) are skipped.
func parseAddrMessages(b []byte, seq uint32, index int, into map[netip.Prefix]struct{}) (done, interrupted bool, err error) {
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
			if p, ok := parseIfaddr(msg, index); ok {
				into[p] = struct{}{}
			}
		}
	}
	return false, interrupted, nil
}

// parseIfaddr reads an ifaddrmsg and its attributes: the address of an
// IPv4 entry is IFA_LOCAL (IFA_ADDRESS is the peer on point-to-point
// links), of an IPv6 entry IFA_ADDRESS.
func parseIfaddr(msg []byte, index int) (netip.Prefix, bool) {
	const ifaddrLen = 8
	if len(msg) < ifaddrLen {
		return netip.Prefix{}, false
	}
	family, bits := msg[0], int(msg[1])
	if int(binary.NativeEndian.Uint32(msg[4:])) != index {
		return netip.Prefix{}, false
	}
	var local, address []byte
	for a := msg[ifaddrLen:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		typ := binary.NativeEndian.Uint16(a[2:])
		if l < 4 || l > len(a) {
			return netip.Prefix{}, false
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
	if family == unix.AF_INET && local != nil {
		raw = local
	}
	var addr netip.Addr
	switch {
	case family == unix.AF_INET && len(raw) == 4:
		addr = netip.AddrFrom4([4]byte(raw))
	case family == unix.AF_INET6 && len(raw) == 16:
		addr = netip.AddrFrom16([16]byte(raw))
	default:
		return netip.Prefix{}, false
	}
	if addr.IsLinkLocalUnicast() || bits > addr.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(addr, bits), true
}
