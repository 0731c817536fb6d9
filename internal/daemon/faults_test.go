package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/config"
)

// apiRig runs the daemon against the real control-API client and the fake
// APISIX server, for one VIP on /apisix/upstreams/api.
type apiRig struct {
	*rig
	srv *apisixtest.Server
	ref apisix.Ref
	url string
}

// useTimeout gives the daemon a client with another apisix_timeout: the
// client bounds each poll itself, as in production, where a reload that
// changes the timeout builds a new client.
func (r *apiRig) useTimeout(t *testing.T, timeout time.Duration) {
	t.Helper()
	r.useClient(t, apisix.Options{Timeout: timeout})
}

// useClient gives the daemon a client with opts.
func (r *apiRig) useClient(t *testing.T, opts apisix.Options) {
	t.Helper()
	client, err := apisix.NewClient(r.url, opts)
	if err != nil {
		t.Fatal(err)
	}
	if old, ok := r.d.health.(*apisix.Client); ok {
		old.CloseIdleConnections()
	}
	r.d.cfg.Timeout = opts.Timeout
	r.d.health = client
}

// newAPIRigTimeout is an apiRig whose client has apisix_timeout timeout: a
// short one keeps the stall cases quick, a long one keeps good polls (and
// big bodies) from failing on a loaded machine.
func newAPIRigTimeout(t *testing.T, policy config.Action, rise, fall int, timeout time.Duration) *apiRig {
	t.Helper()
	srv := apisixtest.New()
	ts := srv.Start()
	t.Cleanup(srv.Close)
	cfg := seed(policy)
	cfg.Timeout = timeout
	cfg.VIPs = []config.VIP{vipCfg("10.0.0.100/32", config.All, api)}
	cfg.VIPs[0].Rise, cfg.VIPs[0].Fall = rise, fall
	client, err := apisix.NewClient(ts.URL, apisix.Options{Timeout: cfg.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	log.Level = logrus.DebugLevel
	r := &rig{link: newFakeLink(), clock: &clock{t: time.Unix(1_700_000_000, 0)}, logs: hook}
	r.d = New(cfg, Deps{Health: client, Announcer: r.link, Log: log, Now: r.clock.now})
	ref := apisix.Ref{Type: "upstreams", ID: "api"}
	srv.SetNodes(ref, apisixtest.Node{IP: "192.0.2.1", Port: 80, Status: apisixtest.Healthy}, apisixtest.Node{IP: "192.0.2.2", Port: 80, Status: apisixtest.Healthy})
	return &apiRig{rig: r, srv: srv, ref: ref, url: ts.URL}
}

// faultDeadline is apisix_timeout while TestControlAPIFaults's server
// stalls or sends a slow body: those fail a poll at the deadline, so it is
// tiny. That cannot flake: a stall never ends and a slow body takes
// seconds, so however soon or late the deadline comes the poll fails, and
// fails at it. Every other fault, and the good polls around them, have a
// generous one, so that each fault fails for its own reason and a loaded
// machine cannot fail a good poll.
const faultDeadline = time.Millisecond

// TestControlAPIFaults: every kind of broken answer is a failed poll; the
// policy acts after max_failed_polls exactly; one warning per change, not
// one per poll; the first good poll ends it.
func TestControlAPIFaults(t *testing.T) {
	faults := []apisixtest.Fault{
		apisixtest.Refuse, apisixtest.Stall, apisixtest.Status500, apisixtest.Status502, apisixtest.Status503,
		apisixtest.Garbage, apisixtest.HTMLNotFound, apisixtest.Truncated, apisixtest.Slow, apisixtest.Oversize,
	}
	for _, f := range faults {
		for _, policy := range []config.Action{config.Withdraw, config.Announce} {
			t.Run(f.String()+"/"+string(policy), func(t *testing.T) {
				r := newAPIRigTimeout(t, policy, 1, 1, 30*time.Second)
				r.tick(t)
				r.expect(t, "10.0.0.100")
				r.srv.SetGlobalFault(f)
				switch f {
				case apisixtest.Stall, apisixtest.Slow:
					r.useTimeout(t, faultDeadline) // they fail at the deadline
				case apisixtest.Oversize:
					// It fails at a small limit as at the default one,
					// without six polls reading 4 MiB each.
					r.useClient(t, apisix.Options{Timeout: 30 * time.Second, MaxBodyBytes: 64 << 10})
				}
				for i := 1; i <= 5; i++ {
					r.tick(t)
					want := "10.0.0.100"
					if policy == config.Withdraw && i >= 3 {
						want = ""
					}
					r.expect(t, want)
				}
				st := r.d.Status()
				if st.ControlAPI.ConsecutiveFailedPolls != 5 || st.VIPs[0].FailedPolls != 5 {
					t.Errorf("failed polls: api %d, vip %d; want 5", st.ControlAPI.ConsecutiveFailedPolls, st.VIPs[0].FailedPolls)
				}
				if n := r.countFor(api, "cannot be read"); n != 1 {
					t.Errorf("5 failed polls logged %d warnings, want 1", n)
				}
				r.srv.SetGlobalFault(apisixtest.NoFault)
				r.srv.Release()
				r.useTimeout(t, 30*time.Second)
				r.tick(t)
				r.expect(t, "10.0.0.100")
				if st := r.d.Status(); st.ControlAPI.ConsecutiveFailedPolls != 0 {
					t.Errorf("a good poll did not end the run: %+v", st.ControlAPI)
				}
			})
		}
	}
}

func TestControlAPIOddBodies(t *testing.T) {
	r := newAPIRigTimeout(t, config.Withdraw, 1, 1, 30*time.Second)
	r.tick(t)
	// A flood of nodes, one of them healthy: up.
	nodes := make([]apisixtest.Node, 20000)
	for i := range nodes {
		nodes[i] = apisixtest.Node{IP: "192.0.2.1", Port: 1000 + i, Status: apisixtest.Unhealthy}
	}
	nodes[12345].Status = apisixtest.Healthy
	r.srv.SetNodes(r.ref, nodes...)
	r.tick(t)
	r.expect(t, "10.0.0.100")
	if st := r.d.Status(); st.VIPs[0].Upstreams[0].Nodes != 20000 || st.VIPs[0].Upstreams[0].Healthy != 1 {
		t.Errorf("upstream = %+v", st.VIPs[0].Upstreams[0])
	}
	// Unknown statuses count as not healthy: down, not failed.
	r.srv.SetAllStatus(r.ref, "wobbly")
	r.tick(t)
	r.expect(t, "")
	if st := r.d.Status(); st.VIPs[0].Upstreams[0].Verdict != "down" {
		t.Errorf("unknown statuses: verdict %q, want down", st.VIPs[0].Upstreams[0].Verdict)
	}
}

// TestFlappingUpstream: a node list that flips every poll moves a VIP with
// rise/fall 1 every poll, and never moves one with rise/fall 2; either
// way the log holds one line per actual change.
func TestFlappingUpstream(t *testing.T) {
	for _, hyst := range []int{1, 2} {
		// Every poll must succeed: the timeout only bounds a failing run.
		r := newAPIRigTimeout(t, config.Withdraw, hyst, hyst, 30*time.Second)
		r.link.do(func(l *fakeLink) { l.addrs[r.d.cfg.VIPs[0].Address] = true }) // announced before rhi started
		r.tick(t)
		status := []string{apisixtest.Unhealthy, apisixtest.Healthy}
		moves := 0
		prev := r.link.text()
		for i := 0; i < 10; i++ {
			r.srv.SetAllStatus(r.ref, status[i%2])
			r.tick(t)
			if now := r.link.text(); now != prev {
				moves++
				prev = now
			}
		}
		want := map[int]int{1: 10, 2: 0}[hyst]
		if moves != want {
			t.Errorf("rise/fall %d: VIP moved %d times in 10 flapping polls, want %d", hyst, moves, want)
		}
		if n := r.count(logrus.InfoLevel, "withdrawing") + r.count(logrus.InfoLevel, "announcing"); n != want {
			t.Errorf("rise/fall %d: %d announce/withdraw lines, want %d", hyst, n, want)
		}
		if n := r.countFor(api, "upstream health changed"); n != 11 {
			t.Errorf("rise/fall %d: %d upstream lines for 11 verdicts, want 11", hyst, n)
		}
	}
}

// TestStalledAPIDoesNotStallTheLoop: a poll never takes longer than
// apisix_timeout, whatever the server does.
func TestStalledAPIDoesNotStallTheLoop(t *testing.T) {
	r := newAPIRigTimeout(t, config.Withdraw, 1, 1, faultDeadline)
	r.srv.SetGlobalFault(apisixtest.Stall)
	done := make(chan struct{})
	go func() {
		r.d.tick(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("a tick against a stalled API did not return within the poll deadline (%v) plus slack", faultDeadline)
	}
	if st := r.d.Status(); !strings.Contains(st.VIPs[0].Upstreams[0].Error, "deadline") && !strings.Contains(st.VIPs[0].Upstreams[0].Error, "timeout") {
		t.Errorf("stall error = %q", st.VIPs[0].Upstreams[0].Error)
	}
}
