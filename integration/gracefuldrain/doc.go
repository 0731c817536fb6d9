// Package gracefuldrain holds the netns lab test of graceful drain and
// shutdown: a client namespace behind the lab's router sends a steady UDP
// stream to an anycast VIP that two sites serve, each site counting what
// it receives, while the site that carries the stream is drained (`rhi
// drain`) or stopped (SIGTERM with on_shutdown: withdraw). With drain_grace
// 0s the packets in flight are lost; with the default grace the VIP steps
// down to last resort first and none is. It needs root and the build tag
// "integration".
package gracefuldrain
