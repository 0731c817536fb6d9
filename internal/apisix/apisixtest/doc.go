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
//	api := health.Ref{Type: "upstreams", ID: "api"}
//	srv.SetNodes(api, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
//	// … poll ts.URL …
//	srv.SetAllStatus(api, apisixtest.Unhealthy)
//
// Every method is safe for concurrent use, also while requests are served.
package apisixtest
