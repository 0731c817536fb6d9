package statushttp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/router"

	"github.com/rhi-daemon/rhi/internal/status"
)

func TestMetricsUnmanaged(t *testing.T) {
	s := sample()
	s.Interface.Unmanaged = []string{"10.0.0.77/32", "2001:db8::9/128"}
	s.Interface.RecordError = "read-only file system"
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v1"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{
		`rhi_unmanaged_addresses{iface="rhi0"} 2`,
		`rhi_unmanaged_address{address="10.0.0.77/32",iface="rhi0"} 1`,
		`rhi_unmanaged_address{address="2001:db8::9/128",iface="rhi0"} 1`,
		`rhi_ownership_record_error 1`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	src.s = sample()
	_, body = get(t, Handler(src, NewMetrics(src, "v1"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{`rhi_unmanaged_addresses{iface="rhi0"} 0`, `rhi_ownership_record_error 0`} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if strings.Contains(body, "rhi_unmanaged_address{") {
		t.Errorf("a per-address series without unmanaged addresses:\n%s", body)
	}
}

// oracleText is the status families as a plain client_golang collector
// writes them (constCollector: const metrics gathered by a pedantic registry
// and encoded by expfmt).
func oracleText(t testing.TB, s status.Status, now time.Time) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&constCollector{src: &fixed{s}, now: func() time.Time { return now }})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("oracle: gather: %v", err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatalf("oracle: encode %s: %v", mf.GetName(), err)
		}
	}
	return b.String()
}

// collectorText is the status families as the collector writes them.
func collectorText(s status.Status, now time.Time) string {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	(&collector{src: &fixed{s}, now: func() time.Time { return now }}).write(&textWriter{w: bw}, &s)
	bw.Flush()
	return b.String()
}

// parsedFamily is a family as expfmt's parser reads it: its series as
// `{a="x",b="y"} value` lines, sorted.
type parsedFamily struct {
	Help, Type string
	Series     []string
}

// parseText parses a text exposition with expfmt's parser.
func parseText(t *testing.T, text string) map[string]parsedFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%.2000s", err, text)
	}
	out := map[string]parsedFamily{}
	for name, mf := range mfs {
		f := parsedFamily{Help: mf.GetHelp(), Type: mf.GetType().String()}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			f.Series = append(f.Series, "{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
		sort.Strings(f.Series)
		out[name] = f
	}
	return out
}

// familyBlocks splits a text exposition into its families: the header
// lines as written, the series lines sorted. A family written twice fails.
func familyBlocks(t *testing.T, text string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var name string
	var headers, series []string
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := out[name]; dup {
			t.Errorf("family %s is written twice", name)
		}
		sort.Strings(series)
		out[name] = append(headers, series...)
		headers, series = nil, nil
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "# HELP ") {
			flush()
			name = strings.Fields(line)[2]
		}
		if strings.HasPrefix(line, "#") {
			headers = append(headers, line)
		} else if line != "" {
			series = append(series, line)
		}
	}
	flush()
	return out
}

// oddStatus is sample() with every value that formatting or escaping could
// get wrong, and every family that only some states have.
func oddStatus() status.Status {
	s := sample()
	odd := "a\"b\\c\nd ü✓ \\n"
	s.DryRun = true
	s.Interface.Name = `rhi"0\`
	s.Interface.Unmanaged = []string{"10.0.0.77/32", "2001:db8::9/128", odd}
	s.Interface.RecordError = "read-only file system"
	s.Interface.WriteErrors = 1 << 60
	s.Drain.Error = "bad drain"
	s.ControlAPI.Polls, s.ControlAPI.FailedPolls = 1000000, 123456789012
	s.Bird.Protocols = append(s.Bird.Protocols, router.ProtocolState{Name: odd, Established: true})
	v := s.VIPs[0]
	v.Address, v.Tier, v.Reason, v.FailedPolls, v.Transitions = odd, decide.TierDegraded, decide.ReasonPolicyAnnounce, 1234567, 1<<53+1
	v.Bird = &status.VIPConfirm{Agrees: true, Latency: 1500 * time.Microsecond, Renewed: 7}
	v.Probe = &status.ProbeStatus{Result: "up", LatencySeconds: 0.1234567890123}
	v.FailOpen = &status.VIPFailOpen{OtherSites: 2}
	s.FailOpen = &status.FailOpenStatus{Known: false, Error: "no ADD-PATH", LastResortInterface: "rhi2"}
	v.Upstreams = []status.UpstreamStatus{{Key: odd, Verdict: "failed", Healthy: 3, Nodes: 1e7}, {Key: "/apisix/upstreams/api", Verdict: "down"}}
	s.VIPs = append(s.VIPs, v)
	for i, lat := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 1e-9, 0, 1, 2.5e21} {
		w := s.VIPs[1]
		w.Address = fmt.Sprintf("2001:db8::%x/128", i)
		w.Probe = &status.ProbeStatus{Result: "down", LatencySeconds: lat}
		w.FailOpen = &status.VIPFailOpen{OtherSites: i - 1}
		if i%2 == 0 {
			w.Tier = decide.TierLastResort
		}
		w.Bird = &status.VIPConfirm{Agrees: i%3 == 0, Stale: i%4 == 1, Latency: time.Duration(i) * time.Second, Renewed: i}
		w.Upstreams = []status.UpstreamStatus{{Key: fmt.Sprintf("u%d", i%3), Verdict: verdicts[i%len(verdicts)], Healthy: i, Nodes: 2 * i}}
		s.VIPs = append(s.VIPs, w)
	}
	return s
}

// oracleCases are the statuses the collector is compared on.
func oracleCases() map[string]status.Status {
	cases := map[string]status.Status{
		"sample": sample(),
		"odd":    oddStatus(),
		// Enough VIPs for two /24s (10.0.0.0-255, 10.0.1.0-43); the
		// writer does not change with more, and 10,000 cost the oracle
		// seconds.
		"300":             statusN(300),
		"not ready":       {},
		"not ready, vips": {VIPs: sample().VIPs, Bird: sample().Bird, Interface: sample().Interface},
	}
	none := sample()
	none.VIPs = nil
	cases["no VIPs"] = none
	empty := sample()
	empty.VIPs = []status.VIPStatus{}
	cases["empty VIPs"] = empty
	away := oddStatus()
	away.Bird.Error = "dial unix /run/bird/bird.ctl: connect: connection refused"
	cases["BIRD away"] = away
	unknown := oddStatus()
	unknown.Bird.LastCheck = time.Time{}
	cases["BIRD not asked yet"] = unknown
	off := sample()
	off.Bird = status.BirdStatus{}
	cases["BIRD off"] = off
	noProto := sample()
	noProto.Bird.Protocols = nil
	cases["no protocols"] = noProto
	return cases
}

// TestCollectorAsOracle: the families the collector writes are those the
// const-metric collector makes, for many statuses: the
// same families, types, help, label sets and values once parsed by
// expfmt, and byte for byte the same family by family once series are
// sorted. Every family the collector may write is seen in some case.
func TestCollectorAsOracle(t *testing.T) {
	t.Parallel() // works while the parallel tests above wait
	seen := map[string]bool{}
	for name, s := range oracleCases() {
		for _, now := range []time.Time{t0.Add(time.Second), time.Now()} {
			want, got := oracleText(t, s, now), collectorText(s, now)
			// reflect.DeepEqual first: it agrees with cmp on maps of
			// strings and of plain structs, and cmp, many times slower,
			// is needed only for the diff.
			if wantP, gotP := parseText(t, want), parseText(t, got); !reflect.DeepEqual(wantP, gotP) {
				t.Errorf("%s: parsed families differ from the oracle's (-oracle +collector):\n%s", name, cmp.Diff(wantP, gotP))
			}
			wantB, gotB := familyBlocks(t, want), familyBlocks(t, got)
			if !reflect.DeepEqual(wantB, gotB) {
				t.Errorf("%s: text differs from the oracle's (-oracle +collector):\n%s", name, cmp.Diff(wantB, gotB))
			}
			for f := range gotB {
				seen[f] = true
			}
		}
	}
	for _, f := range statusFamilies() {
		if !seen[f.name] {
			t.Errorf("family %s is written in no case: the oracle does not check it", f.name)
		}
	}
	if len(seen) != len(statusFamilies()) {
		t.Errorf("the cases write %d families, statusFamilies lists %d", len(seen), len(statusFamilies()))
	}
}

// descFields reads the name, help and label names of a Desc, which keeps
// them private and shows them only in String.
var descFields = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: (".*"), unit: "", constLabels: \{\}, variableLabels: \{([^}]*)\}\}$`)

// TestStatusFamiliesAsDescribed: the collector's list of families is the
// oracle's Describe, names, help and labels (sorted), so that the docs
// test, which reads the list, sees every family.
func TestStatusFamiliesAsDescribed(t *testing.T) {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		(&constCollector{}).Describe(ch)
		close(ch)
	}()
	want := map[string]family{}
	for d := range ch {
		m := descFields.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		help, err := strconv.Unquote(m[2])
		if err != nil {
			t.Fatalf("help of %s: %v", d, err)
		}
		var labels []string
		if m[3] != "" {
			labels = strings.Split(m[3], ",")
			sort.Strings(labels)
		}
		want[m[1]] = family{name: m[1], help: help, labels: labels}
	}
	got := map[string]family{}
	for _, f := range statusFamilies() {
		if _, dup := got[f.name]; dup {
			t.Errorf("%s is listed twice", f.name)
		}
		if f.typ != "gauge" && f.typ != "counter" {
			t.Errorf("%s: type %q", f.name, f.typ)
		}
		f.typ = ""
		got[f.name] = f
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(family{})); diff != "" {
		t.Errorf("statusFamilies differs from the oracle's Describe (-oracle +collector):\n%s", diff)
	}
}

// oldHandler is /metrics the plain way: promhttp over the
// registry with the const-metric collector registered in it.
func oldHandler(t *testing.T, m *Metrics, src status.Source) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&constCollector{src: src, now: m.coll.now})
	return promhttp.HandlerFor(prometheus.Gatherers{m.reg, reg}, promhttp.HandlerOpts{})
}

// TestMetricsAsPromhttp: a whole /metrics is what promhttp serves:
// the same families (each once), and the same rhi_* families
// (help, type, series, values); the Go runtime's and the process's
// change from one gather to the next, so only their names are compared.
func TestMetricsAsPromhttp(t *testing.T) {
	for name, s := range oracleCases() {
		if len(s.VIPs) > 100 {
			continue // TestCollectorAsOracle has it; here it would take most of a second
		}
		src := &fixed{s}
		m := NewMetrics(src, "v1\"\\\n")
		m.ObservePoll(20*time.Millisecond, 0)
		m.Reloaded(false, t0)
		_, want := get(t, oldHandler(t, m, src), "/metrics")
		_, got := get(t, Handler(src, m, time.Now), "/metrics")
		wantF, gotF := parseText(t, want), parseText(t, got)
		// wantF loses the families compared by name only; wantAll keeps them.
		wantAll := maps.Clone(wantF)
		for f := range familyBlocks(t, got) { // fails on a family written twice
			if !strings.HasPrefix(f, "rhi_") {
				delete(wantF, f)
				delete(gotF, f)
				if _, ok := wantAll[f]; !ok {
					t.Errorf("%s: /metrics has %s, promhttp did not", name, f)
				}
			}
		}
		for f := range wantF {
			if !strings.HasPrefix(f, "rhi_") {
				t.Errorf("%s: /metrics lacks %s", name, f)
				delete(wantF, f)
			}
		}
		if diff := cmp.Diff(wantF, gotF); diff != "" {
			t.Errorf("%s: /metrics differs from promhttp's (-promhttp +now):\n%s", name, diff)
		}
	}
}

// TestMetricsHTTP: the content type is always the text format, gzip is
// served to a client that asks for it (as promhttp did), and name[]
// selects families.
func TestMetricsHTTP(t *testing.T) {
	src := &fixed{oddStatus()}
	m := NewMetrics(src, "v")
	h := Handler(src, m, time.Now)
	_, plain := get(t, h, "/metrics")

	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3")
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8; escaping=underscores" {
		t.Errorf("Content-Type %q", ct)
	}
	if ce := rec.Header().Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", ce)
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := familyBlocks(t, string(unzipped))["rhi_vip_desired"], familyBlocks(t, plain)["rhi_vip_desired"]; len(want) == 0 || !cmp.Equal(got, want) {
		t.Errorf("gzipped rhi_vip_desired %q, plain %q", got, want)
	}
	if len(parseText(t, string(unzipped))) != len(parseText(t, plain)) {
		t.Errorf("gzipped and plain bodies have different families")
	}

	_, some := get(t, h, "/metrics?name[]=rhi_vip_desired&name[]=rhi_build_info&name[]=rhi_bgp_established")
	var names []string
	for f := range parseText(t, some) {
		names = append(names, f)
	}
	sort.Strings(names)
	if want := []string{"rhi_bgp_established", "rhi_build_info", "rhi_vip_desired"}; !cmp.Equal(names, want) {
		t.Errorf("name[] selects %v, want %v", names, want)
	}
}

// TestAcceptsGzip: the encoding is chosen as promhttp chose it (identity
// offered first, then gzip).
func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		headers []string
		want    bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"identity"}, false},
		{[]string{"*"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"identity;q=0.5, gzip;q=0.4"}, false},
		{[]string{"identity;q=0.5", "gzip;q=0.6"}, true},
		{[]string{"br"}, false},
	} {
		if got := acceptsGzip(tt.headers); got != tt.want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tt.headers, got, tt.want)
		}
	}
}

// BenchmarkMetrics10000Gzip is BenchmarkMetrics10000 as Prometheus asks
// (Accept-Encoding: gzip), served by rhi and by promhttp.
func BenchmarkMetrics10000Gzip(b *testing.B) {
	src := &fixed{status10000()}
	m := NewMetrics(src, "dev")
	reg := prometheus.NewRegistry()
	reg.MustRegister(&constCollector{src: src, now: m.coll.now})
	for _, h := range []struct {
		name string
		h    http.Handler
	}{
		{"text", Handler(src, m, time.Now)},
		{"promhttp", promhttp.HandlerFor(prometheus.Gatherers{m.reg, reg}, promhttp.HandlerOpts{})},
	} {
		b.Run(h.name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", "/metrics", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				h.h.ServeHTTP(discardWriter{}, req)
			}
		})
	}
}

// TestMetricsPromtool: promtool, when installed, finds nothing to say of a
// /metrics with odd label values.
func TestMetricsPromtool(t *testing.T) {
	t.Parallel() // mostly waits for promtool
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed")
	}
	src := &fixed{oddStatus()}
	_, body := get(t, Handler(src, NewMetrics(src, "v"), time.Now), "/metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsInvalidUTF8: a label value that is not UTF-8 (a protocol name
// as BIRD printed it, unchecked when bird.protocols is empty) is written
// with U+FFFD in place of the bad bytes, so the scrape still parses: one
// bad byte would make Prometheus reject the whole page. (A const-metric
// collector panics in the registry on it.)
func TestMetricsInvalidUTF8(t *testing.T) {
	s := sample()
	s.Bird.Protocols = append(s.Bird.Protocols, router.ProtocolState{Name: "peer\xff\xfe7", Established: true})
	src := &fixed{s}
	_, text := get(t, Handler(src, NewMetrics(src, "v"), time.Now), "/metrics")
	got := parseText(t, text)["rhi_bgp_established"] // fails on invalid UTF-8
	if want := `{protocol="peer` + "\uFFFD" + `7"} 1`; !slices.Contains(got.Series, want) {
		t.Errorf("rhi_bgp_established %q lacks %q", got.Series, want)
	}
}

// Two VIPs naming one resource in both spellings read one upstream: one
// series of each upstream family, under the first key.
func TestMetricsUpstreamSpellings(t *testing.T) {
	s := sample()
	s.VIPs = []status.VIPStatus{
		{Address: "10.0.0.1/32", Upstreams: []status.UpstreamStatus{{Key: "/upstreams/1", Verdict: "up", Healthy: 1, Nodes: 2}}},
		{Address: "10.0.0.2/32", Upstreams: []status.UpstreamStatus{{Key: "/apisix/upstreams/1", Verdict: "up", Healthy: 1, Nodes: 2}}},
	}
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v1"), func() time.Time { return t0 }), "/metrics")
	if !strings.Contains(body, `rhi_upstream_healthy_nodes{upstream="/upstreams/1"} 1`) {
		t.Errorf("/metrics lacks the first key's series:\n%s", body)
	}
	if strings.Contains(body, `upstream="/apisix/upstreams/1"`) {
		t.Errorf("/metrics has a second series for one resource")
	}
}
