package apisixtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// newConn GETs path on a connection of its own: the server hands each new
// connection to the next worker, round-robin.
func newConn(t *testing.T, base, path string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestLazyChecker: a checker exists only once a data-path request asked
// for it and the worker's checker manager ran; it then reports every node
// healthy with zero counters, dead or not, until its first check a second
// later, and unhealthy one check after that.
func TestLazyChecker(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{Lazy: true}})
	data := s.StartData()
	defer s.Close()
	s.SetUpstream(api, n("10.0.0.1", 80, ""), n("10.0.0.2", 80, ""))
	s.SetBackends(api, apisixtest.Dead)
	s.Advance(5 * time.Second)
	if got := shorts(nodesOf(t, s, api)); got != "{}" {
		t.Fatalf("no traffic, 5 s: %s, want {}", got)
	}
	// The manager runs every second from the start: at 5 s, 6 s, …
	s.Advance(500 * time.Millisecond)
	if got := newConn(t, data.URL, "/upstreams/api/x"); got != http.StatusBadGateway {
		t.Errorf("proxied to dead nodes: HTTP %d, want 502", got)
	}
	s.Advance(400 * time.Millisecond)
	if got := shorts(nodesOf(t, s, api)); got != "{}" {
		t.Errorf("asked, before the manager's run: %s, want {}", got)
	}
	want := []string{
		"healthy 0/0/0/0, healthy 0/0/0/0",               // 6 s: created
		"mostly_healthy 0/0/1/0, mostly_healthy 0/0/1/0", // 7 s: first check
		"unhealthy 0/0/2/0, unhealthy 0/0/2/0",           // 8 s
	}
	for i, w := range want {
		s.Advance(100 * time.Millisecond)
		if got := shorts(nodesOf(t, s, api)); got != w {
			t.Errorf("%d s: %s, want %s", 6+i, got, w)
		}
		s.Advance(900 * time.Millisecond)
	}
	var got []string
	for _, tr := range s.Transitions(api) {
		got = append(got, fmt.Sprintf("%v %s:%d %q→%q", tr.Time.Sub(t0), tr.IP, tr.Port, tr.From, tr.To))
	}
	wantTr := []string{
		`6s 10.0.0.1:80 ""→"healthy"`, `6s 10.0.0.2:80 ""→"healthy"`,
		`7s 10.0.0.1:80 "healthy"→"mostly_healthy"`, `7s 10.0.0.2:80 "healthy"→"mostly_healthy"`,
		`8s 10.0.0.1:80 "mostly_healthy"→"unhealthy"`, `8s 10.0.0.2:80 "mostly_healthy"→"unhealthy"`,
	}
	if !slices.Equal(got, wantTr) {
		t.Errorf("transitions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantTr, "\n"))
	}
	if all := s.Transitions(apisix.Ref{}); len(all) != len(wantTr) {
		t.Errorf("all transitions: %d, want %d", len(all), len(wantTr))
	}
}

// TestWorkerDivergence: with two workers, a checker that only the worker
// without the probe lock has is never checked, so it says healthy for
// dead nodes for ever, while the data path answers 502.
func TestWorkerDivergence(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Workers: 2, Checks: &apisixtest.Checks{Lazy: true}})
	data := s.StartData()
	defer s.Close()
	a, b := apisix.Ref{Type: "upstreams", ID: "a"}, apisix.Ref{Type: "upstreams", ID: "b"}
	s.SetUpstream(a, n("10.0.0.1", 80, ""))
	s.SetUpstream(b, n("10.0.0.2", 80, ""))
	newConn(t, data.URL, "/upstreams/a") // worker 1
	newConn(t, data.URL, "/upstreams/b") // worker 2
	s.Advance(time.Second)
	for _, tt := range []struct {
		ref  apisix.Ref
		have []int
	}{{a, []int{1}}, {b, []int{2}}} {
		have, probing := s.CheckerWorkers(tt.ref)
		if !slices.Equal(have, tt.have) || probing != 1 {
			t.Errorf("%s: checkers in workers %v, probing %d; want %v, 1", tt.ref, have, probing, tt.have)
		}
	}
	s.SetBackend("10.0.0.1", 80, apisixtest.Dead)
	s.SetBackend("10.0.0.2", 80, apisixtest.Dead)
	s.Advance(10 * time.Second)
	if got := shorts(nodesOf(t, s, a)); got != "unhealthy 0/0/2/0" {
		t.Errorf("a, checked by worker 1: %s", got)
	}
	// Any worker answers the same: 3.3+ reads shared memory.
	for range 2 {
		if got := shorts(nodesOf(t, s, b)); got != "healthy 0/0/0/0" {
			t.Errorf("b, only in worker 2: %s, want healthy for ever", got)
		}
	}
	if got := newConn(t, data.URL, "/upstreams/b"); got != http.StatusBadGateway {
		t.Errorf("proxied to b: HTTP %d, want 502", got)
	}
	// Once worker 1 gets a request for b too, it checks it.
	newConn(t, data.URL, "/upstreams/b")
	s.Advance(3 * time.Second)
	if got := shorts(nodesOf(t, s, b)); got != "unhealthy 0/0/2/0" {
		t.Errorf("b, now in worker 1 too: %s", got)
	}
}

// TestPinnedProbingWorker: ProbingWorker chooses the lock holder.
func TestPinnedProbingWorker(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Workers: 3, Checks: &apisixtest.Checks{Lazy: true, ProbingWorker: 3}})
	data := s.StartData()
	defer s.Close()
	s.SetUpstream(api, n("10.0.0.1", 80, ""))
	s.SetBackends(api, apisixtest.Dead)
	newConn(t, data.URL, "/upstreams/api") // worker 1
	s.Advance(5 * time.Second)
	if have, probing := s.CheckerWorkers(api); !slices.Equal(have, []int{1}) || probing != 3 {
		t.Errorf("checkers %v, probing %d; want [1], 3", have, probing)
	}
	if got := shorts(nodesOf(t, s, api)); got != "healthy 0/0/0/0" {
		t.Errorf("%s, want never checked", got)
	}
}

// TestV2WorkerViews: up to APISIX 3.2 a worker reports only its own
// checkers, so the answer depends on the worker.
func TestV2WorkerViews(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Workers: 2, Checks: &apisixtest.Checks{Lazy: true}})
	ts := s.Start()
	defer s.Close()
	s.SetUpstream(api, n("10.0.0.1", 80, ""))
	mustOK(t, s.SetFormat(api, apisixtest.V2))
	serve(s.DataPath(), "/upstreams/api") // no connection: worker 1
	s.Advance(time.Second)
	got := []int{newConn(t, ts.URL, "/v1/healthcheck/upstreams/api"), newConn(t, ts.URL, "/v1/healthcheck/upstreams/api")}
	if !slices.Equal(got, []int{200, 404}) && !slices.Equal(got, []int{404, 200}) {
		t.Errorf("two workers answered %v, want one 200 and one 404", got)
	}
}

// TestPurgeAfterSwap: changing an upstream's nodes lists the dropped one
// with a purge_time for PurgeDelay, until the cleanup timer drops it; the
// kept node keeps its state.
func TestPurgeAfterSwap(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		name := map[bool]string{false: "eager", true: "lazy"}[lazy]
		t.Run(name, func(t *testing.T) {
			clk := apisixtest.NewManualClock(t0)
			s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{Lazy: lazy}})
			data := s.StartData()
			defer s.Close()
			s.SetUpstream(api, n("10.0.0.1", 80, ""), n("10.0.0.2", 80, ""))
			newConn(t, data.URL, "/upstreams/api")
			s.SetBackend("10.0.0.1", 80, apisixtest.Dead)
			s.Advance(3 * time.Second)
			if got := shorts(nodesOf(t, s, api)); got != "unhealthy 0/0/2/0, healthy 0/0/0/0" {
				t.Fatalf("before the swap: %s", got)
			}
			swap := clk.Now()
			s.SetUpstream(api, n("10.0.0.1", 80, ""), n("10.0.0.3", 80, ""))
			if lazy {
				// The manager retires the old checker; a request asks
				// for the new one, built at the manager's next run.
				s.Advance(time.Second)
				nodes := nodesOf(t, s, api)
				if len(nodes) != 2 || nodes[0].PurgeTime == nil || nodes[1].PurgeTime == nil {
					t.Fatalf("old checker retired: %s, want both nodes purging", shorts(nodes))
				}
				newConn(t, data.URL, "/upstreams/api")
				s.Advance(time.Second)
			}
			nodes := nodesOf(t, s, api)
			if got := shorts(nodes); got != "unhealthy 0/0/2/0, healthy 0/0/0/0, healthy 0/0/0/0" {
				t.Fatalf("after the swap: %s", got)
			}
			if nodes[0].PurgeTime != nil || nodes[1].PurgeTime == nil || nodes[2].PurgeTime != nil {
				t.Errorf("purge times %v %v %v, want only the dropped node's", nodes[0].PurgeTime, nodes[1].PurgeTime, nodes[2].PurgeTime)
			}
			retired := swap
			if lazy {
				retired = swap.Add(time.Second) // the manager's run
			}
			if want := float64(retired.Add(10*time.Second).UnixMilli()) / 1000; nodes[1].PurgeTime != nil && *nodes[1].PurgeTime != want {
				t.Errorf("purge_time %v, want %v", *nodes[1].PurgeTime, want)
			}
			// Dropped at the first cleanup run after its purge time.
			s.Advance(retired.Add(10 * time.Second).Sub(clk.Now()))
			s.Advance(2500 * time.Millisecond)
			if got := shorts(nodesOf(t, s, api)); got != "unhealthy 0/0/2/0, healthy 0/0/0/0" {
				t.Errorf("after the purge: %s", got)
			}
		})
	}
}

// dialRefused reports whether a connection to addr is refused.
func dialRefused(t *testing.T, addr string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return false
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want refused or connected", addr, err)
	}
	return true
}

// TestRestart: a restart refuses connections, closes open ones, and
// listens again on the same addresses when its time is up; warm, the
// state is kept; cold, checkers start again.
func TestRestart(t *testing.T) {
	for _, tt := range []struct {
		name       string
		cold, lazy bool
		want       string
	}{
		{"warm", false, false, "unhealthy 0/0/2/0"},
		{"cold", true, false, "healthy 0/0/0/0"},
		{"cold, lazy", true, true, "{}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := apisixtest.NewManualClock(t0)
			s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{Lazy: tt.lazy}})
			ts := s.Start()
			data := s.StartData()
			defer s.Close()
			s.SetUpstream(api, n("10.0.0.1", 80, ""))
			s.SetBackends(api, apisixtest.Dead)
			newConn(t, data.URL, "/upstreams/api")
			s.Advance(3 * time.Second)
			addr := ts.Listener.Addr().String()
			kept := &http.Client{Timeout: 5 * time.Second}
			if resp, err := kept.Get(ts.URL + "/v1/healthcheck"); err == nil {
				resp.Body.Close()
			}

			s.Restart(3*time.Second, tt.cold)
			if !s.Restarting() || !dialRefused(t, addr) || !dialRefused(t, data.Listener.Addr().String()) {
				t.Fatal("restarting: connections not refused")
			}
			if _, err := kept.Get(ts.URL + "/v1/healthcheck"); err == nil {
				t.Error("a kept connection still served during the restart")
			}
			s.Advance(2900 * time.Millisecond)
			if !dialRefused(t, addr) {
				t.Fatal("back before its time")
			}
			s.Advance(100 * time.Millisecond)
			if s.Restarting() || dialRefused(t, addr) || dialRefused(t, data.Listener.Addr().String()) {
				t.Fatalf("not back after 3 s (%v)", s.RestartErr())
			}
			if got := shorts(nodesOf(t, s, api)); got != tt.want {
				t.Errorf("after the restart: %s, want %s", got, tt.want)
			}
		})
	}
}
