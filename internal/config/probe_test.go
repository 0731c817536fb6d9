package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/probespec"
)

func TestProbeParsed(t *testing.T) {
	const doc = `vips:
  - address: 192.0.2.10
    upstreams: [/apisix/upstreams/api]
    probe: {url: "http://127.0.0.1:9080/healthz", host: api.example.com, expect_status: [200, 204], timeout: 1s}
  - address: 192.0.2.11
    upstreams: [/apisix/upstreams/web]
    probe:
      url: https://127.0.0.1:9443/healthz
      tls_server_name: www.example.com
      insecure_skip_verify: true
  - address: 192.0.2.12
    upstreams: [/apisix/upstreams/web]
`
	c, err := Parse("rhi.yaml", []byte(doc), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	want0 := probespec.Spec{URL: "http://127.0.0.1:9080/healthz", Host: "api.example.com", ExpectStatus: []int{200, 204}, Timeout: time.Second}
	want1 := probespec.Spec{URL: "https://127.0.0.1:9443/healthz", ExpectStatus: []int{200}, Timeout: probespec.DefaultTimeout, TLSServerName: "www.example.com", InsecureSkipVerify: true}
	if c.VIPs[0].Probe == nil || !c.VIPs[0].Probe.Equal(want0) {
		t.Errorf("vips[0].probe = %+v, want %+v", c.VIPs[0].Probe, want0)
	}
	if c.VIPs[1].Probe == nil || !c.VIPs[1].Probe.Equal(want1) {
		t.Errorf("vips[1].probe = %+v, want %+v", c.VIPs[1].Probe, want1)
	}
	if c.VIPs[2].Probe != nil {
		t.Errorf("vips[2].probe = %+v, want none", c.VIPs[2].Probe)
	}
	ws := Warnings(c)
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "vips[1].probe.insecure_skip_verify: the certificate is not checked") {
		t.Errorf("Warnings = %q, want one for vips[1].probe.insecure_skip_verify", ws)
	}
	// Printed and read again, the probes survive; a reload sees a change.
	out, err := Format(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("formatted", out, apisixKeys)
	if err != nil {
		t.Fatalf("Format's output does not parse: %v\n%s", err, out)
	}
	if ch := Diff(c, again); len(ch.Keys) != 0 {
		t.Errorf("round trip changed %v:\n%s", ch.Keys, out)
	}
	again.VIPs[0].Probe.ExpectStatus = []int{200}
	if ch := Diff(c, again); !cmp.Equal(ch.Keys, []string{"vips"}) || !ch.Reloadable() {
		t.Errorf("a changed probe: Diff = %+v, want a reloadable change of vips", ch)
	}
}

func TestProbeErrors(t *testing.T) {
	const doc = `vips:
  - address: 192.0.2.10
    upstreams: [/apisix/upstreams/api]
    probe:
      url: http://user:hunter2@127.0.0.1:9080/healthz
      expect_status: [200, 600]
      timeout: 0s
      bogus: 1
  - address: 192.0.2.11
    upstreams: [/apisix/upstreams/api]
    probe: {url: "ftp://127.0.0.1/"}
  - address: 192.0.2.12
    upstreams: [/apisix/upstreams/api]
    probe:
  - address: 192.0.2.13
    upstreams: [/apisix/upstreams/api]
    probe: {host: a.example}
  - address: 192.0.2.14
    upstreams: [/apisix/upstreams/api]
    probe: {url: "http://127.0.0.1/", tls_server_name: a.example, insecure_skip_verify: yes}
  - address: 192.0.2.15
    upstreams: [/apisix/upstreams/api]
    probe: {url: "http://127.0.0.1/", expect_status: [], host: "bad host"}
  - address: 192.0.2.16
    upstreams: [/apisix/upstreams/api]
    probe: {url: "http://127.0.0.1/", expect_status: [ok]}
  - address: 192.0.2.17
    upstreams: [/apisix/upstreams/api]
    probe: "http://127.0.0.1/"
`
	_, err := Parse("rhi.yaml", []byte(doc), apisixKeys)
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	const urlAllowed = "allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)"
	want := []string{
		`rhi.yaml:5: vips[0].probe.url: must not have user info (sent in clear to every hop; rhi has no place for secrets) (got "http://xxxxx@127.0.0.1:9080/healthz"; ` + urlAllowed,
		`rhi.yaml:6: vips[0].probe.expect_status[1]: not an HTTP status (got "600"; allowed: 100-599)`,
		`rhi.yaml:7: vips[0].probe.timeout: must be positive (got "0s")`,
		`rhi.yaml:8: vips[0].probe.bogus: unknown key (allowed: url, host, expect_status, timeout, tls_server_name, insecure_skip_verify)`,
		`rhi.yaml:11: vips[1].probe.url: scheme must be http or https (got "ftp://127.0.0.1/"; ` + urlAllowed,
		`rhi.yaml:14: vips[2].probe: empty: leave the key out for no probe (allowed: a mapping with at least url)`,
		`rhi.yaml:17: vips[3].probe.url: required key missing (` + urlAllowed,
		`rhi.yaml:20: vips[4].probe.insecure_skip_verify: unknown value (got "yes"; allowed: true, false)`,
		`rhi.yaml:20: vips[4].probe.tls_server_name: only for an https url (got "a.example")`,
		`rhi.yaml:23: vips[5].probe.host: not a host name or address, with an optional port (got "bad host"; allowed: e.g. api.example.com)`,
		`rhi.yaml:23: vips[5].probe.expect_status: empty: leave the key out for the default [200] (allowed: HTTP status codes 100-599)`,
		`rhi.yaml:26: vips[6].probe.expect_status[0]: not an HTTP status (got "ok"; allowed: 100-599)`,
		`rhi.yaml:29: vips[7].probe: must be a mapping, not a single value`,
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an error shows the password: %v", err)
	}
}
