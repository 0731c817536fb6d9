package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

var statusNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func statusSample() status.Status {
	ago := func(d time.Duration) time.Time { return statusNow.Add(-d) }
	return status.Status{
		Ready:     true,
		LastTick:  ago(1100 * time.Millisecond),
		Interface: status.InterfaceStatus{Name: "rhi0", Exists: true, Up: true, Foreign: []string{"192.0.2.7/32"}},
		ControlAPI: status.APIStatus{URL: "http://127.0.0.1:9090", LastPoll: ago(1200 * time.Millisecond),
			PollDuration: 12 * time.Millisecond, Upstreams: 5, Unreadable: 1, ConsecutiveFailedPolls: 2,
			PollInterval: time.Second, Timeout: 2 * time.Second, MaxFailedPolls: 3, LastSettled: ago(1188 * time.Millisecond)},
		Bird: status.BirdStatus{Enabled: true, Socket: "/run/bird/bird.ctl", LastCheck: ago(3 * time.Second), Agree: 2, Disagree: 1,
			Protocols: []router.ProtocolState{{Name: "peer_4", BGPState: "Established", Established: true}, {Name: "peer_6", State: "start", BGPState: "Active"}}},
		VIPs: []status.VIPStatus{
			{Address: "10.0.0.100/32", Condition: "all", Verdict: decide.Available, Reason: decide.ReasonHealthy, Desired: true, OnInterface: true,
				Since: ago(5 * time.Minute), Bird: &status.VIPConfirm{Agrees: true, Latency: 31 * time.Millisecond},
				Upstreams: []status.UpstreamStatus{{Key: "/apisix/upstreams/api", Verdict: "up"}}},
			{Address: "10.0.0.101/32", Condition: "all", Verdict: decide.Unknown, Reason: decide.ReasonUnknown, Desired: true, OnInterface: true,
				Since: ago(2 * time.Hour), FailedPolls: 2, Bird: &status.VIPConfirm{Agrees: false, Problem: "not exported to peer_4"},
				Upstreams: []status.UpstreamStatus{{Key: "/apisix/upstreams/auth", Verdict: "failed", Error: "GET /v1/healthcheck/upstreams/auth: HTTP 502"}, {Key: "/upstreams/admin", Verdict: "up"}}},
			{Address: "fd00::10/128", Condition: "any", Verdict: decide.Available, Reason: decide.ReasonHealthy, Drained: true,
				Since: ago(40 * time.Second), Bird: &status.VIPConfirm{Agrees: true},
				Upstreams: []status.UpstreamStatus{{Key: "/apisix/routes/web", Verdict: "no_checker"}}},
		},
	}
}

func TestStatusTableGolden(t *testing.T) {
	tests := []struct {
		name string
		st   status.Status
	}{
		{"status-sample", statusSample()},
		{"status-starting", status.Status{}},
		{"status-starting-dry-run", status.Status{DryRun: true}},
		{"status-dry-run-unhealthy", func() status.Status {
			s := statusSample()
			s.DryRun = true
			s.Interface.FailedWrites = 3
			s.Interface.Error = `vip "10.0.0.100/32": add: operation not permitted`
			return s
		}()},
		{"status-bird-away", func() status.Status {
			s := statusSample()
			s.Bird.Error = `bird: dial "/run/bird/bird.ctl": connect: no such file or directory` // what verify.Socket reports
			s.Bird.LastOK = statusNow.Add(-2 * time.Minute)
			for i := range s.VIPs {
				s.VIPs[i].Bird.Stale = true // what BIRD said two minutes ago
			}
			s.Interface.Exists = false
			s.Interface.Error = `interface "rhi0": no such interface`
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeStatus(&b, tt.st, statusNow)
			path := filepath.Join("testdata", tt.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("rhi status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusTableUnmanaged: unmanaged addresses get their own line, not
// the foreign one's "left alone".
func TestStatusTableUnmanaged(t *testing.T) {
	s := statusSample()
	s.Interface.Foreign = []string{"10.0.0.77/32", "192.0.2.1/24"}
	s.Interface.Unmanaged = []string{"10.0.0.77/32"}
	s.Interface.RecordError = `write ownership record: open /var/lib/rhi/.owned-1: read-only file system`
	var b bytes.Buffer
	writeStatus(&b, s, statusNow)
	for _, want := range []string{
		"foreign    192.0.2.1/24 (not rhi's, left alone)\n",
		"UNMANAGED  10.0.0.77/32 (neither configured nor put there by rhi: announced without a health check)\n",
		"record     CANNOT WRITE: write ownership record: open /var/lib/rhi/.owned-1: read-only file system\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("rhi status lacks %q:\n%s", want, b.String())
		}
	}
}

// TestStatusTableGuard: the fail-open guard's line says its rule, whether
// BIRD's view is known and whether the last-resort interface is missing;
// without the guard there is no line.
func TestStatusTableGuard(t *testing.T) {
	s := statusSample()
	var b bytes.Buffer
	writeStatus(&b, s, statusNow)
	if strings.Contains(b.String(), "guard ") {
		t.Errorf("a guard line without the guard:\n%s", b.String())
	}
	for _, tc := range []struct {
		fo   status.FailOpenStatus
		want string
	}{
		{status.FailOpenStatus{MinOtherSites: 1, HoldSeconds: 2, Known: true, LastAnswer: statusNow.Add(-time.Second), LastResortInterface: "rhi2", LastResortExists: true},
			"guard      min 1 other sites for 2s; view known, last answer 1s ago\n"},
		{status.FailOpenStatus{MinOtherSites: 2, HoldSeconds: 0.5, Error: "no ADD-PATH receive", LastResortInterface: "rhi2"},
			"guard      min 2 other sites for 500ms; view UNKNOWN (no failing VIP is withdrawn): no ADD-PATH receive; last resort rhi2 MISSING (a failing VIP stays where it is)\n"},
	} {
		s.FailOpen = &tc.fo
		b.Reset()
		writeStatus(&b, s, statusNow)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("rhi status lacks %q:\n%s", tc.want, b.String())
		}
	}
}

// TestStatusTableDegraded: a degraded VIP shows as such in WANT and IFACE,
// and one on the wrong interface of the two is marked.
func TestStatusTableDegraded(t *testing.T) {
	s := statusSample()
	s.VIPs = s.VIPs[:1]
	s.VIPs[0].Desired, s.VIPs[0].OnInterface, s.VIPs[0].OnDegraded, s.VIPs[0].Tier = true, true, true, decide.TierDegraded
	var b bytes.Buffer
	writeStatus(&b, s, statusNow)
	if !strings.Contains(b.String(), s.VIPs[0].Address+"  degraded  degraded  ") {
		t.Errorf("rhi status does not show the VIP degraded:\n%s", b.String())
	}
	s.VIPs[0].OnDegraded = false // still on the main interface
	b.Reset()
	writeStatus(&b, s, statusNow)
	if !strings.Contains(b.String(), s.VIPs[0].Address+"  degraded  present!  ") {
		t.Errorf("rhi status does not mark a degraded VIP still at full weight:\n%s", b.String())
	}
}
