// Package probe sends the optional per-VIP request "through the data path":
// one HTTP(S) GET to APISIX's own listener, with the VIP's Host
// header, so that a site whose data plane is broken (bad route, worker
// crash loop, TLS failure) is noticed even while the control API still calls
// its upstreams healthy.
//
// A [Prober] sends one request per distinct target of a poll, however many
// VIPs share it, all at once under the caller's deadline, and judges each
// [Spec] from the shared answer:
//
//   - [Up]: an HTTP answer whose status is in the spec's ExpectStatus;
//   - [Down]: an answer that says the data plane cannot serve: any other
//     status, or a TLS handshake the server refused or that failed
//     verification (bad certificate, wrong name, alert, plain HTTP on the
//     TLS port);
//   - [Unreachable]: nothing answered in time: connection refused or reset,
//     DNS failure, the spec's timeout or the caller's deadline.
//
// The decision treats Down as the VIP's verdict "down" and Unreachable as a
// failed poll for that VIP, so failure_policy and max_failed_polls apply as
// they do for the control API.
//
// [Validate] and [Warnings] are the pure checks the configuration parser
// runs on a probe mapping; [Keys] are the keys it accepts and [Defaults]
// the values of keys it leaves out.
package probe
