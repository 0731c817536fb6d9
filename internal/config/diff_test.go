package config

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/health"
)

func TestDiff(t *testing.T) {
	old, err := Load("testdata/seed.yaml", apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   Changes
	}{
		{"nothing", func(*Config) {}, Changes{}},
		// Bound at start-up: a reload must be rejected.
		{"interface", func(c *Config) { c.Interface = "eth9" }, restart("interface")},
		{"main_log", func(c *Config) { c.MainLog = "/tmp/main.log" }, restart("main_log")},
		{"error_log", func(c *Config) { c.ErrorLog = "/tmp/error.log" }, restart("error_log")},
		{"log_format", func(c *Config) { c.LogFormat = "json" }, restart("log_format")},
		{"status_listen", func(c *Config) { c.StatusListen = "127.0.0.1:1" }, restart("status_listen")},
		{"control_socket", func(c *Config) { c.ControlSocket = "/tmp/rhi.sock" }, restart("control_socket")},
		{"bird.socket", func(c *Config) { c.Bird.Socket = "/tmp/bird.ctl" }, restart("bird.socket")},
		{"state_file", func(c *Config) { c.StateFile = "/elsewhere/owned" }, restart("state_file")},
		// The control API client is built from these.
		{"apisix_control_url", func(c *Config) { c.ControlURL = "http://127.0.0.1:9091" }, Changes{Keys: []string{"apisix_control_url"}, Health: true}},
		{"apisix_timeout", func(c *Config) { c.Timeout += time.Second }, Changes{Keys: []string{"apisix_timeout"}, Health: true}},
		{"apisix_poll_mode", func(c *Config) { c.PollMode = "list" }, Changes{Keys: []string{"apisix_poll_mode"}, Health: true}},
		// Applied by a reload, with the client kept.
		{"apisix_poll_interval", func(c *Config) { c.PollInterval += time.Second }, keys("apisix_poll_interval")},
		{"bird.timeout", func(c *Config) { c.Bird.Timeout += time.Second }, keys("bird.timeout")},
		{"bird.protocols", func(c *Config) { c.Bird.Protocols = append(c.Bird.Protocols, "other") }, keys("bird.protocols")},
		{"failure_policy.max_failed_polls", func(c *Config) { c.FailurePolicy.MaxFailedPolls++ }, keys("failure_policy.max_failed_polls")},
		{"drain_file", func(c *Config) { c.DrainFile = "/elsewhere/drain" }, keys("drain_file")},
		{"a VIP's upstreams", func(c *Config) { c.VIPs[0].Upstreams = health.Upstreams("/apisix/upstreams/x") }, keys("vips")},
		{"one VIP less", func(c *Config) { c.VIPs = c.VIPs[1:] }, keys("vips")},
		{"a VIP's address", func(c *Config) { c.VIPs[0].Address = netip.MustParsePrefix("192.0.2.1/32") }, keys("vips")},
		{"rise and fall", func(c *Config) { c.Rise++; c.Fall++ }, keys("rise", "fall")},
		{"several at once, in the Config's order", func(c *Config) {
			c.StateFile, c.ControlURL, c.Interface, c.Rise = "/x", "http://[::1]:9090", "eth9", 7
		}, Changes{Keys: []string{"apisix_control_url", "interface", "rise", "state_file"}, RestartOnly: []string{"interface", "state_file"}, Health: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := clone(old)
			tt.change(next)
			got := Diff(old, next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
			if got.Reloadable() != (len(tt.want.RestartOnly) == 0) {
				t.Errorf("Reloadable() = %v with restart-only keys %v", got.Reloadable(), got.RestartOnly)
			}
			if back := Diff(next, old); !slices.Equal(back.Keys, got.Keys) {
				t.Errorf("Diff is not symmetric: %v one way, %v the other", got.Keys, back.Keys)
			}
		})
	}
}

// TestDiffKnowsEveryKey: the keys named as restart-only or as the control
// API client's are keys of the Config, so a renamed key cannot drop out of
// the lists unnoticed; and every key is compared.
func TestDiffKnowsEveryKey(t *testing.T) {
	var all []string
	v := reflect.ValueOf(Config{})
	walk(v, v, "", func(key string, _, _ reflect.Value) { all = append(all, key) })
	named := []string{"interface", "main_log", "error_log", "log_format", "status_listen", "control_socket", "bird.socket", "state_file", "degraded.interface",
		"last_resort.interface", "site_id",
		"apisix_control_url", "apisix_timeout", "apisix_poll_mode"}
	for _, k := range named {
		if !slices.Contains(all, k) {
			t.Errorf("%q is not a key of Config (keys: %v)", k, all)
		}
	}
	var restartOnly []string
	for _, k := range all {
		if IsRestartOnly(k) {
			restartOnly = append(restartOnly, k)
		}
	}
	if want := named[:11]; !slices.Equal(slices.Sorted(slices.Values(restartOnly)), slices.Sorted(slices.Values(want))) {
		t.Errorf("restart-only keys %v, want %v", restartOnly, want)
	}
	// Every leaf of the file is a key of its own, sections included.
	for _, k := range []string{"failure_policy.control_api_unreachable", "failure_policy.no_checker", "bird.protocols", "unmanaged_addresses", "vips", "on_shutdown"} {
		if !slices.Contains(all, k) {
			t.Errorf("%q is not compared (keys: %v)", k, all)
		}
	}
}

func restart(key string) Changes { return Changes{Keys: []string{key}, RestartOnly: []string{key}} }

func keys(k ...string) Changes { return Changes{Keys: k} }

// clone copies c deeply enough for the tests to change any key.
func clone(c *Config) *Config {
	n := *c
	n.Bird.Protocols = slices.Clone(c.Bird.Protocols)
	n.VIPs = slices.Clone(c.VIPs)
	for i := range n.VIPs {
		n.VIPs[i].Upstreams = slices.Clone(c.VIPs[i].Upstreams)
	}
	return &n
}

// The three tests below were cmd/rhi's tests of its hand list of
// restart-only keys, moved here with the rule.

func TestRestartOnly(t *testing.T) {
	a, b := Default(), Default()
	if k := Diff(&a, &b).RestartOnly; len(k) != 0 {
		t.Errorf("same config: %v", k)
	}
	b.Interface, b.StatusListen, b.PollInterval, b.LogFormat = "rhi1", "", 1, "json"
	if k := strings.Join(Diff(&a, &b).RestartOnly, ","); k != "interface,log_format,status_listen" {
		t.Errorf("got %q", k)
	}
}

func TestRestartOnlyControlSocket(t *testing.T) {
	a, b := Default(), Default()
	b.ControlSocket = "/run/rhi/other.sock"
	if k := strings.Join(Diff(&a, &b).RestartOnly, ","); k != "control_socket" {
		t.Errorf("restartOnly = %q, want control_socket", k)
	}
}

// TestDiffKeepsTheOwnershipRecord: the record is read at start-up, so a
// reload that moves it is rejected rather than half applied.
func TestDiffKeepsTheOwnershipRecord(t *testing.T) {
	started, err := Load("testdata/seed.yaml", apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	moved := *started
	moved.StateFile = "/elsewhere/owned"
	if got := Diff(started, &moved).RestartOnly; len(got) != 1 || got[0] != "state_file" {
		t.Errorf("restartOnly = %v, want [state_file]", got)
	}
}

// TestDiffComparesEveryAcceptedKey: each key the parser accepts is one
// Diff compares (a section, by its keys), so no change escapes a reload's
// check.
func TestDiffComparesEveryAcceptedKey(t *testing.T) {
	var all []string
	v := reflect.ValueOf(Config{})
	walk(v, v, "", func(key string, _, _ reflect.Value) { all = append(all, key) })
	accepted := []string{}
	for _, k := range topKeys {
		switch k {
		case "failure_policy", "bird", "degraded", "fail_open", "last_resort":
		default:
			accepted = append(accepted, k)
		}
	}
	for _, k := range policyKeys {
		accepted = append(accepted, "failure_policy."+k)
	}
	for _, k := range birdKeys {
		accepted = append(accepted, "bird."+k)
	}
	for _, k := range degradedKeys {
		accepted = append(accepted, "degraded."+k)
	}
	for _, k := range failOpenKeys {
		if k != "release" { // read only to warn that it is ignored
			accepted = append(accepted, "fail_open."+k)
		}
	}
	for _, k := range lastResortKeys {
		accepted = append(accepted, "last_resort."+k)
	}
	for _, k := range accepted {
		if !slices.Contains(all, k) {
			t.Errorf("the parser accepts %q, but Diff does not compare it (keys: %v)", k, all)
		}
	}
}

// TestRestartOnlyDocumented: where docs/configuration.md has a row for a
// key, its "on reload" column says "restart only" exactly for the keys
// IsRestartOnly names. (A key with no row is TestConfigKeysDocumented's.)
func TestRestartOnlyDocumented(t *testing.T) {
	rows, _ := docKeys(t)
	for key, cells := range rows {
		if len(cells) < 4 || strings.Contains(key, "[]") || key == "bird" || key == "failure_policy" {
			continue
		}
		says := strings.TrimSpace(cells[3]) == "restart only"
		if says != IsRestartOnly(key) {
			t.Errorf("%s: on reload %q in %s, but IsRestartOnly = %v", key, strings.TrimSpace(cells[3]), configDoc, IsRestartOnly(key))
		}
	}
}
