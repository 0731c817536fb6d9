package apisixtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

var t0 = time.Date(2026, 12, 4, 14, 12, 0, 0, time.UTC)

// nodeView is one node of a 3.3+ body, as a test compares it.
type nodeView struct {
	Status    string   `json:"status"`
	Port      int      `json:"port"`
	PurgeTime *float64 `json:"purge_time"`
	Counter   struct {
		Success        int `json:"success"`
		HTTPFailure    int `json:"http_failure"`
		TCPFailure     int `json:"tcp_failure"`
		TimeoutFailure int `json:"timeout_failure"`
	} `json:"counter"`
}

// short is "status s/h/t/o" for a node: its status and counters.
func (n nodeView) short() string {
	c := n.Counter
	return fmt.Sprintf("%s %d/%d/%d/%d", n.Status, c.Success, c.HTTPFailure, c.TCPFailure, c.TimeoutFailure)
}

// nodesOf reads ref's nodes from the control API, directly from the
// handler (no connection: each call gets the next worker).
func nodesOf(t *testing.T, s *apisixtest.Server, ref apisix.Ref) []nodeView {
	t.Helper()
	rec := serve(s, "/v1/healthcheck/"+ref.Type+"/"+ref.ID)
	if rec.status != 200 {
		t.Fatalf("GET %s: HTTP %d %s", ref, rec.status, rec.body)
	}
	var body struct {
		Nodes json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(rec.body, &body); err != nil {
		t.Fatalf("%s: %v", rec.body, err)
	}
	if string(body.Nodes) == "{}" {
		return nil
	}
	var nodes []nodeView
	if err := json.Unmarshal(body.Nodes, &nodes); err != nil {
		t.Fatalf("%s: %v", rec.body, err)
	}
	return nodes
}

// shorts is every node's short form, joined by ", "; "{}" for none.
func shorts(nodes []nodeView) string {
	if len(nodes) == 0 {
		return "{}"
	}
	var s []string
	for _, n := range nodes {
		s = append(s, n.short())
	}
	return strings.Join(s, ", ")
}

// serve answers one request on the handler.
func serve(h http.Handler, path string) response {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://fake"+path, nil)
	h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()}
}

// TestStateMachine steps one node through every kind of failure with
// APISIX's default thresholds (successes 2, tcp_failures 2, http_failures
// 5, timeouts 3), one active check per second from the checker's creation.
func TestStateMachine(t *testing.T) {
	type step struct {
		backend apisixtest.Backend // set just before the check
		want    string             // after the check: status success/http/tcp/timeout
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"dead, then back", []step{
			{apisixtest.Alive, "healthy 0/0/0/0"},
			{apisixtest.Dead, "mostly_healthy 0/0/1/0"},
			{apisixtest.Dead, "unhealthy 0/0/2/0"},
			{apisixtest.Dead, "unhealthy 0/0/2/0"}, // the counter holds at the threshold
			{apisixtest.Alive, "mostly_unhealthy 1/0/0/0"},
			{apisixtest.Alive, "healthy 2/0/0/0"},
			{apisixtest.Alive, "healthy 2/0/0/0"}, // and so does this one
		}},
		{"http 500 needs five", []step{
			{apisixtest.HTTPError, "mostly_healthy 0/1/0/0"},
			{apisixtest.HTTPError, "mostly_healthy 0/2/0/0"},
			{apisixtest.HTTPError, "mostly_healthy 0/3/0/0"},
			{apisixtest.HTTPError, "mostly_healthy 0/4/0/0"},
			{apisixtest.HTTPError, "unhealthy 0/5/0/0"},
		}},
		{"failures of different kinds count apart", []step{
			{apisixtest.HTTPError, "mostly_healthy 0/1/0/0"},
			{apisixtest.Dead, "mostly_healthy 0/1/1/0"},
			{apisixtest.Dead, "unhealthy 0/1/2/0"},
		}},
		{"a success from mostly_healthy clears failures but is not healthy yet", []step{
			{apisixtest.Dead, "mostly_healthy 0/0/1/0"},
			{apisixtest.Alive, "mostly_healthy 1/0/0/0"},
			{apisixtest.Alive, "healthy 2/0/0/0"},
		}},
		{"a failure from mostly_unhealthy clears the success", []step{
			{apisixtest.Dead, "mostly_healthy 0/0/1/0"},
			{apisixtest.Dead, "unhealthy 0/0/2/0"},
			{apisixtest.Alive, "mostly_unhealthy 1/0/0/0"},
			{apisixtest.Dead, "mostly_unhealthy 0/0/1/0"},
			{apisixtest.Dead, "unhealthy 0/0/2/0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := apisixtest.NewManualClock(t0)
			s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{}})
			s.SetUpstream(api, n("10.0.0.1", 80, ""))
			if got := shorts(nodesOf(t, s, api)); got != "healthy 0/0/0/0" {
				t.Fatalf("new checker: %s, want healthy 0/0/0/0", got)
			}
			for i, st := range tt.steps {
				s.SetBackend("10.0.0.1", 80, st.backend)
				s.Advance(900 * time.Millisecond)
				before := shorts(nodesOf(t, s, api))
				s.Advance(100 * time.Millisecond) // the check, a whole second after the last
				if got := shorts(nodesOf(t, s, api)); got != st.want {
					t.Errorf("check %d (%s): %s, want %s", i+1, st.backend, got, st.want)
				}
				if i > 0 && before != tt.steps[i-1].want {
					t.Errorf("before check %d: %s, want %s still", i+1, before, tt.steps[i-1].want)
				}
			}
		})
	}
}

// TestTimeouts: a backend that hangs fails each check when the check's
// timeout (1 s) ends, so three timeouts take four seconds.
func TestTimeouts(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{}})
	s.SetUpstream(api, n("10.0.0.1", 80, ""))
	s.SetBackend("10.0.0.1", 80, apisixtest.Hang)
	want := []string{
		"healthy 0/0/0/0",        // 1 s: the first check waits
		"mostly_healthy 0/0/0/1", // 2 s: it timed out; the second waits
		"mostly_healthy 0/0/0/2",
		"unhealthy 0/0/0/3",
		"unhealthy 0/0/0/3",
	}
	for i, w := range want {
		s.Advance(time.Second)
		if got := shorts(nodesOf(t, s, api)); got != w {
			t.Errorf("at %d s: %s, want %s", i+1, got, w)
		}
	}
}

// TestThresholdsAndIntervals: configured thresholds and intervals are
// used, and unhealthy nodes are checked at their own interval.
func TestThresholdsAndIntervals(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{
		HealthyInterval: 2 * time.Second, UnhealthyInterval: 5 * time.Second, TCPFailures: 1, Successes: 1,
	}})
	s.SetUpstream(api, n("10.0.0.1", 80, ""))
	s.SetBackend("10.0.0.1", 80, apisixtest.Dead)
	s.Advance(1900 * time.Millisecond)
	if got := shorts(nodesOf(t, s, api)); got != "healthy 0/0/0/0" {
		t.Errorf("at 1.9 s: %s", got)
	}
	s.Advance(100 * time.Millisecond)
	if got := shorts(nodesOf(t, s, api)); got != "unhealthy 0/0/1/0" {
		t.Errorf("at 2 s: %s, want unhealthy after one TCP failure", got)
	}
	s.SetBackend("10.0.0.1", 80, apisixtest.Alive)
	s.Advance(2900 * time.Millisecond) // 4.9 s: the unhealthy timer started at 0
	if got := shorts(nodesOf(t, s, api)); got != "unhealthy 0/0/1/0" {
		t.Errorf("at 4.9 s: %s, want no check yet", got)
	}
	s.Advance(100 * time.Millisecond)
	if got := shorts(nodesOf(t, s, api)); got != "healthy 1/0/0/0" {
		t.Errorf("at 5 s: %s, want healthy after one success", got)
	}
}

// MovingReads counts the one-resource answers that showed a node between
// states: a reader inside the mostly_healthy window is counted, one before
// or after it is not.
func TestMovingReads(t *testing.T) {
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{Clock: clk, Checks: &apisixtest.Checks{}})
	s.SetUpstream(api, n("10.0.0.1", 80, ""), n("10.0.0.2", 80, ""))
	for _, st := range []struct {
		backend apisixtest.Backend
		want    string
		moving  int
	}{
		{apisixtest.Alive, "healthy 0/0/0/0, healthy 0/0/0/0", 0},
		{apisixtest.Dead, "mostly_healthy 0/0/1/0, mostly_healthy 0/0/1/0", 1},
		{apisixtest.Dead, "unhealthy 0/0/2/0, unhealthy 0/0/2/0", 1},
	} {
		s.SetBackend("10.0.0.1", 80, st.backend)
		s.SetBackend("10.0.0.2", 80, st.backend)
		s.Advance(time.Second)
		if got := shorts(nodesOf(t, s, api)); got != st.want {
			t.Fatalf("nodes %s, want %s", got, st.want)
		}
		if got := s.MovingReads(api); got != st.moving {
			t.Errorf("after reading %s: %d moving reads, want %d", st.want, got, st.moving)
		}
	}
	if got := s.MovingReads(web); got != 0 {
		t.Errorf("%d moving reads of a resource never read", got)
	}
}

// A moving read is an answer its reader could see a node between states
// in: one cut short (Truncated) shows the reader nothing and is not
// counted; a whole one, stalled first or not, is.
func TestMovingReadsCountWholeAnswersOnly(t *testing.T) {
	for _, tt := range []struct {
		fault apisixtest.Fault
		want  int
	}{
		{apisixtest.NoFault, 1},
		{apisixtest.Truncated, 0},
	} {
		s := apisixtest.New()
		s.SetNodes(api, n("10.0.0.1", 80, apisixtest.MostlyHealthy))
		s.SetFault(api, tt.fault)
		serve(s, "/v1/healthcheck/upstreams/api")
		if got := s.MovingReads(api); got != tt.want {
			t.Errorf("fault %v: %d moving reads, want %d", tt.fault, got, tt.want)
		}
	}
}
