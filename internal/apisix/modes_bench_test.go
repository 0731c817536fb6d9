package apisix_test

import (
	"context"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// BenchmarkPoll1000Modes is BenchmarkPoll10000 at 1,000 upstreams, the
// size of the 1 % idle-CPU target (issue 15): what the default poll mode
// costs there.
func BenchmarkPoll1000Modes(b *testing.B) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	_, keys := manyUpstreams(srv, 1000)
	for _, mode := range []apisix.Mode{apisix.ModePerUpstream, apisix.ModeList, apisix.ModeAuto} {
		b.Run(string(mode), func(b *testing.B) {
			c := newClient(b, ts.URL, apisix.Options{Mode: mode, Timeout: time.Minute})
			us := ups(keys...)
			c.Poll(context.Background(), us) // open the connections outside the timing
			reqs := srv.Requests()
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if r := c.Poll(context.Background(), us)[keys[len(keys)-1]]; r.Verdict != health.Up {
					b.Fatalf("got %v, err %v", r.Verdict, r.Err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(srv.Requests()-reqs)/float64(b.N), "requests/op")
		})
	}
}
