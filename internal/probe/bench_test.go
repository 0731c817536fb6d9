package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// BenchmarkProbe1000VIPs10Targets is one poll of 1,000 VIPs sharing 10
// distinct probes: 10 requests over kept-alive loopback connections.
func BenchmarkProbe1000VIPs10Targets(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	specs := make([]Spec, 1000)
	for i := range specs {
		s := Defaults()
		s.URL = srv.URL + "/healthz"
		s.Host = "svc" + strconv.Itoa(i%10) + ".example.com"
		specs[i] = s
	}
	p := New(Options{})
	defer p.CloseIdleConnections()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for i, r := range p.Probe(ctx, specs) {
			if r.Outcome != Up {
				b.Fatalf("spec %d: %+v (err %v)", i, r, r.Err)
			}
		}
	}
}

// BenchmarkGroupAndJudge1000VIPs is the prober's own work for one poll of
// 1,000 VIPs sharing 10 probes, the HTTP exchanges left out: finding the
// distinct targets and judging every VIP from its target's answer.
func BenchmarkGroupAndJudge1000VIPs(b *testing.B) {
	specs := make([]Spec, 1000)
	for i := range specs {
		s := Defaults()
		s.URL = "https://127.0.0.1:9443/healthz"
		s.Host = "svc" + strconv.Itoa(i%10) + ".example.com"
		specs[i] = s
	}
	b.ReportAllocs()
	for b.Loop() {
		calls, idx := group(specs)
		if len(calls) != 10 {
			b.Fatalf("%d targets, want 10", len(calls))
		}
		for i := range calls {
			calls[i].status = 200
		}
		for i, s := range specs {
			if r := judge(s, &calls[idx[i]]); r.Outcome != Up {
				b.Fatalf("spec %d: %+v", i, r)
			}
		}
	}
}
