// Package expect says what rhi wants the routing daemon to export, for
// `rhi verify`: the running daemon's decisions (FromDaemon) or, when the
// daemon does not answer, one fresh poll of the health source and the
// VIPs' probes (FromPoll, FromPollProbed), where a VIP one poll cannot
// settle is not judged. Want.Input turns it into the router.Input that
// package verify checks BIRD against. It does not talk to the router.
package expect
