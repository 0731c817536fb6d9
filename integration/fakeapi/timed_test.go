package fakeapi

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestControlSteersTime runs the fake as the labs do, with checks over
// time, lazy checkers, two workers and a data path, on a manual clock, and
// checks that what the control socket sets is what rhi's client and the
// data path see.
func TestControlSteersTime(t *testing.T) {
	clk := apisixtest.NewManualClock(time.Date(2026, 12, 4, 14, 0, 0, 0, time.UTC))
	srv := apisixtest.NewWith(apisixtest.Options{Clock: clk, Workers: 2, Checks: &apisixtest.Checks{Lazy: true}})
	apiLn, err := srv.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dataLn, err := srv.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	done := make(chan error)
	go func() { done <- ServeAll(ctx, Endpoints{API: apiLn, Data: dataLn, Control: sock}, srv) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeAll: %v", err)
		}
	}()
	c := NewClient(sock)
	waitUp(t, c)
	cl, err := apisix.NewClient("http://"+apiLn.Addr().String(), apisix.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	api := apisix.Ref{Type: "upstreams", ID: "api"}
	const key = "/apisix/upstreams/api"
	poll := func() health.Verdict {
		return cl.Poll(context.Background(), health.Upstreams(key))[key].Verdict
	}
	data := func(path string) int {
		hc := &http.Client{Timeout: 10 * time.Second}
		resp, err := hc.Get("http://" + dataLn.Addr().String() + path)
		if err != nil {
			t.Fatalf("data path %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	must(t, c.SetUpstream(api, 2))
	must(t, c.SetRoute("r1", api, "", "/r1"))
	if got := poll(); got != health.NoChecker {
		t.Errorf("no traffic yet: %v, want no_checker (nodes {})", got)
	}
	if got := data("/r1/x"); got != 200 {
		t.Errorf("data path: HTTP %d, want 200", got)
	}
	srv.Advance(time.Second)
	// Connections to the API and the data path share the workers'
	// round-robin: the data path's is on either.
	if ck, err := c.Checkers(api); err != nil || len(ck.Workers) != 1 || ck.Probing != ck.Workers[0] {
		t.Errorf("checkers %+v (%v), want in one worker, which probes", ck, err)
	}
	if got := poll(); got != health.Up {
		t.Errorf("checker created: %v, want up", got)
	}
	must(t, c.SetBackends(api, "dead"))
	srv.Advance(2 * time.Second)
	if got := poll(); got != health.Down {
		t.Errorf("servers dead for two checks: %v, want down", got)
	}
	if got := data("/r1"); got != http.StatusBadGateway {
		t.Errorf("data path to dead servers: HTTP %d, want 502", got)
	}
	tr, err := c.Transitions(api)
	if err != nil || len(tr) != 6 || tr[5].To != apisixtest.Unhealthy || tr[5].Resource != "upstreams/api" {
		t.Errorf("transitions %+v (%v), want 2 added, 2 mostly_healthy, 2 unhealthy", tr, err)
	}
	must(t, c.SetBackend(api, 1, "alive"))
	srv.Advance(2 * time.Second)
	if got := poll(); got != health.Up {
		t.Errorf("one server back: %v, want up", got)
	}

	must(t, c.Restart(3*time.Second, false))
	if got := poll(); got != health.Failed {
		t.Errorf("restarting: %v, want failed", got)
	}
	srv.Advance(3 * time.Second)
	if got := poll(); got != health.Up {
		t.Errorf("after the restart: %v, want up", got)
	}

	a, err := c.Accounting()
	if err != nil {
		t.Fatal(err)
	}
	if tot := a.Total(); tot.Data.Requests != 2 || tot.Get.Requests < 4 || len(a.Workers) != 2 {
		t.Errorf("accounting %+v, want 2 data-path requests, at least 4 GETs, 2 workers", a)
	}
	if l := a.DataLatency; l.Count != 2 || l.Sampled != 2 || l.P99 > l.Max {
		t.Errorf("data latency %+v, want 2 requests", l)
	}
	must(t, c.ResetAccounting())
	if a, err := c.Accounting(); err != nil || a.Total().Data.Requests != 0 || a.DataLatency.Count != 0 {
		t.Errorf("after reset: %+v (%v)", a.Total(), err)
	}
	must(t, c.Bulk(3, 1))
	if cfg := srv.Config(apisix.Ref{Type: "upstreams", ID: "3"}); len(cfg) != 1 || cfg[0] == srv.Config(api)[0] {
		t.Errorf("bulk upstream 3: %+v, want one node of its own", cfg)
	}
	must(t, c.SetUpstreamNodes(api, "192.0.2.9:80"))
	if cfg := srv.Config(api); len(cfg) != 1 || cfg[0].IP != "192.0.2.9" || cfg[0].Port != 80 {
		t.Errorf("nodes set: %+v", cfg)
	}

	for _, bad := range []struct{ method, path string }{
		{"POST", "/backends/upstreams/api?state=zombie"},
		{"POST", "/backends/upstreams/api?state=dead&node=7"},
		{"POST", "/backends/upstreams/nope?state=dead"},
		{"POST", "/backend?addr=10.0.0.1&state=dead"},
		{"PUT", "/upstreams/upstreams/api?nodes=10.0.0.1:99999"},
		{"PUT", "/upstreams/bogus/api?count=1"},
		{"PUT", "/bulk?count=0"},
		{"PUT", "/routes/r2?ref=api"},
		{"POST", "/restart?down=soon"},
		{"POST", "/restart?cold=maybe"},
		{"GET", "/transitions?ref=nope"},
	} {
		if err := c.do(bad.method, bad.path); err == nil {
			t.Errorf("%s %s: accepted", bad.method, bad.path)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
