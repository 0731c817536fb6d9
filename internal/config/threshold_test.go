package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/health"
)

func TestParseMinHealthy(t *testing.T) {
	tests := []struct {
		in      string
		want    health.MinHealthy
		wantMsg string
	}{
		{"1", health.MinHealthy{Count: 1}, ""},
		{"10", health.MinHealthy{Count: 10}, ""},
		{"1%", health.MinHealthy{Percent: 1}, ""},
		{"50%", health.MinHealthy{Percent: 50}, ""},
		{"100%", health.MinHealthy{Percent: 100}, ""},
		{"0", health.MinHealthy{}, "must be at least 1"},
		{"-1", health.MinHealthy{}, "must be at least 1"},
		{"+2", health.MinHealthy{}, "not a count or a share"},
		{"0%", health.MinHealthy{}, "share must be at least 1%"},
		{"-5%", health.MinHealthy{}, "share must be at least 1%"},
		{"101%", health.MinHealthy{}, "share over 100%"},
		{"150%", health.MinHealthy{}, "share over 100%"},
		{"abc", health.MinHealthy{}, "not a count or a share"},
		{"50 %", health.MinHealthy{}, "not a share"},
		{"%", health.MinHealthy{}, "not a share"},
		{"2.5", health.MinHealthy{}, "not a count or a share"},
		{"", health.MinHealthy{}, "empty"},
	}
	for _, tt := range tests {
		got, is := parseMinHealthy(tt.in)
		if tt.wantMsg == "" {
			if !is.ok() || got != tt.want {
				t.Errorf("parseMinHealthy(%q) = %+v, %q; want %+v", tt.in, got, is.msg, tt.want)
			}
			continue
		}
		if is.ok() || !strings.HasPrefix(is.msg, tt.wantMsg) || is.allowed == "" {
			t.Errorf("parseMinHealthy(%q) = %+v, %q (allowed %q); want an error starting %q", tt.in, got, is.msg, is.allowed, tt.wantMsg)
		}
	}
}

// TestUpstreamThresholds: plain keys and mappings mix; a VIP's min_healthy
// is the default of its entries, an entry's own overrides it.
func TestUpstreamThresholds(t *testing.T) {
	const doc = `vips:
  - address: 192.0.2.10
    upstreams:
      - /apisix/upstreams/plain
      - {key: /apisix/upstreams/api, min_healthy: "50%"}
  - address: 192.0.2.11
    min_healthy: 2
    upstreams:
      - /apisix/upstreams/web
      - key: /apisix/upstreams/img
        min_healthy: "75%"
`
	c, err := Parse("rhi.yaml", []byte(doc), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	got := [][]health.MinHealthy{}
	for _, v := range c.VIPs {
		var row []health.MinHealthy
		for _, u := range v.Upstreams {
			row = append(row, u.MinHealthy)
		}
		got = append(got, row)
	}
	want := [][]health.MinHealthy{
		{{}, {Percent: 50}},
		{{Count: 2}, {Percent: 75}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thresholds (-want +got):\n%s", diff)
	}
	if c.VIPs[0].Upstreams[1].Key != "/apisix/upstreams/api" {
		t.Errorf("mapping entry parsed as %+v", c.VIPs[0].Upstreams[1])
	}
	// Printed and read again, the thresholds survive.
	out, err := Format(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("formatted", out, apisixKeys)
	if err != nil {
		t.Fatalf("Format's output does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(c.VIPs, again.VIPs) {
		t.Errorf("round trip: got %+v, want %+v", again.VIPs, c.VIPs)
	}
	// A changed threshold is a reloadable change of vips.
	again.VIPs[0].Upstreams[1].MinHealthy = health.MinHealthy{Count: 3}
	if ch := Diff(c, again); !cmp.Equal(ch.Keys, []string{"vips"}) || !ch.Reloadable() {
		t.Errorf("a changed threshold: Diff = %+v, want a reloadable change of vips", ch)
	}
}

func TestUpstreamThresholdErrors(t *testing.T) {
	const doc = `vips:
  - address: 192.0.2.10
    min_healthy: 0
    upstreams:
      - /apisix/upstreams/g
      - {key: /apisix/upstreams/a, min_healthy: "150%"}
      - {key: /apisix/upstreams/b, min_healthy: abc}
      - {key: /apisix/upstreams/c, min_healthy: 0}
      - {key: /apisix/upstreams/d, min_healthy: -3}
      - {key: /apisix/upstreams/e, min_healty: 2}
      - {min_healthy: 2}
      - {key: /apisix/upstream/f}
      - {key: /prefix/upstreams/g, min_healthy: 1}
      - {key: [x]}
`
	_, err := Parse("rhi.yaml", []byte(doc), apisixKeys)
	const allowed = `; allowed: a count of nodes, at least 1, or a share "1%"-"100%")`
	want := []string{
		`rhi.yaml:3: vips[0].min_healthy: must be at least 1 (leave the key out for "one healthy node") (got "0"` + allowed,
		`rhi.yaml:6: vips[0].upstreams[1].min_healthy: share over 100% (got "150%"` + allowed,
		`rhi.yaml:7: vips[0].upstreams[2].min_healthy: not a count or a share (got "abc"` + allowed,
		`rhi.yaml:8: vips[0].upstreams[3].min_healthy: must be at least 1 (leave the key out for "one healthy node") (got "0"` + allowed,
		`rhi.yaml:9: vips[0].upstreams[4].min_healthy: must be at least 1 (leave the key out for "one healthy node") (got "-3"` + allowed,
		`rhi.yaml:10: vips[0].upstreams[5].min_healty: unknown key (allowed: key, min_healthy)`,
		`rhi.yaml:11: vips[0].upstreams[6].key: required key missing`,
		`rhi.yaml:12: vips[0].upstreams[7].key: unknown resource type "upstream" (got "/apisix/upstream/f"; allowed: upstreams, routes, services, stream_routes)`,
		`rhi.yaml:13: vips[0].upstreams[8].key: same upstream as line 5 (got "/prefix/upstreams/g")`,
		`rhi.yaml:14: vips[0].upstreams[9].key: must be a single value, not a list`,
	}
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
