package apisixtest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// TestDataPath: routing by host and longest path prefix, the resource's
// own path by default, and the answer from the best of its servers.
func TestDataPath(t *testing.T) {
	s := apisixtest.New()
	a, b, c := apisix.Ref{Type: "upstreams", ID: "a"}, apisix.Ref{Type: "upstreams", ID: "b"}, apisix.Ref{Type: "routes", ID: "c"}
	s.SetUpstream(a, n("10.0.0.1", 80, ""), n("10.0.0.2", 80, ""))
	s.SetUpstream(b, n("10.0.0.3", 80, ""))
	s.NoChecker(c)
	s.SetRoute("1", apisixtest.Route{Path: "/", Ref: a})
	s.SetRoute("2", apisixtest.Route{Path: "/b/", Ref: b})
	s.SetRoute("3", apisixtest.Route{Host: "c.example", Path: "/b/", Ref: c})
	tests := []struct {
		name, host, path string
		setup            func()
		want             int
	}{
		{"catch-all", "x", "/anything", func() {}, 200},
		{"longer prefix", "x", "/b/1", func() {}, 200},
		{"host wins only where it matches", "c.example:9080", "/b/1", func() {}, http.StatusServiceUnavailable}, // c has no nodes
		{"one server dead", "x", "/", func() { s.SetBackend("10.0.0.1", 80, apisixtest.Dead) }, 200},
		{"both dead", "x", "/", func() { s.SetBackend("10.0.0.2", 80, apisixtest.Dead) }, http.StatusBadGateway},
		{"one answers 500", "x", "/", func() { s.SetBackend("10.0.0.2", 80, apisixtest.HTTPError) }, http.StatusInternalServerError},
		{"back", "x", "/", func() { mustOK(t, s.SetBackends(a, apisixtest.Alive)) }, 200},
	}
	for _, tt := range tests {
		tt.setup()
		req := httptest.NewRequest(http.MethodGet, "http://"+tt.host+tt.path, nil)
		rec := httptest.NewRecorder()
		s.DataPath().ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: HTTP %d, want %d", tt.name, rec.Code, tt.want)
		}
	}

	// Without routes, /{type}/{id}/… reaches the resource.
	s2 := apisixtest.New()
	s2.SetUpstream(a, n("10.0.0.1", 80, ""))
	for path, want := range map[string]int{"/upstreams/a/x": 200, "/upstreams/a": 200, "/upstreams/zz": 404, "/nope/a": 404, "/": 404} {
		if got := serve(s2.DataPath(), path); got.status != want {
			t.Errorf("%s: HTTP %d, want %d", path, got.status, want)
		}
	}
	if got := serve(s2.DataPath(), "/nope"); string(got.body) != "{\"error_msg\":\"404 Route Not Found\"}\n" {
		t.Errorf("404 body %q", got.body)
	}

	// A hanging server holds the request until the client gives up.
	s2.SetBackend("10.0.0.1", 80, apisixtest.Hang)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "http://x/upstreams/a", nil).WithContext(ctx)
	done := make(chan struct{})
	go func() { s2.DataPath().ServeHTTP(httptest.NewRecorder(), req); close(done) }()
	cancel()
	<-done
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal(ctx.Err())
	}
}
