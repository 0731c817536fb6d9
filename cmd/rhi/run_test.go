package main

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/daemon"

	"github.com/rhi-daemon/rhi/internal/statushttp"
)

// TestNewDaemonWiresPollsToMetrics: the daemon and its metrics refer to
// each other; the poll hook newDaemon gives the daemon reaches the metrics
// it returns, which /metrics then shows.
func TestNewDaemonWiresPollsToMetrics(t *testing.T) {
	cfg, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	deps := &daemon.Deps{}
	d, metrics := newDaemon(cfg, deps)
	if deps.OnPoll == nil {
		t.Fatal("the daemon is not told of polls")
	}
	deps.OnPoll(30*time.Millisecond, 0)
	deps.OnPoll(70*time.Millisecond, 1)
	rec := httptest.NewRecorder()
	statushttp.Handler(d, metrics, time.Now).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{"rhi_poll_duration_seconds_count 2\n", "rhi_poll_duration_seconds_sum 0.1\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
