package vip

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
)

// Watch calls hint whenever the kernel reports a change of the interface
// named iface (link up/down, created, deleted) or of an address on it, and
// when the notifications themselves fail (an overflowed socket means some
// were lost). Events are hints, never the truth: the caller re-reads the
// interface with Set. hint must not block. Watch returns when ctx is done;
// a subscription that breaks is made again after a second.
func Watch(ctx context.Context, iface string, hint func(), log logrus.FieldLogger) {
	for ctx.Err() == nil {
		if err := watchOnce(ctx, iface, hint, log); err != nil {
			log.WithField("iface", iface).WithError(err).Warn("watching the interface for changes failed; relying on the poll")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func watchOnce(ctx context.Context, iface string, hint func(), log logrus.FieldLogger) error {
	done := make(chan struct{})
	defer close(done)
	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 256)
	broken := make(chan struct{}, 1)
	onErr := func(err error) {
		log.WithField("iface", iface).WithError(err).Debug("interface notifications: error; re-reading")
		hint()
		select {
		case broken <- struct{}{}:
		default:
		}
	}
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ErrorCallback: onErr}); err != nil {
		return err
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{ErrorCallback: onErr}); err != nil {
		return err
	}
	index := 0
	if l, err := netlink.LinkByName(iface); err == nil {
		index = l.Attrs().Index
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-broken:
			return nil // subscribe again: the old sockets may be dead
		case u, ok := <-links:
			if !ok {
				return nil
			}
			if u.Attrs().Name == iface {
				index = u.Attrs().Index
				hint()
			}
		case u, ok := <-addrs:
			if !ok {
				return nil
			}
			if index == 0 || u.LinkIndex == index {
				hint()
			}
		}
	}
}
