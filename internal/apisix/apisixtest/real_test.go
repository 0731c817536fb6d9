package apisixtest_test

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
)

// TestRealLifecycle replays the run captured from a live APISIX 3.18
// (testdata/real-3.18: standalone mode, 2 workers, one route to upstream 1
// with two nodes, active checks every second with successes 1 and
// http_failures 2) and compares the fake's answer at each stage with the
// real one, field by field, along with what the data path answered.
func TestRealLifecycle(t *testing.T) {
	up1 := apisix.Ref{Type: "upstreams", ID: "1"}
	clk := apisixtest.NewManualClock(t0)
	s := apisixtest.NewWith(apisixtest.Options{
		Clock: clk, Workers: 2, Standalone: true,
		Checks: &apisixtest.Checks{Lazy: true, Successes: 1, HTTPFailures: 2},
	})
	s.SetChunked(true)
	api := s.Start()
	data := s.StartData()
	defer s.Close()
	s.SetUpstream(up1, n("127.0.0.1", 18081, ""), n("127.0.0.1", 18082, ""))
	s.SetRoute("1", apisixtest.Route{Path: "/", Ref: up1})

	proxied := func(want int) func(t *testing.T) {
		return func(t *testing.T) {
			if got := get(t, data.URL, "/").status; got != want {
				t.Errorf("proxied request: HTTP %d, want %d", got, want)
			}
		}
	}
	steps := []struct {
		name   string
		do     func(t *testing.T)
		after  time.Duration // then advance the clock
		bodies map[string]string
	}{
		{"before traffic", func(*testing.T) {}, 0, map[string]string{
			"/v1/healthcheck":             "00-list-before-traffic.json",
			"/v1/healthcheck/upstreams/1": "00-upstream1-before-traffic.json",
		}},
		// The first request makes its worker ask for a checker, which
		// the worker's checker manager creates within a second.
		{"first request", proxied(200), time.Second, map[string]string{
			"/v1/healthcheck":             "01-list-healthy.json",
			"/v1/healthcheck/upstreams/1": "01-upstream1-healthy.json",
		}},
		{"HTML", func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "real-3.18", "01-list-healthy.html"))
			if err != nil {
				t.Fatal(err)
			}
			got := get(t, api.URL, "/v1/healthcheck", "Accept", "text/html,application/xhtml+xml")
			if got.status != 200 || got.contentType != "text/html" || string(got.body) != string(want) {
				t.Errorf("HTML list: HTTP %d %q\n%s\nwant 200 text/html\n%s", got.status, got.contentType, got.body, want)
			}
		}, 0, nil},
		{"18082 killed, one check", func(*testing.T) { s.SetBackend("127.0.0.1", 18082, apisixtest.Dead) }, time.Second, map[string]string{
			"/v1/healthcheck/upstreams/1": "02a-upstream1-one-node-failing.json",
		}},
		{"18082 killed, two checks", proxied(200), time.Second, map[string]string{
			"/v1/healthcheck":             "02-list-one-down.json",
			"/v1/healthcheck/upstreams/1": "02-upstream1-one-down.json",
		}},
		{"18082 back", func(*testing.T) { s.SetBackend("127.0.0.1", 18082, apisixtest.Alive) }, time.Second, map[string]string{
			"/v1/healthcheck":             "03-list-recovered.json",
			"/v1/healthcheck/upstreams/1": "03-upstream1-recovered.json",
		}},
		{"18082 answers 500", func(*testing.T) { s.SetBackend("127.0.0.1", 18082, apisixtest.HTTPError) }, 2 * time.Second, map[string]string{
			"/v1/healthcheck/upstreams/1": "04-upstream1-http500.json",
		}},
		// 18082 is killed too: unhealthy already, it ignores the TCP
		// failures and holds http_failure 2.
		{"18081 killed too", func(t *testing.T) {
			s.SetBackend("127.0.0.1", 18082, apisixtest.Dead)
			s.SetBackend("127.0.0.1", 18081, apisixtest.Dead)
		}, 2 * time.Second, map[string]string{
			"/v1/healthcheck":             "05-list-both-down.json",
			"/v1/healthcheck/upstreams/1": "05-upstream1-both-down.json",
		}},
		{"both down", proxied(http.StatusBadGateway), 0, nil},
		{"checks removed", func(t *testing.T) {
			s.NoChecker(up1)
			s.NoChecker(apisix.Ref{Type: "upstreams", ID: "2"})
			s.NoChecker(apisix.Ref{Type: "routes", ID: "1"})
		}, 0, map[string]string{
			"/v1/healthcheck":               "06-list-no-checks.json",
			"/v1/healthcheck/upstreams/2":   "06-upstream2-no-checker.http.txt",
			"/v1/healthcheck/routes/1":      "99-route1-nochecker.http.txt",
			"/v1/healthcheck/upstreams/999": "99-upstream999-notfound.http.txt",
		}},
	}
	for _, st := range steps {
		st.do(t)
		s.Advance(st.after)
		for path, fixture := range st.bodies {
			compareFixture(t, st.name, api.URL, path, fixture)
		}
	}
}

// compareFixture GETs path and compares status, content type and body
// with a captured answer: a .json file is a 200 body, a .http.txt file a
// whole response.
func compareFixture(t *testing.T, stage, base, path, fixture string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "real-3.18", fixture))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus, wantBody := 200, raw
	if filepath.Ext(fixture) == ".txt" {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		wantStatus = resp.StatusCode
		_, wantBody, _ = bytes.Cut(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n\n"))
	}
	got := get(t, base, path, "Accept", "application/json")
	if got.status != wantStatus || got.contentType != "application/json" {
		t.Errorf("%s: GET %s: HTTP %d %q, want %d application/json (%s)", stage, path, got.status, got.contentType, wantStatus, fixture)
	}
	if diff := cmp.Diff(decode(t, wantBody), decode(t, got.body)); diff != "" {
		t.Errorf("%s: GET %s (-%s +fake):\n%s", stage, path, fixture, diff)
	}
}
