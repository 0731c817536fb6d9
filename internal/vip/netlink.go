package vip

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
)

// Netlink is the part of the kernel's rtnetlink API an Announcer needs: it
// finds the link, lists its addresses and writes a batch of changes.
// *rtnl.Handle satisfies it; tests use a kernel-like fake.
// Implementations need not be safe for concurrent use: an Announcer calls
// them from one goroutine.
type Netlink interface {
	// LinkByName returns the link called name, or an error that is a
	// netlink.LinkNotFoundError (or unix.ENODEV) when there is none.
	LinkByName(name string) (netlink.Link, error)
	// AppendPrefixes appends to into, in the order of the kernel's dump,
	// every address but the link-local ones on the link with the given
	// index, with its prefix length, and to peers every point-to-point
	// entry: one whose peer is not its local address; it returns both as
	// they became, even on an error. Two dumps of the same addresses should
	// list them in the same order (the kernel's does): a Set that finds the
	// list as the previous one left it can skip its plan. An error that is
	// netlink.ErrDumpInterrupted means the lists may be incomplete, never
	// that an address is absent.
	AppendPrefixes(index int, into []netip.Prefix, peers []Peer) ([]netip.Prefix, []Peer, error)
	// WriteAddrs adds or deletes host prefixes on the link with the given
	// index, in order, with scope global and, for IPv6, nodad, and returns
	// the kernel's answer to each, as long as changes: nil, or its errno
	// (unix.EEXIST for an add of an address that is there,
	// unix.EADDRNOTAVAIL for a delete of one that is not), or
	// rtnl.ErrNotWritten for a change that got no answer; then err says
	// why (the socket, its deadline, ctx), and that change may or may not
	// have been made. A cancelled ctx stops it between two sends of up to
	// rtnl.BatchSize changes.
	WriteAddrs(ctx context.Context, index int, changes []rtnl.AddrChange) (answers []error, err error)
}

var _ Netlink = (*rtnl.Handle)(nil)

// Peer is a point-to-point entry on an interface: a local address and the
// prefix of the peer the kernel routes to.
type Peer = rtnl.Peer

// NewHandle is rtnl.NewHandle, the production Netlink: a handle in the
// current network namespace whose every send and receive gives up after
// timeout. The caller closes it.
func NewHandle(timeout time.Duration) (*rtnl.Handle, error) { return rtnl.NewHandle(timeout) }

// isLinkNotFound reports whether err says the link does not exist.
// netlink turns the kernel's ENODEV into LinkNotFoundError; both are
// accepted so that fakes can answer with the plain errno.
func isLinkNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// isGone reports whether a delete failed only because the address was
// already absent: the kernel says EADDRNOTAVAIL for both families;
// ENOENT is accepted too, as some address paths answer with it.
func isGone(err error) bool {
	return errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT)
}
