package apisix

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/internal/health"

	"github.com/google/go-cmp/cmp"
)

// got is what the decode tests compare: the verdict, the counts, and
// whether an error was reported.
type got struct {
	Verdict        health.Verdict
	Healthy, Total int
	Err            bool
}

func summary(r health.Result) got {
	return got{Verdict: r.Verdict, Healthy: int(r.Healthy), Total: int(r.Total), Err: r.Err != nil}
}

const jsonCT = "application/json"

// Bodies crafted around the edges of the verdict rules. The captured fixtures are
// tested through a server in client_test.go.
func TestClassify(t *testing.T) {
	v3 := func(nodes string) string {
		return `{"name":"/apisix/upstreams/api","type":"http","nodes":` + nodes + `}`
	}
	n := func(status string) string { return `{"ip":"10.0.0.1","port":80,"status":"` + status + `"}` }
	tests := []struct {
		name   string
		status int
		ct     string
		body   string
		want   got
	}{
		// Empty lists, every spelling.
		{"v3 nodes {}", 200, jsonCT, v3(`{}`), got{health.NoChecker, 0, 0, true}},
		{"v3 nodes { } with space", 200, jsonCT, v3("{ \n}"), got{health.NoChecker, 0, 0, true}},
		{"v3 nodes []", 200, jsonCT, v3(`[]`), got{health.NoChecker, 0, 0, true}},
		{"v3 nodes null", 200, jsonCT, v3(`null`), got{health.NoChecker, 0, 0, true}},
		{"v3 nodes missing", 200, jsonCT, `{"name":"/upstreams/api","type":"http"}`, got{health.NoChecker, 0, 0, true}},
		// Statuses.
		{"healthy", 200, jsonCT, v3(`[` + n("healthy") + `]`), got{health.Up, 1, 1, false}},
		{"mostly_healthy counts", 200, jsonCT, v3(`[` + n("mostly_healthy") + `]`), got{health.Up, 1, 1, false}},
		{"mostly_unhealthy does not", 200, jsonCT, v3(`[` + n("mostly_unhealthy") + `]`), got{health.Down, 0, 1, false}},
		{"unknown statuses are not healthy", 200, jsonCT,
			v3(`[` + n("HEALTHY") + `,` + n("") + `,` + n("up") + `,{"ip":"10.0.0.2","port":80}]`), got{health.Down, 0, 4, false}},
		{"escaped status still healthy", 200, jsonCT, v3(`[{"status":"health\u0079"}]`), got{health.Up, 1, 1, false}},
		// Purging nodes.
		{"purging node ignored", 200, jsonCT,
			v3(`[{"status":"unhealthy"},{"status":"healthy","purge_time":1767225610.532}]`), got{health.Down, 0, 1, false}},
		{"only purging nodes", 200, jsonCT, v3(`[{"status":"healthy","purge_time":1}]`), got{health.NoChecker, 0, 0, true}},
		{"purge_time null is not purging", 200, jsonCT, v3(`[{"status":"healthy","purge_time":null}]`), got{health.Up, 1, 1, false}},
		// 2.x format.
		{"v2 healthy_nodes []", 200, jsonCT,
			`{"name":"upstream#/upstreams/1","src_type":"upstreams","src_id":"1","nodes":[{"host":"a"}],"healthy_nodes":[]}`, got{health.Down, 0, 1, false}},
		{"v2 both empty", 200, jsonCT,
			`{"name":"upstream#/upstreams/1","src_type":"upstreams","src_id":"1","nodes":{},"healthy_nodes":{}}`, got{health.NoChecker, 0, 0, true}},
		{"v2 detected by src_type alone", 200, jsonCT,
			`{"name":"upstream#/upstreams/1","src_type":"upstreams","nodes":[{"host":"a"},{"host":"b"}]}`, got{health.Down, 0, 2, false}},
		{"v2 detected by healthy_nodes alone", 200, jsonCT,
			`{"name":"x","nodes":[{"host":"a"},{"host":"b"}],"healthy_nodes":[{"host":"b"}]}`, got{health.Up, 1, 2, false}},
		{"v2 healthy_nodes a string", 200, jsonCT, `{"name":"x","src_type":"upstreams","nodes":[{}],"healthy_nodes":"a"}`, got{health.Failed, 0, 0, true}},
		{"v2 node a number", 200, jsonCT, `{"name":"x","src_type":"upstreams","nodes":[1],"healthy_nodes":{}}`, got{health.Failed, 0, 0, true}},
		// Exact keys: APISIX sends each key once, in lower case.
		{"status in two cases", 200, jsonCT, v3(`[{"status":"unhealthy","STATUS":"healthy"}]`), got{health.Failed, 0, 0, true}},
		{"status only in another case", 200, jsonCT, v3(`[{"Status":"healthy"}]`), got{health.Failed, 0, 0, true}},
		{"status by Unicode folding", 200, jsonCT, v3(`[{"ſtatus":"healthy"}]`), got{health.Failed, 0, 0, true}},
		{"status twice", 200, jsonCT, v3(`[{"status":"unhealthy","status":"healthy"}]`), got{health.Failed, 0, 0, true}},
		{"purge_time twice", 200, jsonCT, v3(`[{"status":"healthy","purge_time":1,"purge_time":null}]`), got{health.Failed, 0, 0, true}},
		{"NODES is not nodes", 200, jsonCT, `{"name":"x","type":"http","NODES":[{"status":"unhealthy"}]}`, got{health.Failed, 0, 0, true}},
		{"nodes twice", 200, jsonCT, `{"name":"x","nodes":[{"status":"unhealthy"}],"nodes":[{"status":"healthy"}]}`, got{health.Failed, 0, 0, true}},
		{"NAME is not name", 200, jsonCT, `{"NAME":"x","nodes":[{"status":"healthy"}]}`, got{health.Failed, 0, 0, true}},
		{"unknown keys skipped", 200, jsonCT, `{"name":"x","weight":{"a":[1]},"nodes":[{"status":"healthy","extra":[{}]}],"checker_version":3}`, got{health.Up, 1, 1, false}},
		// One format per body.
		{"3.x body with a stray healthy_nodes", 200, jsonCT,
			`{"name":"/apisix/upstreams/api","type":"http","nodes":[{"status":"unhealthy"}],"healthy_nodes":[{"host":"a"}]}`, got{health.Failed, 0, 0, true}},
		{"3.x nodes with a stray healthy_nodes", 200, jsonCT,
			`{"name":"x","nodes":[{"ip":"10.0.0.1","status":"unhealthy"}],"healthy_nodes":[{}]}`, got{health.Failed, 0, 0, true}},
		{"src_type with type", 200, jsonCT, `{"name":"x","src_type":"upstreams","type":"http","nodes":[{"host":"a"}],"healthy_nodes":[{"host":"a"}]}`, got{health.Failed, 0, 0, true}},
		{"404 ERROR_MSG is not error_msg", 404, jsonCT, `{"ERROR_MSG":"upstreams[api] not found"}`, got{health.Failed, 0, 0, true}},
		{"404 error_msg twice", 404, jsonCT, `{"error_msg":"no checker for upstreams[api]","error_msg":"upstreams[api] not found"}`, got{health.Failed, 0, 0, true}},
		// Wrong shapes and broken JSON.
		{"nodes a string", 200, jsonCT, v3(`"10.0.0.1"`), got{health.Failed, 0, 0, true}},
		{"nodes a number", 200, jsonCT, v3(`3`), got{health.Failed, 0, 0, true}},
		{"nodes a non-empty object", 200, jsonCT, v3(`{"10.0.0.1:80":"healthy"}`), got{health.Failed, 0, 0, true}},
		{"node a number", 200, jsonCT, v3(`[1]`), got{health.Failed, 0, 0, true}},
		{"status a number", 200, jsonCT, v3(`[{"status":1}]`), got{health.Failed, 0, 0, true}},
		{"top-level array", 200, jsonCT, `[` + v3(`[]`) + `]`, got{health.Failed, 0, 0, true}},
		{"top-level number", 200, jsonCT, `42`, got{health.Failed, 0, 0, true}},
		{"top-level null", 200, jsonCT, `null`, got{health.Failed, 0, 0, true}},
		{"top-level string", 200, jsonCT, `"ok"`, got{health.Failed, 0, 0, true}},
		{"empty object has no name", 200, jsonCT, `{}`, got{health.Failed, 0, 0, true}},
		{"name not a string", 200, jsonCT, `{"name":1,"nodes":[]}`, got{health.Failed, 0, 0, true}},
		{"empty body", 200, jsonCT, ``, got{health.Failed, 0, 0, true}},
		{"truncated", 200, jsonCT, v3(`[` + n("healthy"))[:40], got{health.Failed, 0, 0, true}},
		{"trailing garbage", 200, jsonCT, v3(`[]`) + `}`, got{health.Failed, 0, 0, true}},
		{"garbage", 200, jsonCT, "\x00\xffnot json", got{health.Failed, 0, 0, true}},
		{"JSON whitespace around", 200, jsonCT, " \t\r\n" + v3(`[]`) + "\n", got{health.NoChecker, 0, 0, true}},
		{"form feed is not JSON whitespace", 200, jsonCT, v3(`[]`) + "\f", got{health.Failed, 0, 0, true}},
		// Content types.
		{"json with charset", 200, "application/json; charset=utf-8", v3(`[` + n("healthy") + `]`), got{health.Up, 1, 1, false}},
		{"no content type", 200, "", v3(`[` + n("healthy") + `]`), got{health.Up, 1, 1, false}},
		{"nginx default text/plain", 200, "text/plain", v3(`[` + n("healthy") + `]`), got{health.Up, 1, 1, false}},
		{"html with a json body", 200, "text/html; charset=utf-8", v3(`[` + n("healthy") + `]`), got{health.Failed, 0, 0, true}},
		// Statuses other than 200.
		{"404 no checker", 404, jsonCT, `{"error_msg":"no checker for upstreams[api]"}`, got{health.NoChecker, 0, 0, true}},
		{"404 not found", 404, jsonCT, `{"error_msg":"upstreams[api] not found"}`, got{health.NotFound, 0, 0, true}},
		{"404 missing src id", 404, jsonCT, `{"error_msg":"missing src id for src type upstreams"}`, got{health.Failed, 0, 0, true}},
		{"404 error_msg not a string", 404, jsonCT, `{"error_msg":1}`, got{health.Failed, 0, 0, true}},
		{"404 html", 404, "text/html", "<html><head><title>404 Not Found</title></head></html>", got{health.Failed, 0, 0, true}},
		{"404 plain text", 404, "text/plain", "not found", got{health.Failed, 0, 0, true}},
		{"404 html page with a json-looking body", 404, "text/html", `{"error_msg":"upstreams[api] not found"}`, got{health.Failed, 0, 0, true}},
		{"400", 400, jsonCT, `{"error_msg":"invalid src type upstream"}`, got{health.Failed, 0, 0, true}},
		{"500", 500, "text/html", "<html></html>", got{health.Failed, 0, 0, true}},
		{"503 with a healthy-looking body", 503, jsonCT, v3(`[` + n("healthy") + `]`), got{health.Failed, 0, 0, true}},
		{"302", 302, "", "", got{health.Failed, 0, 0, true}},
		{"204", 204, "", "", got{health.Failed, 0, 0, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := classify(tt.status, tt.ct, []byte(tt.body))
			if diff := cmp.Diff(tt.want, summary(r)); diff != "" {
				t.Errorf("classify(%d, %q, %q) mismatch (-want +got):\n%s\nerr: %v", tt.status, tt.ct, tt.body, diff, r.Err)
			}
		})
	}
}

// The reasons are what an operator reads in the error log.
func TestClassifyMessages(t *testing.T) {
	tests := []struct {
		name   string
		status int
		ct     string
		body   string
		want   string
	}{
		{"500", 500, "text/html", "<html></html>", "HTTP 500"},
		{"503 with error_msg", 503, jsonCT, `{"error_msg":"HTML template rendering: boom"}`, `HTTP 503: "HTML template rendering: boom"`},
		{"400", 400, jsonCT, `{"error_msg":"invalid src type upstream"}`, `HTTP 400: "invalid src type upstream"`},
		{"no checker", 404, jsonCT, `{"error_msg":"no checker for upstreams[api]"}`, `HTTP 404: "no checker for upstreams[api]"`},
		{"not found", 404, jsonCT, `{"error_msg":"upstreams[api] not found"}`, `HTTP 404: "upstreams[api] not found"`},
		{"html 404", 404, "text/html", "<html>", `HTTP 404 without an APISIX error body (content type "text/html")`},
		{"html 200", 200, "text/html", "<html>", `HTTP 200 with content type "text/html"`},
		{"truncated", 200, jsonCT, `{"name":"x","nodes":[`, "decode: unexpected end of JSON input"},
		{"top-level array", 200, jsonCT, `[]`, "decode: body is an array, not an object"},
		{"nodes a string", 200, jsonCT, `{"name":"x","nodes":"a"}`, `decode: "nodes" is a string, not a list`},
		{"empty nodes", 200, jsonCT, `{"name":"x","nodes":{}}`, "empty node list"},
		{"long message cut", 500, jsonCT, `{"error_msg":"` + strings.Repeat("x", 300) + `"}`, `HTTP 500: "` + strings.Repeat("x", 200) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := classify(tt.status, tt.ct, []byte(tt.body))
			if r.Err == nil || r.Err.Error() != tt.want {
				t.Errorf("classify(%d, %q, %q).Err = %v, want %q", tt.status, tt.ct, tt.body, r.Err, tt.want)
			}
		})
	}
}

func TestRefPathEscapes(t *testing.T) {
	tests := []struct {
		ref  Ref
		want string
	}{
		{Ref{Type: "upstreams", ID: "api"}, "/v1/healthcheck/upstreams/api"},
		{Ref{Type: "stream_routes", ID: "a.B-9_z"}, "/v1/healthcheck/stream_routes/a.B-9_z"},
		{Ref{Type: "upstreams", ID: "a b/c?d#e"}, "/v1/healthcheck/upstreams/a%20b%2Fc%3Fd%23e"},
		{Ref{Type: "upstreams", ID: "a/../b"}, "/v1/healthcheck/upstreams/a%2F..%2Fb"},
	}
	for _, tt := range tests {
		if got := refPath(tt.ref); got != tt.want {
			t.Errorf("refPath(%#v) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

// fixtures returns every captured body in testdata, by file name.
func fixtures(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no fixtures in testdata: %v", err)
	}
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		m[filepath.Base(f)] = b
	}
	return m
}

// FuzzDecode feeds arbitrary bodies to the classifier as a 200 and as a 404:
// it must not panic, and its Result must be self-consistent.
func FuzzDecode(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"name":"x","nodes":[{"status":"healthy","purge_time":null}],"healthy_nodes":{}}`))
	f.Add([]byte(`{"name":"x","nodes":{ }}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, status := range []int{200, 404} {
			r, _ := classify(status, jsonCT, body)
			checkResult(t, r)
			if r.Verdict != health.Failed && !json.Valid(body) {
				t.Errorf("HTTP %d %q: verdict %v for invalid JSON", status, body, r.Verdict)
			}
			if status == 404 && (r.Verdict == health.Up || r.Verdict == health.Down) {
				t.Errorf("HTTP 404 %q: verdict %v", body, r.Verdict)
			}
		}
	})
}

func checkResult(t *testing.T, r health.Result) {
	t.Helper()
	switch r.Verdict {
	case health.Up:
		if r.Healthy < 1 || r.Healthy > r.Total || r.Err != nil {
			t.Errorf("up with %d/%d healthy, err %v", r.Healthy, r.Total, r.Err)
		}
	case health.Down:
		if r.Healthy != 0 || r.Total < 1 || r.Err != nil {
			t.Errorf("down with %d/%d healthy, err %v", r.Healthy, r.Total, r.Err)
		}
	case health.NoChecker, health.NotFound, health.Failed:
		if r.Healthy != 0 || r.Total != 0 || r.Err == nil {
			t.Errorf("%v with %d/%d healthy, err %v", r.Verdict, r.Healthy, r.Total, r.Err)
		}
	default:
		t.Errorf("unknown verdict %d", int(r.Verdict))
	}
}

// BenchmarkDecode measures the classification of each single-resource
// fixture as a 200 body.
func BenchmarkDecode(b *testing.B) {
	for name, body := range fixtures(b) {
		if strings.HasPrefix(name, "error-") || strings.Contains(name, "list") || strings.Contains(name, "-only") || strings.Contains(name, "TEST5") || strings.Contains(name, "TEST6") {
			continue
		}
		b.Run(strings.TrimSuffix(name, ".json"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if r, _ := classify(200, jsonCT, body); r.Verdict == health.Failed {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// FuzzValidJSON holds validJSON to json.Valid, on the fixtures and on
// values cut, padded and nested around the scanner's edges.
func FuzzValidJSON(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{"", " ", "5", " 5 ", "-", "1e", "{}x", "{} ", `"\u00e9"`, `[1,2`, `{"a":1,}`, "\x00", "[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]", "nul", "true false"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// An answer is used only for the resource it names: a 200 body's name ends
// with "/<type>/<id>" in every format APISIX sends, a 404 names
// "<type>[<id>]"; anything naming another resource is refused.
func TestAnswerNamesItsResource(t *testing.T) {
	up1 := Ref{Type: "upstreams", ID: "1"}
	tests := []struct {
		name   string
		status int
		body   string
		ref    Ref
		ok     bool
	}{
		{"etcd mode", 200, `{"name":"/apisix/upstreams/1","nodes":{}}`, up1, true},
		{"standalone", 200, `{"name":"/upstreams/1","nodes":{}}`, up1, true},
		{"2.x", 200, `{"name":"upstream#\/apisix\/upstreams\/1","nodes":[]}`, up1, true},
		{"route", 200, `{"name":"/apisix/routes/1","nodes":{}}`, Ref{Type: "routes", ID: "1"}, true},
		{"another id", 200, `{"name":"/apisix/upstreams/11","nodes":{}}`, up1, false},
		{"id a suffix of the name's", 200, `{"name":"/apisix/upstreams/21","nodes":{}}`, up1, false},
		{"another type", 200, `{"name":"/apisix/routes/1","nodes":{}}`, up1, false},
		{"no name: decode fails it", 200, `{"nodes":{}}`, up1, true},
		{"404 no checker", 404, `{"error_msg":"no checker for upstreams[1]"}`, up1, true},
		{"404 not found", 404, `{"error_msg":"upstreams[1] not found"}`, up1, true},
		{"404 of another", 404, `{"error_msg":"no checker for upstreams[2]"}`, up1, false},
		{"404 of another type", 404, `{"error_msg":"no checker for stream_routes[1]"}`, Ref{Type: "routes", ID: "1"}, false},
		{"404 of another, not found", 404, `{"error_msg":"upstreams[11] not found"}`, up1, false},
		{"500", 500, `{"error_msg":"whatever"}`, up1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := answerFor(tt.status, []byte(tt.body), tt.ref)
			if (err == nil) != tt.ok {
				t.Errorf("answersFor(%d, %s, %v) = %v; want ok %v", tt.status, tt.body, tt.ref, err, tt.ok)
			}
		})
	}
}

// Every one-resource answer in testdata is accepted for the request it
// answered (the resource APISIX's own test asked for, or the file's
// realistic one), under every key spelling a config may use for it: the
// check must never turn a genuine answer into Failed, which the failure
// policy would judge. The refs here are written out, not read from the
// bodies, so a body whose name does not match its request would show.
func TestRealAnswersAreForTheirRequest(t *testing.T) {
	api := "/apisix/upstreams/api"
	for file, key := range map[string]string{
		"t-2.15.3-control-healthcheck-TEST1-upstreams-1.json":      "/upstreams/1",
		"t-2.15.3-control-healthcheck-TEST3-services-1.json":       "/services/1",
		"t-3.18.0-control-healthcheck-TEST2-routes-1.json":         "/routes/1",
		"t-3.18.0-control-healthcheck-TEST3-services-1.json":       "/services/1",
		"t-3.18.0-control-healthcheck-TEST5-404.json":              "/routes/1",
		"t-3.18.0-control-healthcheck-TEST7-routes-1-passive.json": "/routes/1",
		"v2-upstream-all-healthy.json":                             api,
		"v2-upstream-all-unhealthy.json":                           api,
		"v2-upstream-mixed.json":                                   api,
		"v3-mostly-healthy.json":                                   api,
		"v3-mostly-unhealthy.json":                                 api,
		"v3-route-inline-yaml-mode.json":                           "/routes/1",
		"v3-service-active-port-override.json":                     "/services/1",
		"v3-stream-route.json":                                     "/apisix/stream_routes/1",
		"v3-upstream-all-healthy.json":                             api,
		"v3-upstream-all-unhealthy.json":                           api,
		"v3-upstream-mixed.json":                                   api,
		"v3-upstream-no-checker-yet.json":                          api,
		"v3-upstream-pending-purge.json":                           api,
		"v3.3-upstream-mixed-no-hostname.json":                     api,
		"error-404-no-checker.json":                                api,
		"error-404-not-found.json":                                 api,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		status := http.StatusOK
		if strings.HasPrefix(file, "error-404") || strings.HasSuffix(file, "-404.json") {
			status = http.StatusNotFound
		}
		ref, err := ParseRef(key)
		if err != nil {
			t.Fatal(err)
		}
		// The same resource as etcd mode (default and custom prefix) and
		// standalone mode name it: only type and id identify it.
		for _, k := range []string{key, "/apisix/" + ref.Type + "/" + ref.ID, "/" + ref.Type + "/" + ref.ID, "/gw/prod/" + ref.Type + "/" + ref.ID} {
			r, err := ParseRef(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := answerFor(status, b, r); err != nil {
				t.Errorf("%s for %s: %v", file, k, err)
			}
		}
	}
}

// The spellings APISIX has used that the fixtures do not all hold: ids of
// every character the config admits, a custom etcd prefix, 2.x's escaped
// slashes for each type, and JSON's \u escapes. A look-alike of another
// type or id is refused.
func TestAnswerNameSpellings(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		ref        Ref
		ok         bool
	}{
		{"id of every admitted character", `{"name":"/apisix/upstreams/A.b-9_z","nodes":{}}`, Ref{Type: "upstreams", ID: "A.b-9_z"}, true},
		{"64-character id", `{"name":"/apisix/routes/` + strings.Repeat("x", 64) + `","nodes":{}}`, Ref{Type: "routes", ID: strings.Repeat("x", 64)}, true},
		{"custom etcd prefix", `{"name":"/gw/prod/services/web","nodes":{}}`, Ref{Type: "services", ID: "web"}, true},
		{"2.x service", `{"healthy_nodes":{},"name":"upstream#\/apisix\/services\/1","nodes":[],"src_id":"1","src_type":"services"}`, Ref{Type: "services", ID: "1"}, true},
		{"2.x route, plain slashes (3.2)", `{"healthy_nodes":{},"name":"upstream#/apisix/routes/1","nodes":[],"src_id":"1","src_type":"routes"}`, Ref{Type: "routes", ID: "1"}, true},
		{"unicode escapes", `{"name":"\u002fapisix\u002fupstreams\u002f1","nodes":{}}`, Ref{Type: "upstreams", ID: "1"}, true},
		{"404 of a stream route", `{"error_msg":"stream_routes[1] not found"}`, Ref{Type: "stream_routes", ID: "1"}, true},
		{"stream route for a route", `{"name":"/apisix/stream_routes/1","nodes":{}}`, Ref{Type: "routes", ID: "1"}, false},
		{"route for a stream route", `{"name":"/apisix/routes/1","nodes":{}}`, Ref{Type: "stream_routes", ID: "1"}, false},
		{"404 of a stream route for a route", `{"error_msg":"stream_routes[1] not found"}`, Ref{Type: "routes", ID: "1"}, false},
		{"id that ends the asked one", `{"name":"/apisix/upstreams/x.1","nodes":{}}`, Ref{Type: "upstreams", ID: "1"}, false},
		{"name that only starts with the asked one", `{"name":"/apisix/upstreams/1/","nodes":{}}`, Ref{Type: "upstreams", ID: "1"}, false},
		{"404 no checker of an id ending the asked one", `{"error_msg":"no checker for upstreams[x1]"}`, Ref{Type: "upstreams", ID: "1"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status := http.StatusOK
			if strings.Contains(tt.body, "error_msg") {
				status = http.StatusNotFound
			}
			if err := answerFor(status, []byte(tt.body), tt.ref); (err == nil) != tt.ok {
				t.Errorf("answersFor(%s, %v) = %v; want ok %v", tt.body, tt.ref, err, tt.ok)
			}
		})
	}
}

// answerFor checks a JSON answer for ref as the client does: classify reads
// what it is about, answersFor compares.
func answerFor(status int, body []byte, ref Ref) error {
	_, about := classify(status, "application/json", body)
	return answersFor(status, about, ref)
}
