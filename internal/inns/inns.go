// Package inns runs a function with its OS thread in another network
// namespace. Sockets keep the namespace they were made in, so making them
// inside and using them anywhere is how one process works in several
// namespaces (the labs, and tests of the netlink code).
package inns

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs f on a thread switched into ns, then switches the thread back
// and hands it back to the scheduler. A thread that cannot switch back is
// not handed back: it dies with the goroutine rather than run other
// goroutines in the wrong namespace. (Letting every thread die instead is
// no shortcut: a child process started with Pdeathsig is killed when the
// thread that forked it exits, and Go reuses threads.)
func Do(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("leave netns: %w (after: %v)", err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// DoNamed is Do for a namespace made by `ip netns add name`.
func DoNamed(name string, f func() error) error {
	h, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("netns %q: %w", name, err)
	}
	defer h.Close()
	return Do(h, f)
}
