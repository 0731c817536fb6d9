package rtnl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/inns"
)

// Handle is a route netlink handle for an Announcer: the netlink library's
// handle for links, plus a socket of its own for the lean dump of one
// link's addresses and for batched address writes. The caller closes it.
type Handle struct {
	*netlink.Handle
	dump *addrDumper
}

// NewHandle opens a route netlink handle in the current network namespace
// (that of the calling thread) whose every send and receive gives up after
// timeout, so that no netlink call can block the daemon's loop for longer.
// The handle stays in that namespace whichever thread uses it. The caller
// closes it.
func NewHandle(timeout time.Duration) (*Handle, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("netlink timeout %s: must be positive", timeout)
	}
	// Both sockets and the namespace the dumper records must come from one
	// thread, whatever namespace the others are in.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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

// AppendPrefixes appends to into every address on the link with the given
// index, with its prefix length, in the order of the kernel's dump, which
// a caller may compare with the previous dump's, and to peers every
// point-to-point entry (one whose peer is not its local address), leaving
// out link-local ones. It returns into and peers as they became, even on
// an error, so that their storage can be reused. An error that is
// netlink.ErrDumpInterrupted means the lists may be incomplete.
func (h *Handle) AppendPrefixes(index int, into []netip.Prefix, peers []Peer) ([]netip.Prefix, []Peer, error) {
	err := h.dump.list(index, sink{list: &into, peers: &peers})
	return into, peers, err
}

// addrDumper runs RTM_GETADDR dumps on a raw netlink socket of its own.
type addrDumper struct {
	mu      sync.Mutex
	fd      int            // -1 when closed or broken
	ns      netns.NsHandle // where the socket was opened, for reopening it
	timeout time.Duration
	seq     uint32
	req     [24]byte
	buf     []byte
}

// newAddrDumper opens a dumper in the namespace of the calling thread,
// which must be locked to it.
func newAddrDumper(timeout time.Duration) (*addrDumper, error) {
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("open netlink: current network namespace: %w", err)
	}
	d := &addrDumper{fd: -1, ns: ns, timeout: timeout, buf: make([]byte, 64<<10)}
	if err := d.open(); err != nil {
		ns.Close()
		return nil, err
	}
	return d, nil
}

// reopen opens a new socket in the namespace of the first. The calling
// thread may be in another (a handle of NewHandleAt, used from anywhere),
// and then the socket is opened from a thread that enters the namespace.
// Entering needs CAP_SYS_ADMIN, which the daemon has not (and systemd's
// RestrictNamespaces forbids), so it is done only when the thread is not
// in the namespace already, as the daemon's threads always are.
func (d *addrDumper) reopen() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	here, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reopen netlink: current network namespace: %w", err)
	}
	defer here.Close()
	if here.Equal(d.ns) {
		return d.open()
	}
	return inns.Do(d.ns, d.open)
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
	d.drop()
	d.ns.Close()
	d.ns = netns.None()
}

func (d *addrDumper) list(index int, s sink) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		// A socket that timed out may still be in the middle of that dump,
		// and the kernel refuses (EBUSY) a new dump on it until the old one
		// has been read to its end: start afresh on a new socket.
		if err := d.reopen(); err != nil {
			return err
		}
	}
	err := d.dump(index, s)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno == unix.EAGAIN || errno == unix.EINTR || errno == unix.ENOBUFS {
			d.drop()
		}
	}
	return err
}

// drop closes a socket that may hold the rest of a dump, so that the next
// list opens a new one. d.mu must be held.
func (d *addrDumper) drop() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

func (d *addrDumper) dump(index int, s sink) error {
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
	return collect(func() ([]byte, error) {
		b, err := d.recv()
		if err != nil {
			err = fmt.Errorf("address dump: %w", err)
		}
		return b, err
	}, d.seq, index, s)
}

// WriteAddrs makes changes on the link with the given index, in order,
// BatchSize to a send, and returns the kernel's answer to each, as long as
// changes: nil, or its errno (EEXIST for an add of an address that is
// there, EADDRNOTAVAIL for a delete of one that is not), or ErrNotWritten
// for a change that got no answer. Then err says why (the socket, its
// deadline, ctx), and the change may or may not have been made. A
// cancelled ctx stops it between two sends. An add makes the address as
// the netlink library's AddrAdd of a host prefix with scope global and,
// for IPv6, nodad does.
func (h *Handle) WriteAddrs(ctx context.Context, index int, changes []AddrChange) ([]error, error) {
	return h.dump.write(ctx, index, changes)
}

func (d *addrDumper) write(ctx context.Context, index int, changes []AddrChange) ([]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		if err := d.reopen(); err != nil {
			return notWritten(make([]error, len(changes)), nil, 0), err
		}
	}
	send := func(b []byte) error {
		return unix.Sendto(d.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	answers, err := writeAddrs(ctx, index, changes, &d.seq, send, d.recv)
	if err != nil && ctx.Err() == nil {
		// Answers still owed may come later on this socket: the next
		// call starts afresh on another.
		d.drop()
	}
	return answers, err
}

// recv reads one datagram (of a dump, or acknowledgements) into d.buf.
func (d *addrDumper) recv() ([]byte, error) {
	n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return nil, fmt.Errorf("no answer within %s: %w", d.timeout, err)
		}
		return nil, fmt.Errorf("receive: %w", err)
	}
	return d.buf[:n], nil
}
