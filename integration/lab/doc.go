// Package lab builds the netns lab of SPEC §7 on one Linux machine: a peer
// router and N ADC hosts (dc1, dc2, …), each in its own network namespace and
// each running a real BIRD, joined by veth links, with BGP from every ADC to
// the router. The end-to-end tests and `make demo` run rhi and the fake APISIX
// control API inside the ADC namespaces with [Router.Start]. BIRD and birdc
// are whatever PATH finds: the host's BIRD 2, or BIRD 3 under `make
// integration-bird3`, whose wrappers come first on PATH.
//
// Topology and addressing (lab-only ranges, the same in every lab, since each
// lab has its own namespaces), for N = 1, 2, …:
//
//	host   AS       router id   link to the other end
//	peer   65000    10.99.0.1   iface "dcN": 10.99.N.1/24, fd00:99:N::1/64
//	dcN    65000+N  10.99.N.2   iface "peer": 10.99.N.2/24, fd00:99:N::2/64; VIPs on "rhi0" (ifb)
//
// The ADC's sessions are peer_4 and peer_6; the router's are dcN_4 and dcN_6.
// When several ADCs announce the same VIP the router keeps every path and, the
// AS paths being equally long, prefers the lowest router id: dc1 while it
// announces, then dc2, and so on. The BIRD configuration is the shipped one
// (deploy/bird) plus a generated host file with short lab timers.
//
// The lab asks BIRD through package bird's client ([Router.Query],
// [Router.Protocols], [Router.RouteCount]), except for the peer's table,
// which it reads with its own parser as the tests' oracle ([Route]), and
// changes BIRD's state (disable, enable) with birdc ([Router.Birdc]). Every
// wait for another process goes through [Eventually].
//
// Names are unique per lab: namespaces are <prefix><pid>-<random>-<host> and
// the lab's files live in <dir>/<prefix><pid>-<random>. The owner's pid in the
// name lets [Sweep] remove what a crashed run left behind without touching a
// lab whose process still runs.
//
// Everything that needs root is checked at run time ([Available]), so the
// package builds and its pure parts test without privileges. Child processes
// get SIGKILL when the test binary dies, and [Lab.Close] removes the rest; a
// namespace outlives its owner only after a hard kill, which [Sweep] handles.
package lab
