package fakeapi

import (
	"context"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// TestRunLoad sends a counted load, back to back, over three connections
// (three workers), and counts what came back.
func TestRunLoad(t *testing.T) {
	srv := apisixtest.NewWith(apisixtest.Options{Workers: 3})
	ts := srv.StartData()
	defer srv.Close()
	api := apisix.Ref{Type: "upstreams", ID: "api"}
	srv.SetUpstream(api, apisixtest.Node{IP: "10.0.0.1", Port: 80})
	srv.SetRoute("1", apisixtest.Route{Host: "api.example", Ref: api})

	res, err := RunLoad(context.Background(), Load{URL: ts.URL + "/x", Host: "api.example", Conns: 3, Count: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Latencies) != 30 || res.Statuses[200] != 30 || res.Errors != 0 {
		t.Errorf("%v, want 30 answered 200", res)
	}
	if res.Quantile(0) > res.Quantile(0.5) || res.Quantile(0.5) > res.Quantile(1) || res.Quantile(1) <= 0 {
		t.Errorf("quantiles out of order: %v", res)
	}
	a := srv.Accounting()
	for _, w := range a.Workers {
		if w.Data.Requests != 10 {
			t.Errorf("worker %d served %d, want 10 (one connection each)", w.Worker, w.Data.Requests)
		}
	}

	srv.SetBackends(api, apisixtest.Dead)
	res, err = RunLoad(context.Background(), Load{URL: ts.URL + "/x", Host: "api.example", Count: 4})
	if err != nil || res.Statuses[502] != 4 {
		t.Errorf("dead servers: %v (%v), want 4 answered 502", res, err)
	}
	if _, err := RunLoad(context.Background(), Load{URL: ts.URL}); err == nil {
		t.Error("a load without an end: no error")
	}
	if (LoadResult{}).Quantile(0.99) != 0 {
		t.Error("quantile of nothing is not 0")
	}
	// A load cut short by its context ends without error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunLoad(ctx, Load{URL: ts.URL, Rate: 10, Duration: time.Hour}); err != nil {
		t.Errorf("cancelled load: %v", err)
	}
}
