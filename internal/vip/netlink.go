package vip

import (
	"errors"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Netlink is the part of the kernel's rtnetlink API an Announcer needs.
// *netlink.Handle satisfies it. Implementations need not be safe for
// concurrent use: an Announcer calls them from one goroutine.
type Netlink interface {
	// LinkByName returns the link called name, or an error that is a
	// netlink.LinkNotFoundError (or unix.ENODEV) when there is none.
	LinkByName(name string) (netlink.Link, error)
	// AddrList returns the addresses on link of the given family
	// (netlink.FAMILY_ALL for both). An error that is
	// netlink.ErrDumpInterrupted means the list may be incomplete.
	AddrList(link netlink.Link, family int) ([]netlink.Addr, error)
	// AddrAdd adds addr to link; unix.EEXIST if it is already there.
	AddrAdd(link netlink.Link, addr *netlink.Addr) error
	// AddrDel removes addr from link; unix.EADDRNOTAVAIL if it is not there.
	AddrDel(link netlink.Link, addr *netlink.Addr) error
}

var _ Netlink = (*netlink.Handle)(nil)

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
