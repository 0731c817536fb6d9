package config

import (
	"strings"
	"testing"
)

func TestDegradedParse(t *testing.T) {
	c, err := Parse("rhi.yaml", []byte(`degraded: {below: "50%"}
vips:
  - address: 10.0.0.1
    upstreams: [/upstreams/a]
  - address: 10.0.0.2
    upstreams: [/upstreams/a]
    degraded: {below: "12.5%", interface: rhi1}
  - address: 10.0.0.3
    upstreams: [/upstreams/a]
    degraded: {below: "0%"}
`), apisixKeys)

	if err != nil {
		t.Fatal(err)
	}
	if c.Degraded != (Degraded{Below: 50, Interface: "rhi1"}) {
		t.Errorf("global = %+v", c.Degraded)
	}
	for i, want := range []Percent{50, 12.5, 0} {
		if got := c.VIPs[i].Degraded.Below; got != want {
			t.Errorf("vips[%d].degraded.below = %v, want %v", i, got, want)
		}
	}
	if !c.VIPs[0].Degraded.On() || c.VIPs[2].Degraded.On() {
		t.Errorf("On: %v %v", c.VIPs[0].Degraded.On(), c.VIPs[2].Degraded.On())
	}
}

func TestDegradedProblems(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{`degraded: {below: "50"}`, `rhi.yaml:1: degraded.below: not a percentage (the % sign is required) (got "50"; allowed: a percentage from "0%" to "100%", e.g. "50%")`},
		{`degraded: {below: "150%"}`, `rhi.yaml:1: degraded.below: out of range (got "150%"`},
		{`degraded: {below: "x%"}`, `rhi.yaml:1: degraded.below: not a number (got "x%"`},
		{`degraded: {below: "-1%"}`, `rhi.yaml:1: degraded.below: out of range`},
		{`degraded: {below: "NaN%"}`, `rhi.yaml:1: degraded.below: not a number`},
		{`degraded: {below: "5%", colour: red}`, `rhi.yaml:1: degraded.colour: unknown key (allowed: below, interface)`},
		{`degraded: {below: "5%", interface: "a/b"}`, `rhi.yaml:1: degraded.interface: not a Linux interface name`},
		{"interface: rhi1\ndegraded: {below: \"5%\"}", `rhi.yaml:1: interface: degraded.interface and interface are the same: the degraded tier needs a second interface (got "rhi1")`},
		{"interface: x0\ndegraded: {below: \"5%\", interface: x0}", `rhi.yaml:2: degraded.interface: degraded.interface and interface are the same`},
		{"vips:\n  - address: 10.0.0.1\n    upstreams: [/upstreams/a]\n    degraded: {below: \"5%\", interface: rhi2}", `rhi.yaml:4: vips[0].degraded.interface: one degraded interface per daemon: must be degraded.interface (got "rhi2"; allowed: rhi1)`},
		{"vips:\n  - address: 10.0.0.1\n    upstreams: [/upstreams/a]\n    degraded: 5%", `rhi.yaml:4: vips[0].degraded: must be a mapping`},
	} {
		_, err := Parse("rhi.yaml", []byte(tc.yaml), apisixKeys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	// The same interface is fine while no VIP can be degraded.
	if _, err := Parse("rhi.yaml", []byte("interface: rhi1\n"), apisixKeys); err != nil {
		t.Errorf("interface rhi1 without the tier: %v", err)
	}
}

func TestDegradedInterfaceIsRestartOnly(t *testing.T) {
	a, b := Default(), Default()
	b.Degraded.Interface = "rhi9"
	if ch := Diff(&a, &b); len(ch.RestartOnly) != 1 || ch.RestartOnly[0] != "degraded.interface" {
		t.Errorf("RestartOnly = %v", ch.RestartOnly)
	}
	b = Default()
	b.Degraded.Below = 30
	if ch := Diff(&a, &b); !ch.Reloadable() || len(ch.Keys) != 1 || ch.Keys[0] != "degraded.below" {
		t.Errorf("below: %+v", ch)
	}
}
