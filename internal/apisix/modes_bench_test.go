package apisix_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

// BenchmarkPoll1000Modes is BenchmarkPoll10000 at 1,000 upstreams, the
// size of the 1 % idle-CPU target: what the default poll mode
// costs there.
func BenchmarkPoll1000Modes(b *testing.B) { benchPollModes(b, 1000) }

// BenchmarkPollListClient10000 is the client's share of a poll of 10,000
// upstreams in the default mode: the list is rendered once by the fake and
// then served from memory, so the server's share (encoding the list) is
// left out, all but writing the bytes to the socket.
func BenchmarkPollListClient10000(b *testing.B) {
	benchPollListClient(b, func(c *apisix.Client, us []health.Upstream) func() health.Snapshot {
		return func() health.Snapshot { return c.Poll(context.Background(), us) }
	})
}

// BenchmarkPollPlanListClient10000 is BenchmarkPollListClient10000 with
// the keys planned once, as the daemon polls them.
func BenchmarkPollPlanListClient10000(b *testing.B) {
	benchPollListClient(b, func(c *apisix.Client, us []health.Upstream) func() health.Snapshot {
		plan := apisix.NewPlan(us)
		return func() health.Snapshot { s, _ := c.PollPlan(context.Background(), plan, apisix.PollOptions{}); return s }
	})
}

func benchPollListClient(b *testing.B, poller func(*apisix.Client, []health.Upstream) func() health.Snapshot) {
	srv := apisixtest.New()
	fake := srv.Start()
	_, keys := manyUpstreams(srv, 10000)
	resp, err := http.Get(fake.URL + "/v1/healthcheck")
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("list: HTTP %d, %v", resp.StatusCode, err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer ts.Close()
	c := newClient(b, ts.URL, apisix.Options{Mode: apisix.ModeAuto, Timeout: time.Minute})
	poll := poller(c, ups(keys...))
	poll() // open the connection outside the timing
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		if r := poll()[keys[len(keys)-1]]; r.Verdict != health.Up {
			b.Fatalf("got %v, err %v", r.Verdict, r.Err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}
