package config

import (
	"strings"
	"testing"
)

// TestWarningsDurations: a duration written as a large whole number, and a
// poll interval over a minute, are valid and warned about, naming the key,
// the value as written and its line; small whole numbers and units do not
// warn.
func TestWarningsDurations(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each a substring of one warning, in order; nil: none
	}{
		{"default", "", nil},
		{"bare small", "apisix_poll_interval: 3\napisix_timeout: 60\n", nil},
		{"with unit", "apisix_poll_interval: 500ms\nfailure_policy:\n  max_failed_polls: 10\nbird:\n  timeout: 90s\n", nil},
		{"a minute is fine", "apisix_poll_interval: 1m\n", nil},
		{"bare 500 poll", "rise: 1\napisix_poll_interval: 500\n", []string{
			`apisix_poll_interval (line 2): the whole number "500" is read as seconds, 8m20s; write 500ms`,
			`apisix_poll_interval (line 2): 8m20s is over 1m0s`,
		}},
		{"long poll with unit", "apisix_poll_interval: 2m\n", []string{
			`apisix_poll_interval (line 1): 2m0s is over 1m0s`,
		}},
		{"bare timeout", "apisix_timeout: 5000\n", []string{
			`apisix_timeout (line 1): the whole number "5000" is read as seconds, 1h23m20s; write 5000ms`,
		}},
		{"bare nested", "bird:\n  socket: /run/bird/bird.ctl\n  timeout: 2000\n", []string{
			`bird.timeout (line 3): the whole number "2000" is read as seconds`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("f.yaml", []byte(tt.yaml), apisixKeys)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := Warnings(c)
			if len(got) != len(tt.want) {
				t.Fatalf("Warnings = %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestDurationNotesFormatted: a Config formatted and read back has
// no notes (Format writes units), so a reload of the same values as
// check-config prints them does not warn again.
func TestDurationNotesFormatted(t *testing.T) {
	c, err := Parse("f.yaml", []byte("apisix_timeout: 5000\n"), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Format(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("formatted", out, apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(back); len(w) != 0 {
		t.Errorf("Warnings of the formatted file = %q, want none", w)
	}
}

// TestWarningsOffHost: a control API or probe target off loopback is valid
// and warned about, since the shipped unit only lets rhi reach localhost.
func TestWarningsOffHost(t *testing.T) {
	tests := []struct {
		yaml string
		want []string
	}{
		{"apisix_control_url: http://127.0.0.1:9090\n", nil},
		{"apisix_control_url: http://localhost:9090\n", nil},
		{"apisix_control_url: http://[::1]:9090\n", nil},
		{"apisix_control_url: http://192.0.2.10:9090\n", []string{`apisix_control_url: "192.0.2.10" is not on loopback`}},
		{"apisix_control_url: http://apisix.example:9090\n", []string{`apisix_control_url: "apisix.example" is not on loopback`}},
		{"vips:\n  - address: 10.0.0.1\n    upstreams: [/apisix/upstreams/a]\n    probe: {url: \"http://127.0.0.1:9080/\"}\n", nil},
		{"vips:\n  - address: 10.0.0.1\n    upstreams: [/apisix/upstreams/a]\n    probe: {url: \"http://198.51.100.7:80/\"}\n", []string{`vips[0].probe.url: "198.51.100.7" is not on loopback`, "IPAddressAllow=ADDRESS"}},
	}
	for _, tt := range tests {
		c, err := Parse("f.yaml", []byte(tt.yaml), apisixKeys)
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		got := strings.Join(Warnings(c), "\n")
		if tt.want == nil && got != "" {
			t.Errorf("%s: warnings %q, want none", tt.yaml, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warnings %q lack %q", tt.yaml, got, w)
			}
		}
	}
}
