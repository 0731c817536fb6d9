// Package vip puts rhi's virtual addresses on the announcing interface and
// takes them off again.
//
// The Announcer is a declarative setter in the style of tailscale's router:
// Set takes the whole set of VIPs rhi owns as a Desired, two sorted lists
// of those wanted present and absent, reads what the interface really
// holds, adds the missing wanted addresses first and then deletes the
// unwanted ones. Calling Set again with the same input costs one read, one
// comparison with what the previous Set was told and found, and no writes,
// so the daemon calls it on every tick and the kernel, not a remembered
// bool, stays the record of what is announced.
//
// BIRD's direct protocol turns each address into a route, so addresses are
// host prefixes: IPv4 /32 and IPv6 /128, the latter with nodad so that the
// kernel does not hold it tentative (and hidden from BIRD) for a second.
//
// What to change is computed by a pure plan(current, desired), which Set
// makes and DryRun only logs. The kernel is reached through the one small
// Netlink interface declared here (find the link, list its addresses,
// write a batch of changes), which *rtnl.Handle satisfies with its own
// rtnetlink codec (package vip/rtnl); tests use a kernel-like fake.
package vip
