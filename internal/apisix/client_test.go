package apisix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

type got struct {
	Verdict        health.Verdict
	Healthy, Total int
}

// ups turns keys into what Poll takes, unchecked, as a caller building
// Upstreams by hand might: Poll itself must refuse a bad one.
func ups(keys ...string) []health.Upstream { return health.Upstreams(keys...) }

func newClient(t testing.TB, url string, opts apisix.Options) *apisix.Client {
	t.Helper()
	c, err := apisix.NewClient(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPollFixtures serves every captured body in testdata and checks the
// verdict the fixture README expects.
//
// Files that are not a single resource's body are served as one anyway:
// the lists (the endpoint never answers them for one resource, so they
// must be Failed, {} included, which has no "name"), and the bare node
// arrays that APISIX's tests print (Failed as a body; wrapped into a full
// body of their format, they must give the verdict of the test they come
// from).
func TestPollFixtures(t *testing.T) {
	const (
		asIs = iota
		wrapV3
		wrapV2
	)
	tests := []struct {
		file   string
		status int
		wrap   int
		want   got
	}{
		{"v3-upstream-all-healthy.json", 200, asIs, got{health.Up, 2, 2}},
		{"v3-upstream-mixed.json", 200, asIs, got{health.Up, 1, 2}},
		{"v3-upstream-all-unhealthy.json", 200, asIs, got{health.Down, 0, 2}},
		{"v3-mostly-healthy.json", 200, asIs, got{health.Up, 1, 2}},
		{"v3-mostly-unhealthy.json", 200, asIs, got{health.Down, 0, 2}},
		{"v3-upstream-no-checker-yet.json", 200, asIs, got{health.NoChecker, 0, 0}},
		{"v3-route-inline-yaml-mode.json", 200, asIs, got{health.Up, 1, 2}},
		{"v3-service-active-port-override.json", 200, asIs, got{health.Down, 0, 1}},
		{"v3-stream-route.json", 200, asIs, got{health.Up, 1, 1}},
		{"v3.3-upstream-mixed-no-hostname.json", 200, asIs, got{health.Up, 1, 2}},
		{"v3-upstream-pending-purge.json", 200, asIs, got{health.Up, 1, 1}},
		{"v2-upstream-all-healthy.json", 200, asIs, got{health.Up, 2, 2}},
		{"v2-upstream-mixed.json", 200, asIs, got{health.Up, 1, 2}},
		{"v2-upstream-all-unhealthy.json", 200, asIs, got{health.Down, 0, 2}},
		{"t-2.15.3-control-healthcheck-TEST1-upstreams-1.json", 200, asIs, got{health.Up, 1, 2}},
		{"t-2.15.3-control-healthcheck-TEST3-services-1.json", 200, asIs, got{health.Down, 0, 2}},
		{"t-3.18.0-control-healthcheck-TEST2-routes-1.json", 200, asIs, got{health.Up, 1, 2}},
		{"t-3.18.0-control-healthcheck-TEST3-services-1.json", 200, asIs, got{health.Down, 0, 1}},
		{"t-3.18.0-control-healthcheck-TEST7-routes-1-passive.json", 200, asIs, got{health.Down, 0, 2}},
		{"error-404-no-checker.json", 404, asIs, got{health.NoChecker, 0, 0}},
		{"error-404-not-found.json", 404, asIs, got{health.NotFound, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST5-404.json", 404, asIs, got{health.NotFound, 0, 0}},
		{"error-404-missing-src-id.json", 404, asIs, got{health.Failed, 0, 0}},
		{"error-400-invalid-src-type.json", 400, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST6-400.json", 400, asIs, got{health.Failed, 0, 0}},
		{"v2-list-all.json", 200, asIs, got{health.Failed, 0, 0}},
		{"v2-list-empty.json", 200, asIs, got{health.Failed, 0, 0}},
		{"v3-list-all.json", 200, asIs, got{health.Failed, 0, 0}},
		{"v3-list-empty.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-2.15.3-control-healthcheck-TEST2-list.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST2-list.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST3-list.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST4-list-no-checkers.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-stream-node-control-api-healthcheck-list.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST1-upstreams-1-nodes-only.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.18.0-control-healthcheck-TEST1-upstreams-1-nodes-only.json", 200, wrapV3, got{health.Up, 1, 2}},
		{"t-3.3.0-control-healthcheck-TEST1-upstreams-1-nodes-only.json", 200, asIs, got{health.Failed, 0, 0}},
		{"t-3.3.0-control-healthcheck-TEST1-upstreams-1-nodes-only.json", 200, wrapV3, got{health.Up, 1, 2}},
		{"t-2.15.3-control-healthcheck-TEST7-healthy-nodes-only.json", 200, asIs, got{health.Failed, 0, 0}},
		// TEST 7 prints healthy_nodes after one TCP failure: both nodes
		// are still listed as healthy (mostly_healthy).
		{"t-2.15.3-control-healthcheck-TEST7-healthy-nodes-only.json", 200, wrapV2, got{health.Up, 2, 2}},
	}

	// Every fixture must be in the table, so a new one cannot be skipped.
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("fixture %s has no case", f)
		}
	}

	// Each fixture answers a poll of the resource it names (an answer
	// naming another is Failed, TestAnswerNamesItsResource), or of
	// upstreams/f<i> when it names none.
	type reply struct {
		path   string
		status int
		body   []byte
	}
	var current atomic.Pointer[reply]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := current.Load()
		if rep == nil || r.URL.Path != rep.path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
	}))
	defer ts.Close()
	c := newClient(t, ts.URL, apisix.Options{})
	for i, tt := range tests {
		name := tt.file
		if tt.wrap != asIs {
			name += " wrapped"
		}
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			switch tt.wrap {
			case wrapV3:
				b = []byte(`{"name":"/upstreams/1","type":"http","nodes":` + string(b) + `}`)
			case wrapV2:
				b = []byte(`{"healthy_nodes":` + string(b) + `,"name":"upstream#/upstreams/1","nodes":` + string(b) + `,"src_id":"1","src_type":"upstreams"}`)
			}
			ref := namedRef(b)
			if ref == (apisix.Ref{}) {
				ref = apisix.Ref{Type: "upstreams", ID: fmt.Sprintf("f%d", i)}
			}
			key := "/apisix/" + ref.Type + "/" + ref.ID
			current.Store(&reply{"/v1/healthcheck/" + ref.Type + "/" + ref.ID, tt.status, b})
			r, ok := c.Poll(context.Background(), ups(key))[key]
			if !ok {
				t.Fatalf("no result for %q", key)
			}
			if diff := cmp.Diff(tt.want, got{r.Verdict, int(r.Healthy), int(r.Total)}); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s\nerr: %v", diff, r.Err)
			}
			if wantErr := tt.want.Verdict != health.Up && tt.want.Verdict != health.Down; (r.Err != nil) != wantErr {
				t.Errorf("err = %v, want an error: %v", r.Err, wantErr)
			}
		})
	}
}

// namedRef is the resource a fixture names: its "name" ("…/<type>/<id>")
// or its 404 message ("… <type>[<id>]…"); zero for neither.
func namedRef(body []byte) apisix.Ref {
	var v struct {
		Name     string `json:"name"`
		ErrorMsg string `json:"error_msg"`
	}
	if json.Unmarshal(body, &v) != nil {
		return apisix.Ref{}
	}
	if parts := strings.Split(v.Name, "/"); len(parts) >= 3 {
		return apisix.Ref{Type: parts[len(parts)-2], ID: parts[len(parts)-1]}
	}
	if m := regexp.MustCompile(`(\w+)\[([^\]]+)\]`).FindStringSubmatch(v.ErrorMsg); m != nil {
		return apisix.Ref{Type: m[1], ID: m[2]}
	}
	return apisix.Ref{}
}

var api = apisix.Ref{Type: "upstreams", ID: "api"}

const apiKey = "/apisix/upstreams/api"

func healthyAPI(srv *apisixtest.Server) {
	srv.SetNodes(api,
		apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy},
		apisixtest.Node{IP: "10.0.0.2", Port: 80, Status: apisixtest.Unhealthy})
}

// TestPollFaults checks that every way the control API can fail gives
// Failed with a reason. Polls that would hang end at the poll deadline,
// which is tiny for them: a stall never ends and a slow body takes
// seconds, so however soon or late it comes the poll fails at it.
func TestPollFaults(t *testing.T) {
	tests := []struct {
		fault   apisixtest.Fault
		timeout time.Duration // 0: the default
		check   func(error) bool
	}{
		{apisixtest.Refuse, 0, func(err error) bool { return err != nil }},
		{apisixtest.Stall, time.Millisecond, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{apisixtest.Slow, time.Millisecond, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{apisixtest.Status500, 0, is("GET /v1/healthcheck/upstreams/api: HTTP 500")},
		{apisixtest.Status502, 0, is("GET /v1/healthcheck/upstreams/api: HTTP 502")},
		{apisixtest.Status503, 0, is("GET /v1/healthcheck/upstreams/api: HTTP 503")},
		{apisixtest.Garbage, 0, is("GET /v1/healthcheck/upstreams/api: decode: invalid character '\\x00' looking for beginning of value")},
		{apisixtest.HTMLNotFound, 0, is(`GET /v1/healthcheck/upstreams/api: HTTP 404 without an APISIX error body (content type "text/html")`)},
		{apisixtest.Truncated, 0, is("GET /v1/healthcheck/upstreams/api: read body: unexpected EOF")},
		{apisixtest.Oversize, 0, is("GET /v1/healthcheck/upstreams/api: body exceeds the 4194304-byte limit")},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			srv := apisixtest.New()
			ts := srv.Start()
			defer srv.Close()
			healthyAPI(srv)
			srv.SetFault(api, tt.fault)

			r := newClient(t, ts.URL, apisix.Options{Timeout: tt.timeout}).Poll(context.Background(), ups(apiKey))[apiKey]
			if r.Verdict != health.Failed || !tt.check(r.Err) {
				t.Errorf("got %v, err %v", r.Verdict, r.Err)
			}
		})
	}
}

func is(want string) func(error) bool {
	return func(err error) bool { return err != nil && err.Error() == want }
}

// A global fault hits every resource; clearing it restores answers.
func TestPollGlobalFault(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	healthyAPI(srv)
	web := apisix.Ref{Type: "services", ID: "web"}
	srv.SetNodes(web, apisixtest.Node{IP: "10.0.1.1", Port: 80, Status: apisixtest.Unhealthy})
	c := newClient(t, ts.URL, apisix.Options{})
	keys := []string{apiKey, "/apisix/services/web"}

	verdicts := func() map[string]health.Verdict {
		m := map[string]health.Verdict{}
		for k, r := range c.Poll(context.Background(), ups(keys...)) {
			m[k] = r.Verdict
		}
		return m
	}
	srv.SetGlobalFault(apisixtest.Status503)
	if diff := cmp.Diff(map[string]health.Verdict{apiKey: health.Failed, "/apisix/services/web": health.Failed}, verdicts()); diff != "" {
		t.Errorf("with global fault (-want +got):\n%s", diff)
	}
	srv.SetGlobalFault(apisixtest.NoFault)
	if diff := cmp.Diff(map[string]health.Verdict{apiKey: health.Up, "/apisix/services/web": health.Down}, verdicts()); diff != "" {
		t.Errorf("after clearing (-want +got):\n%s", diff)
	}
}

// TestPollSequence follows one resource through the states a daemon sees,
// in both formats.
func TestPollSequence(t *testing.T) {
	for _, format := range []apisixtest.Format{apisixtest.V3, apisixtest.V2} {
		t.Run(format.String(), func(t *testing.T) {
			srv := apisixtest.New()
			ts := srv.Start()
			defer srv.Close()
			c := newClient(t, ts.URL, apisix.Options{})
			poll := func() got {
				r := c.Poll(context.Background(), ups(apiKey))[apiKey]
				return got{r.Verdict, int(r.Healthy), int(r.Total)}
			}
			steps := []struct {
				name   string
				change func() error
				want   got
			}{
				{"absent", func() error { return nil }, got{health.NotFound, 0, 0}},
				{"no checker", func() error { srv.NoChecker(api); return srv.SetFormat(api, format) }, got{health.NoChecker, 0, 0}},
				{"checker without nodes yet", func() error { srv.SetNodes(api); return nil }, got{health.NoChecker, 0, 0}},
				{"one of two healthy", func() error { healthyAPI(srv); return nil }, got{health.Up, 1, 2}},
				{"all unhealthy", func() error { return srv.SetAllStatus(api, apisixtest.Unhealthy) }, got{health.Down, 0, 2}},
				{"mostly unhealthy", func() error { return srv.SetStatus(api, 1, apisixtest.MostlyUnhealthy) }, got{health.Down, 0, 2}},
				{"unknown status", func() error { return srv.SetStatus(api, 0, "checking") }, got{health.Down, 0, 2}},
				{"mostly healthy", func() error { return srv.SetStatus(api, 1, apisixtest.MostlyHealthy) }, got{health.Up, 1, 2}},
				{"removed", func() error { srv.Remove(api); return nil }, got{health.NotFound, 0, 0}},
			}
			for _, s := range steps {
				if err := s.change(); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if diff := cmp.Diff(s.want, poll()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", s.name, diff)
				}
			}
		})
	}
}

// Nodes being purged do not count, and a checker left with only those is
// treated as one that has not started.
func TestPollPurging(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	srv.SetNodes(api,
		apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Unhealthy},
		apisixtest.Node{IP: "10.0.0.3", Port: 80, Status: apisixtest.Healthy, Purging: true})
	c := newClient(t, ts.URL, apisix.Options{})
	if r := c.Poll(context.Background(), ups(apiKey))[apiKey]; r.Verdict != health.Down || r.Total != 1 {
		t.Errorf("got %v %d/%d, want down 0/1", r.Verdict, r.Healthy, r.Total)
	}
	srv.SetNodes(api, apisixtest.Node{IP: "10.0.0.3", Port: 80, Status: apisixtest.Healthy, Purging: true})
	if r := c.Poll(context.Background(), ups(apiKey))[apiKey]; r.Verdict != health.NoChecker {
		t.Errorf("got %v, want no checker", r.Verdict)
	}
}

func TestPollRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := newClient(t, "http://"+addr, apisix.Options{}).Poll(context.Background(), ups(apiKey))[apiKey]
	if r.Verdict != health.Failed || !errors.Is(r.Err, syscall.ECONNREFUSED) {
		t.Errorf("got %v, err %v; want failed, connection refused", r.Verdict, r.Err)
	}
	if want := "GET /v1/healthcheck/upstreams/api: "; r.Err == nil || !strings.HasPrefix(r.Err.Error(), want) {
		t.Errorf("err %v does not start with %q", r.Err, want)
	}
}

// The poll deadline comes from the caller's context when that is sooner.
func TestPollCallerContext(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	healthyAPI(srv)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newClient(t, ts.URL, apisix.Options{}).Poll(ctx, ups(apiKey))[apiKey]
	if r.Verdict != health.Failed || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("got %v, err %v; want failed, canceled", r.Verdict, r.Err)
	}
}

// A resource named by several keys (repeated, or with another etcd prefix)
// is fetched once and every key gets its result; keys ParseRef rejects are
// Failed without a request.
func TestPollFetchesEachResourceOnce(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	healthyAPI(srv)
	web := apisix.Ref{Type: "services", ID: "web"}
	srv.SetNodes(web, apisixtest.Node{IP: "10.0.1.1", Port: 80, Status: apisixtest.Unhealthy})

	keys := []string{apiKey, "/apisix/services/web", apiKey, "/upstreams/api", "/custom/prefix/upstreams/api",
		"/apisix/upstreams/", "/apisix/upstream/api", "/apisix/upstreams/.."}
	snap := newClient(t, ts.URL, apisix.Options{}).Poll(context.Background(), ups(keys...))

	want := map[string]health.Verdict{
		apiKey: health.Up, "/upstreams/api": health.Up, "/custom/prefix/upstreams/api": health.Up,
		"/apisix/services/web": health.Down,
		"/apisix/upstreams/":   health.Failed, "/apisix/upstream/api": health.Failed, "/apisix/upstreams/..": health.Failed,
	}
	gotV := map[string]health.Verdict{}
	for k, r := range snap {
		gotV[k] = r.Verdict
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if n := srv.RequestsFor(api); n != 1 {
		t.Errorf("%d requests for %v, want 1", n, api)
	}
	if n := srv.Requests(); n != 2 {
		t.Errorf("%d requests in all, want 2", n)
	}
	if err := snap["/apisix/upstreams/.."].Err; err == nil || !strings.Contains(err.Error(), `key "/apisix/upstreams/..": `) {
		t.Errorf("err for \"..\" = %v, want one naming the key", err)
	}
}

// inFlight wraps a handler to record the most requests it served at once.
// The first gate requests are held until gate of them have arrived, so a
// client that does not run gate requests at the same time stalls until
// its deadline.
type inFlight struct {
	next http.Handler
	gate int

	mu       sync.Mutex
	now, max int
	arrived  int
	open     chan struct{}
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
	f.arrived++
	if f.arrived == f.gate {
		close(f.open)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}()
	select {
	case <-f.open:
	case <-r.Context().Done():
		return
	}
	f.next.ServeHTTP(w, r)
}

func TestPollConcurrency(t *testing.T) {
	const maxInFlight, resources = 3, 20
	srv := apisixtest.New()
	var keys []string
	for i := range resources {
		ref := apisix.Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		srv.SetNodes(ref, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
		keys = append(keys, "/apisix/upstreams/"+ref.ID)
	}
	f := &inFlight{next: srv, gate: maxInFlight, open: make(chan struct{})}
	ts := httptest.NewServer(f)
	defer ts.Close()
	defer srv.Close()

	snap := newClient(t, ts.URL, apisix.Options{MaxInFlight: maxInFlight, Timeout: time.Minute}).Poll(context.Background(), ups(keys...))
	for _, k := range keys {
		if r := snap[k]; r.Verdict != health.Up {
			t.Errorf("%s: %v, err %v", k, r.Verdict, r.Err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.max != maxInFlight {
		t.Errorf("at most %d requests in flight, want %d", f.max, maxInFlight)
	}
}

// Repeated polls reuse kept-alive connections, also after error answers,
// whose bodies must be read to the end for that.
func TestPollKeepAlive(t *testing.T) {
	const polls = 25
	srv := apisixtest.New()
	var keys []string
	for i := range 8 {
		ref := apisix.Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		keys = append(keys, "/apisix/upstreams/"+ref.ID)
		switch i {
		case 0:
			srv.NoChecker(ref)
		case 1: // not found: never created
		case 2:
			srv.SetNodes(ref, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
			srv.SetFault(ref, apisixtest.Status500)
		default:
			srv.SetNodes(ref, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
		}
	}
	ts := httptest.NewUnstartedServer(srv)
	var mu sync.Mutex
	conns := 0
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	ts.Start()
	defer ts.Close()
	defer srv.Close()

	c := newClient(t, ts.URL, apisix.Options{})
	for range polls {
		c.Poll(context.Background(), ups(keys...))
	}
	if n := srv.Requests(); n != polls*len(keys) {
		t.Fatalf("%d requests, want %d", n, polls*len(keys))
	}
	mu.Lock()
	defer mu.Unlock()
	// Without reuse every request dials. With it, the first poll dials one
	// connection per concurrent request; a later poll dials only when a
	// request starts before the transport has taken back a connection
	// that just finished, which the idle pool then keeps.
	t.Logf("conns %d", conns)
	if conns > 2*len(keys) {
		t.Errorf("%d connections for %d requests, want at most %d", conns, polls*len(keys), 2*len(keys))
	}
}

// TestPollRequest checks what goes on the wire: method, path under the base
// URL's own path, and Accept.
func TestPollRequest(t *testing.T) {
	type seen struct{ Method, Path, Accept string }
	var mu sync.Mutex
	var reqs []seen
	srv := apisixtest.New()
	defer srv.Close()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.EscapedPath(), r.Header.Get("Accept")})
		mu.Unlock()
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/control")
		r.URL.RawPath = ""
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	ref := apisix.Ref{Type: "stream_routes", ID: "a.B-9_z"}
	srv.SetNodes(ref, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})

	key := "/apisix/stream_routes/a.B-9_z"
	// apisixtest answers HTML when Accept allows it, as APISIX 3.3+ does,
	// so Up also shows the header was right.
	if r := newClient(t, ts.URL+"/control/", apisix.Options{}).Poll(context.Background(), ups(key))[key]; r.Verdict != health.Up {
		t.Errorf("got %v, err %v", r.Verdict, r.Err)
	}
	want := []seen{{"GET", "/control/v1/healthcheck/stream_routes/a.B-9_z", "application/json"}}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// Redirects are answers, not directions: the control API never sends one.
func TestPollDoesNotFollowRedirects(t *testing.T) {
	srv := apisixtest.New()
	defer srv.Close()
	healthyAPI(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/healthcheck/upstreams/api" {
			http.Redirect(w, r, "/elsewhere/v1/healthcheck/upstreams/api", http.StatusFound)
			return
		}
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/elsewhere")
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	r := newClient(t, ts.URL, apisix.Options{}).Poll(context.Background(), ups(apiKey))[apiKey]
	if r.Verdict != health.Failed || r.Err == nil || r.Err.Error() != "GET /v1/healthcheck/upstreams/api: HTTP 302" {
		t.Errorf("got %v, err %v", r.Verdict, r.Err)
	}
}

// The body limit holds at its exact boundary, whether or not the server
// declares a length.
func TestPollBodyLimit(t *testing.T) {
	body := `{"name":"/apisix/upstreams/api","type":"http","nodes":[{"ip":"10.0.0.1","port":80,"status":"healthy"}]}`
	for _, chunked := range []bool{false, true} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !chunked {
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			}
			w.WriteHeader(200)
			// Two writes with a flush between force chunked encoding.
			_, _ = w.Write([]byte(body[:10]))
			http.NewResponseController(w).Flush()
			_, _ = w.Write([]byte(body[10:]))
		}))
		for _, limit := range []int{len(body), len(body) - 1} {
			t.Run(fmt.Sprintf("chunked %v limit %d", chunked, limit), func(t *testing.T) {
				r := newClient(t, ts.URL, apisix.Options{MaxBodyBytes: int64(limit)}).Poll(context.Background(), ups(apiKey))[apiKey]
				want := health.Up
				if limit < len(body) {
					want = health.Failed
				}
				if r.Verdict != want {
					t.Errorf("got %v, err %v; want %v", r.Verdict, r.Err, want)
				}
			})
		}
		ts.Close()
	}
}

func TestNewClientRejects(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts apisix.Options
	}{
		{"empty", "", apisix.Options{}},
		{"no scheme", "127.0.0.1:9090", apisix.Options{}},
		{"ftp", "ftp://127.0.0.1:9090", apisix.Options{}},
		{"no host", "http://", apisix.Options{}},
		{"query", "http://127.0.0.1:9090?a=1", apisix.Options{}},
		{"user", "http://u:p@127.0.0.1:9090", apisix.Options{}},
		{"negative timeout", "http://127.0.0.1:9090", apisix.Options{Timeout: -time.Second}},
		{"negative limit", "http://127.0.0.1:9090", apisix.Options{MaxBodyBytes: -1}},
		{"negative list limit", "http://127.0.0.1:9090", apisix.Options{MaxListBytes: -1}},
		{"unknown mode", "http://127.0.0.1:9090", apisix.Options{Mode: "List"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := apisix.NewClient(tt.url, tt.opts); err == nil {
				t.Errorf("NewClient(%q, %+v) succeeded", tt.url, tt.opts)
			}
		})
	}
}

// BenchmarkPoll1000 polls 1,000 distinct upstreams of three nodes each on a
// loopback server, with the default options.
func BenchmarkPoll1000(b *testing.B) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	keys := make([]string, 1000)
	for i := range keys {
		ref := apisix.Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		srv.SetNodes(ref,
			apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy},
			apisixtest.Node{IP: "10.0.0.2", Port: 80, Status: apisixtest.Unhealthy},
			apisixtest.Node{IP: "10.0.0.3", Port: 80, Status: apisixtest.MostlyHealthy})
		keys[i] = "/apisix/upstreams/" + ref.ID
	}
	c := newClient(b, ts.URL, apisix.Options{})
	b.ReportAllocs()
	for b.Loop() {
		snap := c.Poll(context.Background(), ups(keys...))
		if r := snap[keys[999]]; r.Verdict != health.Up {
			b.Fatalf("got %v, err %v", r.Verdict, r.Err)
		}
	}
}

// refOf is the resource u's key names.
func refOf(u health.Upstream) apisix.Ref {
	r, _ := apisix.ParseRef(u.Key)
	return r
}
