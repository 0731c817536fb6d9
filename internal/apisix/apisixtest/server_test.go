package apisixtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

var (
	api    = apisix.Ref{Type: "upstreams", ID: "api"}
	web    = apisix.Ref{Type: "services", ID: "web"}
	route1 = apisix.Ref{Type: "routes", ID: "1"}
	sr1    = apisix.Ref{Type: "stream_routes", ID: "1"}
)

func n(ip string, port int, status string) apisixtest.Node {
	return apisixtest.Node{IP: ip, Port: port, Status: status}
}

type response struct {
	status      int
	contentType string
	body        []byte
}

func get(t *testing.T, base, path string, header ...string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("GET %s: read: %v", path, err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

// decode parses JSON into generic values, with every purge_time replaced by
// a marker: the fake's is a real time, the fixture's a fixed one.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["purge_time"].(float64); ok {
				v["purge_time"] = "a number"
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return v
}

// TestBodiesMatchFixtures rebuilds the state behind captured APISIX bodies
// (in ../testdata, the client package's copy of the shared fixtures) and
// compares the fake's answer field by field; key order is free.
func TestBodiesMatchFixtures(t *testing.T) {
	mixed := []apisixtest.Node{n("10.10.0.11", 8080, apisixtest.Healthy), n("10.10.0.12", 8080, apisixtest.Unhealthy)}
	tests := []struct {
		fixture string
		setup   func(s *apisixtest.Server)
		path    string
		status  int
		// drop removes entries of a list fixture that the fake cannot
		// produce: it has no checker type "tcp" for upstreams.
		drop int
	}{
		{"v3-upstream-all-healthy.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.Healthy), n("10.10.0.12", 8080, apisixtest.Healthy))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-upstream-mixed.json", func(s *apisixtest.Server) { s.SetNodes(api, mixed...) }, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-mostly-healthy.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.MostlyHealthy), n("10.10.0.12", 8080, apisixtest.Unhealthy))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-mostly-unhealthy.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.MostlyUnhealthy), n("10.10.0.12", 8080, apisixtest.Unhealthy))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-upstream-no-checker-yet.json", func(s *apisixtest.Server) { s.SetNodes(api) }, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-upstream-pending-purge.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.Healthy),
				apisixtest.Node{IP: "10.10.0.13", Port: 8080, Status: apisixtest.Healthy, Purging: true})
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v3-stream-route.json", func(s *apisixtest.Server) { s.SetNodes(sr1, n("127.0.0.1", 1995, apisixtest.Healthy)) },
			"/v1/healthcheck/stream_routes/1", 200, 0},
		{"v2-upstream-all-healthy.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.Healthy), n("10.10.0.12", 8080, apisixtest.MostlyHealthy))
			mustOK(t, s.SetFormat(api, apisixtest.V2))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v2-upstream-mixed.json", func(s *apisixtest.Server) {
			s.SetNodes(api, mixed...)
			mustOK(t, s.SetFormat(api, apisixtest.V2))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"v2-upstream-all-unhealthy.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.Unhealthy), n("10.10.0.12", 8080, apisixtest.MostlyUnhealthy))
			mustOK(t, s.SetFormat(api, apisixtest.V2))
		}, "/v1/healthcheck/upstreams/api", 200, 0},
		{"error-404-no-checker.json", func(s *apisixtest.Server) { s.NoChecker(api) }, "/v1/healthcheck/upstreams/api", 404, 0},
		{"error-404-not-found.json", func(s *apisixtest.Server) {}, "/v1/healthcheck/upstreams/api", 404, 0},
		{"t-3.18.0-control-healthcheck-TEST5-404.json", func(s *apisixtest.Server) {}, "/v1/healthcheck/routes/1", 404, 0},
		{"error-400-invalid-src-type.json", func(s *apisixtest.Server) {}, "/v1/healthcheck/upstream/api", 400, 0},
		{"t-3.18.0-control-healthcheck-TEST6-400.json", func(s *apisixtest.Server) {}, "/v1/healthcheck/route/1", 400, 0},
		{"error-404-missing-src-id.json", func(s *apisixtest.Server) {}, "/v1/healthcheck/upstreams", 404, 0},
		{"v3-list-empty.json", func(s *apisixtest.Server) { s.NoChecker(api) }, "/v1/healthcheck", 200, 0},
		{"t-3.18.0-stream-node-control-api-healthcheck-list.json", func(s *apisixtest.Server) {
			s.SetNodes(sr1, n("127.0.0.1", 1995, apisixtest.Healthy))
		}, "/v1/healthcheck", 200, 0},
		{"v3-list-all.json", func(s *apisixtest.Server) {
			// Inserted out of order: the list sorts by type, then id.
			s.SetNodes(api, mixed...)
			s.SetNodes(web, n("10.10.1.21", 9000, apisixtest.Unhealthy))
			s.SetNodes(route1)
			s.NoChecker(apisix.Ref{Type: "upstreams", ID: "plain"})
		}, "/v1/healthcheck", 200, 1},
		{"v2-list-all.json", func(s *apisixtest.Server) {
			s.SetNodes(api, n("10.10.0.11", 8080, apisixtest.Healthy), n("10.10.0.12", 8080, apisixtest.Unhealthy))
			s.SetNodes(web, n("10.10.1.21", 9000, apisixtest.Unhealthy), n("10.10.1.22", 9000, apisixtest.Unhealthy))
			s.SetNodes(route1, n("127.0.0.1", 1980, apisixtest.Healthy), n("127.0.0.1", 1988, apisixtest.Unhealthy))
			for _, ref := range []apisix.Ref{api, web, route1} {
				mustOK(t, s.SetFormat(ref, apisixtest.V2))
			}
		}, "/v1/healthcheck", 200, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("..", "testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			srv := apisixtest.New()
			ts := srv.Start()
			defer srv.Close()
			tt.setup(srv)

			got := get(t, ts.URL, tt.path, "Accept", "application/json")
			if got.status != tt.status || got.contentType != "application/json" {
				t.Errorf("HTTP %d %q, want %d %q", got.status, got.contentType, tt.status, "application/json")
			}
			wantV := decode(t, want)
			if tt.drop > 0 {
				l := wantV.([]any)
				wantV = l[:len(l)-tt.drop]
			}
			if diff := cmp.Diff(wantV, decode(t, got.body)); diff != "" {
				t.Errorf("body (-fixture +fake):\n%s\nfake: %s", diff, got.body)
			}
			// 2.x–3.1 servers escape "/", and clients must cope.
			if bytes.Contains(want, []byte(`\/`)) && (!bytes.Contains(got.body, []byte(`\/`)) || bytes.Contains(got.body, []byte(`"/`))) {
				t.Errorf("fixture escapes \"/\", fake does not: %s", got.body)
			}
		})
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Browsers get HTML (APISIX 3.3+); unknown paths and methods get nginx's
// HTML 404.
func TestHTMLAnswers(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	tests := []struct {
		name, method, path, accept string
		status                     int
	}{
		{"browser, resource", "GET", "/v1/healthcheck/upstreams/api", "text/html,application/xhtml+xml", 200},
		{"browser, list", "GET", "/v1/healthcheck", "text/html", 200},
		{"unknown path", "GET", "/v1/routes", "application/json", 404},
		{"other version", "GET", "/v2/healthcheck/upstreams/api", "application/json", 404},
		{"POST", "POST", "/v1/healthcheck/upstreams/api", "application/json", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			req.Header.Set("Accept", tt.accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("HTTP %d %q, want %d text/html", resp.StatusCode, resp.Header.Get("Content-Type"), tt.status)
			}
		})
	}
}

// TestFaults checks what each fault puts on the wire.
func TestFaults(t *testing.T) {
	tests := []struct {
		fault apisixtest.Fault
		check func(t *testing.T, resp *http.Response, err error)
	}{
		{apisixtest.Refuse, func(t *testing.T, resp *http.Response, err error) {
			if err == nil {
				t.Errorf("got HTTP %d, want a connection error", resp.StatusCode)
			}
		}},
		{apisixtest.Status500, wantPage(500)},
		{apisixtest.Status502, wantPage(502)},
		{apisixtest.Status503, wantPage(503)},
		{apisixtest.HTMLNotFound, wantPage(404)},
		{apisixtest.Garbage, func(t *testing.T, resp *http.Response, err error) {
			b := body(t, resp, err)
			if resp.StatusCode != 200 || json.Valid(b) {
				t.Errorf("HTTP %d %q, want 200 and not JSON", resp.StatusCode, b)
			}
		}},
		{apisixtest.Truncated, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read: %v, want unexpected EOF", err)
			}
		}},
		{apisixtest.Oversize, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 2*apisixtest.OversizeBytes))
			if err != nil || len(b) < apisixtest.OversizeBytes || !json.Valid(b) || resp.ContentLength != -1 {
				t.Errorf("read %d bytes (valid JSON: %v), length %d, err %v", len(b), json.Valid(b), resp.ContentLength, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			srv := apisixtest.New()
			ts := srv.Start()
			defer srv.Close()
			srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
			srv.SetFault(api, tt.fault)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/healthcheck/upstreams/api", nil)
			resp, err := http.DefaultClient.Do(req)
			tt.check(t, resp, err)
			// The fault is the resource's only.
			srv.SetNodes(web, n("10.0.0.1", 80, apisixtest.Healthy))
			if got := get(t, ts.URL, "/v1/healthcheck/services/web"); got.status != 200 {
				t.Errorf("other resource: HTTP %d", got.status)
			}
		})
	}
}

func body(t *testing.T, resp *http.Response, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantPage(status int) func(*testing.T, *http.Response, error) {
	return func(t *testing.T, resp *http.Response, err error) {
		b := body(t, resp, err)
		if resp.StatusCode != status || resp.Header.Get("Content-Type") != "text/html" || !bytes.Contains(b, []byte("<center>openresty</center>")) {
			t.Errorf("HTTP %d %q %q, want %d and nginx's page", resp.StatusCode, resp.Header.Get("Content-Type"), b, status)
		}
	}
}

// A Slow body arrives a byte at a time: the headers come at once, and a
// reader whose context ends before the body's last byte gets less than
// the whole body.
func TestSlow(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	full := get(t, ts.URL, "/v1/healthcheck/upstreams/api").body
	srv.SetGlobalFault(apisixtest.Slow)

	// The timeout bounds a failing run; the body would need far longer.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/healthcheck/upstreams/api", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(full)) {
		t.Errorf("HTTP %d, length %d; want 200, %d", resp.StatusCode, resp.ContentLength, len(full))
	}
	select {
	case <-srv.Stalled():
	case <-ctx.Done():
		t.Fatal("Stalled not closed while the body trickles")
	}
	// The whole body takes len(full)×SlowInterval: it cannot have come
	// yet, unless Slow sends it at once.
	cancel()
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, context.Canceled) || !bytes.HasPrefix(full, b) || len(b) == len(full) {
		t.Errorf("read %q, err %v; want a prefix of %q and the context's end", b, err, full)
	}
}

// waitRequests waits until the server has seen n requests: a stalled
// request is counted before it blocks. It fails the test after 10s rather
// than hang it.
func waitRequests(t *testing.T, srv *apisixtest.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitRequests(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// A stalled request ends with the client's deadline, answers with the
// state of the moment after Release, and does not keep Close waiting.
func TestStall(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	srv.SetFault(api, apisixtest.Stall)

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/healthcheck/upstreams/api", nil)
		if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v, want deadline exceeded", err)
		}
	})
	t.Run("release", func(t *testing.T) {
		before := srv.Requests()
		done := make(chan response)
		go func() { done <- get(t, ts.URL, "/v1/healthcheck/upstreams/api") }()
		waitRequests(t, srv, before+1)
		select {
		case <-srv.Stalled():
		case <-time.After(10 * time.Second): // bounds a failing run
			t.Fatal("Stalled not closed by a stalled request")
		}
		mustOK(t, srv.SetAllStatus(api, apisixtest.Unhealthy))
		srv.Release()
		got := <-done
		if got.status != 200 || !bytes.Contains(got.body, []byte(`"status":"unhealthy"`)) {
			t.Errorf("HTTP %d %s, want the state set before Release", got.status, got.body)
		}
	})
	t.Run("close", func(t *testing.T) {
		srv := apisixtest.New()
		ts := srv.Start()
		srv.SetGlobalFault(apisixtest.Stall)
		errc := make(chan error)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/healthcheck", nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		waitRequests(t, srv, 1)
		srv.Close() // returns only when the stalled handler has
		if err := <-errc; err == nil {
			t.Error("stalled request got an answer after Close")
		}
	})
}

// The global fault wins over a resource's and covers every path.
func TestGlobalFault(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	srv.SetFault(api, apisixtest.Garbage)
	srv.SetGlobalFault(apisixtest.Status502)
	for _, p := range []string{"/v1/healthcheck/upstreams/api", "/v1/healthcheck", "/nowhere"} {
		if got := get(t, ts.URL, p); got.status != 502 {
			t.Errorf("%s: HTTP %d, want 502", p, got.status)
		}
	}
	srv.SetGlobalFault(apisixtest.NoFault)
	if got := get(t, ts.URL, "/v1/healthcheck/upstreams/api"); got.status != 200 || json.Valid(got.body) {
		t.Errorf("resource fault after global cleared: HTTP %d %q, want garbage", got.status, got.body)
	}
	srv.SetFault(api, apisixtest.NoFault)
	if got := get(t, ts.URL, "/v1/healthcheck/upstreams/api"); got.status != 200 || !json.Valid(got.body) {
		t.Errorf("no fault: HTTP %d %q", got.status, got.body)
	}
}

func TestMethodErrors(t *testing.T) {
	srv := apisixtest.New()
	defer srv.Close()
	tests := []struct {
		name string
		call func() error
	}{
		{"SetStatus on a missing resource", func() error { return srv.SetStatus(api, 0, apisixtest.Healthy) }},
		{"SetAllStatus on a missing resource", func() error { return srv.SetAllStatus(api, apisixtest.Healthy) }},
		{"SetFormat on a missing resource", func() error { return srv.SetFormat(api, apisixtest.V2) }},
		{"SetStatus past the last node", func() error {
			srv.SetNodes(web, n("10.0.0.1", 80, apisixtest.Healthy))
			return srv.SetStatus(web, 1, apisixtest.Healthy)
		}},
		{"SetStatus without a checker", func() error {
			srv.NoChecker(route1)
			return srv.SetStatus(route1, 0, apisixtest.Healthy)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil {
				t.Error("no error")
			}
		})
	}
}

// SetNodes keeps its own copy of the caller's slice.
func TestSetNodesCopies(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	nodes := []apisixtest.Node{n("10.0.0.1", 80, apisixtest.Healthy)}
	srv.SetNodes(api, nodes...)
	nodes[0].Status = apisixtest.Unhealthy
	if got := get(t, ts.URL, "/v1/healthcheck/upstreams/api"); !bytes.Contains(got.body, []byte(`"status":"healthy"`)) {
		t.Errorf("body %s changed with the caller's slice", got.body)
	}
}

func TestRequestCounts(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	for _, p := range []string{"/v1/healthcheck/upstreams/api", "/v1/healthcheck/upstreams/api", "/v1/healthcheck/services/web", "/v1/healthcheck"} {
		get(t, ts.URL, p)
	}
	if got, want := [4]int{srv.Requests(), srv.RequestsFor(api), srv.RequestsFor(web), srv.ListRequests()}, [4]int{4, 2, 1, 1}; got != want {
		t.Errorf("requests (all, api, web, list) = %v, want %v", got, want)
	}
}

// The list's fault hits the list alone; the global fault wins over it.
func TestListFault(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy))
	srv.SetListFault(apisixtest.Status500)
	if got := get(t, ts.URL, "/v1/healthcheck"); got.status != 500 {
		t.Errorf("list: HTTP %d, want 500", got.status)
	}
	if got := get(t, ts.URL, "/v1/healthcheck/upstreams/api"); got.status != 200 || !json.Valid(got.body) {
		t.Errorf("resource under a list fault: HTTP %d %q", got.status, got.body)
	}
	srv.SetGlobalFault(apisixtest.Status503)
	if got := get(t, ts.URL, "/v1/healthcheck"); got.status != 503 {
		t.Errorf("list under both faults: HTTP %d, want the global 503", got.status)
	}
	srv.SetGlobalFault(apisixtest.NoFault)
	srv.SetListFault(apisixtest.NoFault)
	if got := get(t, ts.URL, "/v1/healthcheck"); got.status != 200 || !bytes.HasPrefix(got.body, []byte(`[{"name":"/apisix/upstreams/api"`)) {
		t.Errorf("list after clearing: HTTP %d %q", got.status, got.body)
	}
}

func TestParseFault(t *testing.T) {
	for f := apisixtest.NoFault; f <= apisixtest.Oversize; f++ {
		got, err := apisixtest.ParseFault(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFault(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := apisixtest.ParseFault("explode"); err == nil {
		t.Error(`ParseFault("explode") succeeded`)
	}
}

// Changes and requests at the same time, for the race detector; every
// answer must be one of the states that were set.
func TestConcurrentUse(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api, n("10.0.0.1", 80, apisixtest.Healthy), n("10.0.0.2", 80, apisixtest.Healthy))
	c, err := apisix.NewClient(ts.URL, apisix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			status := []string{apisixtest.Healthy, apisixtest.Unhealthy}[i%2]
			mustOK(t, srv.SetAllStatus(api, status))
			srv.SetFault(web, apisixtest.Fault(i%3))
			_ = srv.RequestsFor(api)
		}
	})
	for range 50 {
		r := c.Poll(context.Background(), health.Upstreams("/apisix/upstreams/api"))["/apisix/upstreams/api"]
		if want := map[health.Verdict]int{health.Up: 2, health.Down: 0}; r.Verdict == health.Failed || r.Total != 2 || want[r.Verdict] != int(r.Healthy) {
			t.Errorf("got %v %d/%d, err %v", r.Verdict, r.Healthy, r.Total, r.Err)
		}
	}
	close(stop)
	wg.Wait()
}

// WaitRequests returns once the count is reached, whether the requests came
// before or during the wait, and returns the context's error otherwise.
func TestWaitRequests(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get(t, ts.URL, "/v1/healthcheck")
	if err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatalf("after one request: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.WaitRequests(ctx, 3) }()
	get(t, ts.URL, "/v1/healthcheck")
	get(t, ts.URL, "/nowhere")
	if err := <-done; err != nil {
		t.Fatalf("after three requests: %v", err)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := srv.WaitRequests(short, 4); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "3 requests, want 4") {
		t.Errorf("cancelled wait for a 4th request: %v, want the count and context.Canceled", err)
	}
}
