// Package apisixtest is a fake APISIX control API for tests and labs.
//
// A Server serves GET /v1/healthcheck/<type>/<id> and the list at
// GET /v1/healthcheck from an in-memory set of resources, in the bodies real
// APISIX sends (the 3.3+ format by default, the 2.x–3.2 format per resource;
// see ../testdata/README.md for the captured originals), including the 400
// and 404 error bodies and nginx's HTML 404 for unknown paths. Callers change
// node states and inject faults (refused connections, stalls, 5xx, garbage,
// truncated, slow or oversized bodies), for one resource, for the list alone
// or for everything, while requests are being served.
//
// Use it as an http.Handler (the netns lab's fake APISIX wraps it in an
// http.Server) or through Start, which serves it on a loopback
// httptest.Server:
//
//	srv := apisixtest.New()
//	ts := srv.Start()
//	defer srv.Close()
//	api := apisix.Ref{Type: "upstreams", ID: "api"}
//	srv.SetNodes(api, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
//	// … poll ts.URL …
//	srv.SetAllStatus(api, apisixtest.Unhealthy)
//
// # APISIX over time
//
// NewWith's Options make the fake behave as APISIX 3.18 does over time
// (testdata/real-3.18 holds the bodies of a live run, which the tests
// replay stage by stage). All of it is off in New's server.
//
//   - Options.Checks runs active health checks. SetUpstream configures a
//     resource's nodes (as an APISIX config change does), SetBackend makes a
//     node's server Alive, Dead (a TCP failure), HTTPError (an HTTP failure)
//     or Hang (a timeout), and each checker probes its nodes every interval
//     from its creation, moving them healthy → mostly_healthy → unhealthy and
//     back through mostly_unhealthy with lua-resty-healthcheck's counters and
//     APISIX's default thresholds (DefaultChecks: successes 2, tcp_failures
//     2, http_failures 5, timeouts 3, 1 s intervals). A new checker reports
//     every node healthy with zero counters until its first probe.
//   - Checks.Lazy creates a worker's checker only when a data-path request
//     for the resource reached that worker (and the worker's checker manager
//     ran, every second), as APISIX 3.14+ does; until then the control API
//     shows "nodes": {}. Options.Workers gives the server several workers.
//     Every worker reports every checker (APISIX 3.3+ reads them from shared
//     memory; a V2-format resource shows only the answering worker's own),
//     but only the worker holding the probe lock (the first to create a
//     checker, or Checks.ProbingWorker) probes, and only the checkers it
//     has: a checker that exists only in another worker says healthy for
//     ever, dead backends or not.
//   - Changing a resource's nodes retires its checkers: their nodes are
//     listed with a purge_time for Checks.PurgeDelay (10 s) until a cleanup
//     run drops them, while the new checker takes back the nodes it keeps.
//   - Restart refuses connections for a while (a graceful APISIX restart
//     takes about 3 s) and comes back on the same addresses, with the same
//     state or, cold, with checkers to build again.
//
// Time moves in Tick, at Options.Clock's time: Run calls it every
// TickInterval in real time; unit tests use a ManualClock and Advance.
// Transitions lists every change of a node's status with its time, which
// is when the control API started to show it: labs time rhi's reaction
// from it.
//
// The data path (DataPath, StartData) stands for APISIX's proxy listener:
// a request routed (SetRoute, or "/upstreams/<id>/…" by default) to a
// resource answers 200 when one of its nodes is Alive and nginx's 502 when
// all are Dead, and with Checks.Lazy it is what creates checkers, probes
// included.
//
// # What requests cost
//
// Each worker serves the control API and the data path on one serving
// loop, one request at a time. Options.Cost (DefaultCost, fitted to APISIX
// 3.18) makes a request occupy its worker's loop for what it costs APISIX:
// the list about 40 µs per entry (420 ms at 10,000), a one-resource GET
// 75 µs plus 74 ns per resource of its type, a data-path request 50 µs. A
// request that arrives while its worker is busy waits. The waiting is
// slept, not computed: it holds no CPU but the last SpinBelow (2 ms) of
// each wait, spun so that an answer leaves at the time its cost says
// despite the host's coarse sleeps (a 0.1 ms GET would otherwise take
// 1.1 ms). The loop's clock is virtual, so timer slack never accumulates
// in the queue. Accounting reports, per worker and kind of request (list,
// one-resource GET, other control-API requests, data path), the requests
// served, the loop time they took and the time they waited for it
// (requests answered by a fault other than Stall, Slow or Truncated stand
// for something in front of APISIX and take no loop time), and the data
// path's latency in loop time (each request's wait plus its cost: p50,
// p99, max), which the host's own scheduling does not inflate.
//
// Every method is safe for concurrent use, also while requests are served.
package apisixtest
