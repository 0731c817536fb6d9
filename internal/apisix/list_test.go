package apisix_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/health"
)

var (
	web  = apisix.Ref{Type: "services", ID: "web"}
	dns  = apisix.Ref{Type: "stream_routes", ID: "dns"}
	nock = apisix.Ref{Type: "upstreams", ID: "nock"}
	gone = apisix.Ref{Type: "upstreams", ID: "gone"}
)

// listFake is a fake control API holding api (up 1/2), web (down 0/1), dns
// (up 1/1) and nock (no checker); gone does not exist.
func listFake() *apisixtest.Server {
	srv := apisixtest.New()
	healthyAPI(srv)
	srv.SetNodes(web, apisixtest.Node{IP: "10.0.1.1", Port: 80, Status: apisixtest.Unhealthy})
	srv.SetNodes(dns, apisixtest.Node{IP: "10.0.2.1", Port: 53, Status: apisixtest.Healthy})
	srv.NoChecker(nock)
	return srv
}

var listKeys = []string{apiKey, "/apisix/services/web", "/apisix/stream_routes/dns", "/apisix/upstreams/nock", "/apisix/upstreams/gone"}

// wantPerUpstream is what a per-upstream poll of listKeys on listFake gives.
var wantPerUpstream = map[string]got{
	apiKey:                      {health.Up, 1, 2},
	"/apisix/services/web":      {health.Down, 0, 1},
	"/apisix/stream_routes/dns": {health.Up, 1, 1},
	"/apisix/upstreams/nock":    {health.NoChecker, 0, 0},
	"/apisix/upstreams/gone":    {health.NotFound, 0, 0},
}

func summarize(snap health.Snapshot) map[string]got {
	m := make(map[string]got, len(snap))
	for k, r := range snap {
		m[k] = got{r.Verdict, int(r.Healthy), int(r.Total)}
	}
	return m
}

// fetched lists the resources of listFake that were requested one by one,
// with their counts.
func fetched(srv *apisixtest.Server) map[apisix.Ref]int {
	m := map[apisix.Ref]int{}
	for _, ref := range []apisix.Ref{api, web, dns, nock, gone} {
		if n := srv.RequestsFor(ref); n > 0 {
			m[ref] = n
		}
	}
	return m
}

// All keys in the list: one request in all, whatever prefix the keys use,
// and an entry without nodes is no checker.
func TestListAllKeysInList(t *testing.T) {
	srv := listFake()
	ts := srv.Start()
	defer srv.Close()
	r1 := apisix.Ref{Type: "routes", ID: "1"}
	srv.SetNodes(r1) // a checker that has not run: "nodes": {}
	srv.SetNodes(apisix.Ref{Type: "upstreams", ID: "not-asked"}, apisixtest.Node{IP: "10.0.9.1", Port: 80, Status: apisixtest.Healthy})

	keys := []string{apiKey, "/upstreams/api", "/custom/prefix/upstreams/api", apiKey, "/apisix/services/web",
		"/apisix/stream_routes/dns", "/apisix/routes/1", "/apisix/upstreams/"}
	snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList}).Poll(context.Background(), ups(keys...))

	want := map[string]got{
		apiKey: {health.Up, 1, 2}, "/upstreams/api": {health.Up, 1, 2}, "/custom/prefix/upstreams/api": {health.Up, 1, 2},
		"/apisix/services/web":      {health.Down, 0, 1},
		"/apisix/stream_routes/dns": {health.Up, 1, 1},
		"/apisix/routes/1":          {health.NoChecker, 0, 0},
		"/apisix/upstreams/":        {health.Failed, 0, 0},
	}
	if diff := cmp.Diff(want, summarize(snap)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if n, l := srv.Requests(), srv.ListRequests(); n != 1 || l != 1 {
		t.Errorf("%d requests, %d of them the list; want only the list", n, l)
	}
	for k, r := range snap {
		if (r.Err != nil) != (r.Verdict != health.Up && r.Verdict != health.Down) {
			t.Errorf("%s: %v with err %v", k, r.Verdict, r.Err)
		}
	}
	if err := snap["/apisix/routes/1"].Err; err == nil || err.Error() != "GET /v1/healthcheck: routes/1: empty node list" {
		t.Errorf("routes/1 err = %v", err)
	}
}

// Keys the list lacks are fetched one by one, which tells no checker from
// not found; keys the list holds are not.
func TestListMissingKeys(t *testing.T) {
	srv := listFake()
	ts := srv.Start()
	defer srv.Close()

	snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList}).Poll(context.Background(), ups(listKeys...))
	if diff := cmp.Diff(wantPerUpstream, summarize(snap)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[apisix.Ref]int{nock: 1, gone: 1}, fetched(srv)); diff != "" {
		t.Errorf("fetched one by one (-want +got):\n%s", diff)
	}
	if n := srv.ListRequests(); n != 1 {
		t.Errorf("%d list requests, want 1", n)
	}
	for key, want := range map[string]string{
		"/apisix/upstreams/nock": `GET /v1/healthcheck/upstreams/nock: HTTP 404: "no checker for upstreams[nock]"`,
		"/apisix/upstreams/gone": `GET /v1/healthcheck/upstreams/gone: HTTP 404: "upstreams[gone] not found"`,
	} {
		if err := snap[key].Err; err == nil || err.Error() != want {
			t.Errorf("%s: err %v, want %s", key, err, want)
		}
	}
}

// A 2.x–3.2 list holds one worker's checkers: it is not used at all.
func TestListV2Ignored(t *testing.T) {
	srv := listFake()
	ts := srv.Start()
	defer srv.Close()
	for _, ref := range []apisix.Ref{api, web, dns} {
		if err := srv.SetFormat(ref, apisixtest.V2); err != nil {
			t.Fatal(err)
		}
	}
	snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList}).Poll(context.Background(), ups(listKeys...))
	if diff := cmp.Diff(wantPerUpstream, summarize(snap)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[apisix.Ref]int{api: 1, web: 1, dns: 1, nock: 1, gone: 1}, fetched(srv)); diff != "" {
		t.Errorf("fetched one by one (-want +got):\n%s", diff)
	}
	if n := srv.ListRequests(); n != 1 {
		t.Errorf("%d list requests, want 1", n)
	}
}

// A list that fails in any way leaves every key to a request of its own,
// in the same poll, with the verdicts a per-upstream poll gives. A list
// that hangs gets half the poll's deadline.
func TestListFailureFallsBack(t *testing.T) {
	for _, fault := range []apisixtest.Fault{
		apisixtest.Refuse, apisixtest.Status500, apisixtest.Status502, apisixtest.Status503,
		apisixtest.Garbage, apisixtest.HTMLNotFound, apisixtest.Truncated,
		apisixtest.Oversize, // under the list's limit, but one object, not a list
		apisixtest.Stall, apisixtest.Slow,
	} {
		t.Run(fault.String(), func(t *testing.T) {
			srv := listFake()
			ts := srv.Start()
			defer srv.Close()
			srv.SetListFault(fault)

			// A failure bound: the requests of the fallback must succeed
			// in what the list leaves, on a loaded machine too.
			const timeout = time.Minute
			c := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList, Timeout: timeout})
			share := listEndsAtStall(t, c, srv, timeout)
			snap := c.Poll(context.Background(), ups(listKeys...))
			if diff := cmp.Diff(wantPerUpstream, summarize(snap)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[apisix.Ref]int{api: 1, web: 1, dns: 1, nock: 1, gone: 1}, fetched(srv)); diff != "" {
				t.Errorf("fetched one by one (-want +got):\n%s", diff)
			}
			if srv.ListRequests() < 1 {
				t.Error("the list was not requested")
			}
			if *share == 0 {
				t.Error("the list's deadline was not set")
			}
			if fault != apisixtest.Stall && fault != apisixtest.Slow {
				return
			}
			select {
			case <-srv.Stalled():
			default:
				t.Error("the list was not held back")
			}
		})
	}
}

// listEndsAtStall makes c's list request end when srv first holds a reply
// back, as its deadline would end a stall (a stall never ends by itself),
// so that a test need not wait out the list's share of the poll's
// deadline; the fallback keeps the rest of it. It checks that the share
// is half of what is left of timeout, and returns it once the poll has
// set it.
func listEndsAtStall(t *testing.T, c *apisix.Client, srv *apisixtest.Server, timeout time.Duration) *time.Duration {
	t.Helper()
	start := time.Now()
	var share time.Duration
	apisix.SetListTimeout(c, func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
		// Poll's deadline is at least start+timeout, and the share was
		// taken before now.
		if least := (timeout - time.Since(start)) / 2; d > timeout/2 || d < least {
			t.Errorf("the list's share of the deadline is %v, want half of what is left: %v to %v", d, least, timeout/2)
		}
		share = d
		lctx, cancel := context.WithTimeout(ctx, d)
		go func() {
			select {
			case <-srv.Stalled():
				cancel()
			case <-lctx.Done():
			}
		}()
		return lctx, cancel
	})
	return &share
}

// With the deadline gone, the fallback makes no requests and every key is
// Failed with the reason.
func TestListCallerCanceled(t *testing.T) {
	srv := listFake()
	ts := srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList}).Poll(ctx, ups(listKeys...))
	for _, k := range listKeys {
		if r := snap[k]; r.Verdict != health.Failed || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("%s: %v, err %v; want failed, canceled", k, r.Verdict, r.Err)
		}
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// listServer answers the list with a fixed reply and passes every other
// request to srv.
func listServer(t *testing.T, srv *apisixtest.Server, status int, contentType, body string) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/healthcheck" {
			srv.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestListAnswers serves list bodies, the captured ones among them, in
// front of listFake: what the list holds (once) is answered from it, the
// rest is fetched; lists that are empty, 2.x, or not a list answer nothing.
func TestListAnswers(t *testing.T) {
	all := map[apisix.Ref]int{api: 1, web: 1, dns: 1, nock: 1, gone: 1}
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		fetched     map[apisix.Ref]int
		changed     map[string]got // verdicts that differ from wantPerUpstream
	}{
		// Its api and web are listFake's, and its routes/1 is not asked for.
		{"v3-list-all.json", 200, "application/json", read("v3-list-all.json"), map[apisix.Ref]int{dns: 1, nock: 1, gone: 1}, nil},
		{"standalone names", 200, "application/json", `[{"name":"/upstreams/api","nodes":[{"status":"healthy"}],"type":"http"}]`,
			map[apisix.Ref]int{web: 1, dns: 1, nock: 1, gone: 1}, map[string]got{apiKey: {health.Up, 1, 1}}},
		{"the list wins for what it holds", 200, "application/json",
			`[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]},{"name":"/apisix/upstreams/gone","nodes":{}}]`,
			map[apisix.Ref]int{web: 1, dns: 1, nock: 1}, map[string]got{apiKey: {health.Down, 0, 1}, "/apisix/upstreams/gone": {health.NoChecker, 0, 0}}},
		{"purging nodes", 200, "application/json",
			`[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"},{"status":"healthy","purge_time":1767225610.532}]},` +
				`{"name":"/apisix/services/web","nodes":[{"status":"healthy","purge_time":1767225610.532}]}]`,
			map[apisix.Ref]int{dns: 1, nock: 1, gone: 1}, map[string]got{apiKey: {health.Down, 0, 1}, "/apisix/services/web": {health.NoChecker, 0, 0}}},
		{"one resource twice, under two prefixes", 200, "application/json",
			`[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]},{"name":"/other/upstreams/api","nodes":[{"status":"unhealthy"}]},` +
				`{"name":"/apisix/services/web","nodes":[{"status":"unhealthy"}]}]`,
			map[apisix.Ref]int{api: 1, dns: 1, nock: 1, gone: 1}, nil},
		// A garbled entry answers nothing: its key is fetched on its own
		// and gets the verdict its endpoint gives.
		{"a bad entry is fetched on its own", 200, "application/json", `[{"name":"/apisix/upstreams/api","nodes":"10.0.0.1"},{"name":"/apisix/services/web","nodes":[{"status":"unhealthy"}]}]`,
			map[apisix.Ref]int{api: 1, dns: 1, nock: 1, gone: 1}, nil},
		// A list that breaks after answering some entries (a bad entry, a
		// cut body, a 2.x entry, data after it) answers none: what it said
		// before the break is never a verdict; every key is fetched.
		{"broken after an entry", 200, "application/json", `[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]},1]`, all, nil},
		{"cut after an entry", 200, "application/json", `[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]},{"name":"/apisix/services/web","nodes":[{"status":"healthy"}]}`, all, nil},
		{"a 2.x entry after an entry", 200, "application/json", `[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]},{"name":"/apisix/services/web","src_type":"services","healthy_nodes":[]}]`, all, nil},
		{"data after the list", 200, "application/json", `[{"name":"/apisix/upstreams/api","nodes":[{"status":"unhealthy"}]}] 1`, all, nil},
		{"v3-list-empty.json", 200, "application/json", read("v3-list-empty.json"), all, nil},
		{"empty []", 200, "application/json", "[]\n", all, nil},
		{"null", 200, "application/json", "null", all, nil},
		{"v2-list-all.json", 200, "application/json", read("v2-list-all.json"), all, nil},
		{"t-2.15.3 list", 200, "application/json", read("t-2.15.3-control-healthcheck-TEST2-list.json"), all, nil},
		{"one resource's body", 200, "application/json", read("v3-upstream-mixed.json"), all, nil},
		{"HTML", 200, "text/html; charset=utf-8", "<!DOCTYPE html><html></html>", all, nil},
		{"HTML content type, JSON body", 200, "text/html", read("v3-list-all.json"), all, nil},
		{"404 JSON", 404, "application/json", `{"error_msg":"not found"}`, all, nil},
		{"400", 400, "application/json", read("error-400-invalid-src-type.json"), all, nil},
		{"empty body", 200, "application/json", "", all, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := listFake()
			defer srv.Close()
			ts := listServer(t, srv, tt.status, tt.contentType, tt.body)
			snap := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList}).Poll(context.Background(), ups(listKeys...))
			want := map[string]got{}
			for k, g := range wantPerUpstream {
				want[k] = g
			}
			for k, g := range tt.changed {
				want[k] = g
			}
			if diff := cmp.Diff(want, summarize(snap)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.fetched, fetched(srv)); diff != "" {
				t.Errorf("fetched one by one (-want +got):\n%s", diff)
			}
		})
	}
}

// The list has its own bound, exact at the boundary; over it, every key is
// fetched.
func TestListBodyLimit(t *testing.T) {
	srv := listFake()
	ts := srv.Start()
	defer srv.Close()
	resp, err := ts.Client().Get(ts.URL + "/v1/healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		limit   int
		fetched int
	}{{len(body), 2}, {len(body) - 1, 5}} {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			before := srv.Requests()
			// MaxBodyBytes below the list: the list must not use it.
			c := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeList, MaxListBytes: int64(tt.limit), MaxBodyBytes: 1 << 10})
			if diff := cmp.Diff(wantPerUpstream, summarize(c.Poll(context.Background(), ups(listKeys...)))); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if n := srv.Requests() - before; n != 1+tt.fetched {
				t.Errorf("%d requests, want the list and %d", n, tt.fetched)
			}
		})
	}
}

// TestListRequest checks what goes on the wire for the list.
func TestListRequest(t *testing.T) {
	type seen struct{ Method, Path, Accept string }
	var mu sync.Mutex
	var reqs []seen
	srv := apisixtest.New()
	defer srv.Close()
	healthyAPI(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.EscapedPath(), r.Header.Get("Accept")})
		mu.Unlock()
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/control")
		r.URL.RawPath = ""
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	// apisixtest answers the list in HTML when Accept allows it.
	if r := newClient(t, ts.URL+"/control/", apisix.Options{Mode: apisix.ModeList}).Poll(context.Background(), ups(apiKey))[apiKey]; r.Verdict != health.Up {
		t.Errorf("got %v, err %v", r.Verdict, r.Err)
	}
	want := []seen{{"GET", "/control/v1/healthcheck", "application/json"}}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// manyUpstreams creates n upstreams, one healthy node each, and returns
// their refs and keys.
func manyUpstreams(srv *apisixtest.Server, n int) ([]apisix.Ref, []string) {
	refs := make([]apisix.Ref, n)
	keys := make([]string, n)
	for i := range refs {
		refs[i] = apisix.Ref{Type: "upstreams", ID: fmt.Sprint("u", i)}
		srv.SetNodes(refs[i],
			apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy},
			apisixtest.Node{IP: "10.0.0.2", Port: 80, Status: apisixtest.Unhealthy})
		keys[i] = "/apisix/upstreams/" + refs[i].ID
	}
	return refs, keys
}

// inProcess is a client whose requests h serves in this goroutine,
// without sockets or HTTP's wire format, for tests of many requests whose
// subject is not HTTP.
func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		res.Request = r
		return res, nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// counts is what one poll cost at the server.
type counts struct{ List, Others int }

// pollCounting polls keys once, checks no key failed, and returns the
// requests it took.
func pollCounting(t *testing.T, c *apisix.Client, srv *apisixtest.Server, keys []string) counts {
	t.Helper()
	all, lists := srv.Requests(), srv.ListRequests()
	for k, r := range c.Poll(context.Background(), ups(keys...)) {
		if r.Verdict == health.Failed {
			t.Fatalf("%s: %v, err %v", k, r.Verdict, r.Err)
		}
	}
	l := srv.ListRequests() - lists
	return counts{l, srv.Requests() - all - l}
}

// Auto uses the list from AutoMinKeys distinct resources, and per-upstream
// requests below; per_upstream never uses it.
func TestAutoThreshold(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	_, keys := manyUpstreams(srv, apisix.AutoMinKeys)
	below := append(keys[:apisix.AutoMinKeys-1:apisix.AutoMinKeys-1], keys[0]) // a repeat is not a resource
	auto := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModeAuto})
	perUpstream := newClient(t, ts.URL, apisix.Options{Mode: apisix.ModePerUpstream})

	for _, tt := range []struct {
		name string
		c    *apisix.Client
		keys []string
		want counts
	}{
		{"auto below", auto, below, counts{0, apisix.AutoMinKeys - 1}},
		{"auto at the threshold", auto, keys, counts{1, 0}},
		{"auto again", auto, keys, counts{1, 0}},
		{"auto below again", auto, below, counts{0, apisix.AutoMinKeys - 1}},
		{"per_upstream", perUpstream, keys, counts{0, apisix.AutoMinKeys}},
	} {
		if got := pollCounting(t, tt.c, srv, tt.keys); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// After a list it cannot use, auto stays per upstream for AutoRetryPolls
// polls and then tries the list again.
func TestAutoRetries(t *testing.T) {
	n := apisix.AutoMinKeys
	tests := []struct {
		name   string
		spoil  func(*apisixtest.Server, []apisix.Ref)
		repair func(*apisixtest.Server, []apisix.Ref)
		// requests of a poll that tries the list and cannot use it
		tried counts
	}{
		{"2.x list", func(srv *apisixtest.Server, refs []apisix.Ref) {
			for _, r := range refs {
				_ = srv.SetFormat(r, apisixtest.V2)
			}
		}, func(srv *apisixtest.Server, refs []apisix.Ref) {
			for _, r := range refs {
				_ = srv.SetFormat(r, apisixtest.V3)
			}
		}, counts{1, n}},
		{"failing list", func(srv *apisixtest.Server, _ []apisix.Ref) { srv.SetListFault(apisixtest.Status500) },
			func(srv *apisixtest.Server, _ []apisix.Ref) { srv.SetListFault(apisixtest.NoFault) }, counts{1, n}},
		{"list without our keys", func(srv *apisixtest.Server, refs []apisix.Ref) {
			for _, r := range refs {
				srv.NoChecker(r)
			}
			srv.SetNodes(apisix.Ref{Type: "upstreams", ID: "not-ours"}, apisixtest.Node{IP: "10.0.9.1", Port: 80, Status: apisixtest.Healthy})
		}, func(srv *apisixtest.Server, refs []apisix.Ref) {
			for _, r := range refs {
				srv.SetNodes(r, apisixtest.Node{IP: "10.0.0.1", Port: 80, Status: apisixtest.Healthy})
			}
		}, counts{1, n}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := apisixtest.New()
			refs, keys := manyUpstreams(srv, n)
			// Some 6,000 requests: served in process, without sockets
			// (the subject is when the list is used, not HTTP).
			c := newClient(t, "http://apisix.test", apisix.Options{Mode: apisix.ModeAuto, HTTPClient: inProcess(srv)})
			// The first list is joined by one request that measures
			// what a one-upstream request costs (auto chooses by cost).
			if got := pollCounting(t, c, srv, keys); got != (counts{1, 1}) {
				t.Fatalf("first poll: %+v, want the list and one request", got)
			}
			tt.spoil(srv, refs)
			if got := pollCounting(t, c, srv, keys); got != tt.tried {
				t.Errorf("poll that meets the change: %+v, want %+v", got, tt.tried)
			}
			for i := range apisix.AutoRetryPolls {
				if got := pollCounting(t, c, srv, keys); got != (counts{0, n}) {
					t.Fatalf("paused poll %d: %+v, want per upstream", i+1, got)
				}
			}
			if got := pollCounting(t, c, srv, keys); got != tt.tried {
				t.Errorf("retry still broken: %+v, want %+v", got, tt.tried)
			}
			tt.repair(srv, refs)
			for i := range apisix.AutoRetryPolls {
				if got := pollCounting(t, c, srv, keys); got != (counts{0, n}) {
					t.Fatalf("paused poll %d after the fix: %+v, want per upstream", i+1, got)
				}
			}
			for i := range 2 {
				if got := pollCounting(t, c, srv, keys); got != (counts{1, 0}) {
					t.Errorf("poll %d after the retry: %+v, want the list alone", i+1, got)
				}
			}
		})
	}
}

// cpuTime is this process's user + system time: the client's and the
// in-process server's together.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPoll10000 polls 10,000 distinct upstreams of two nodes each on a
// loopback fake in every mode (auto picks the list at this size). The fake
// runs in the same process, so time, CPU and allocations are the client's
// and the server's together.
func BenchmarkPoll10000(b *testing.B) { benchPollModes(b, 10000) }

// benchPollModes polls n distinct upstreams of two nodes each on a loopback
// fake in every mode, with the CPU and requests of a poll.
func benchPollModes(b *testing.B, n int) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	_, keys := manyUpstreams(srv, n)
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
