package main

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/router"
)

// TestVerifyNagiosGolden runs `rhi verify --nagios` in the worlds of
// TestVerifyGolden: one line on stdout, nothing on stderr, the plugin state
// as exit code.
func TestVerifyNagiosGolden(t *testing.T) {
	tests := []struct {
		name string
		env  verifyEnv
		code int
	}{
		{"daemon-consistent", verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), iface: vBoth}, nagiosOK},
		{"poll-withdrawn-no-status-listen", verifyEnv{bird: "up-novip", noStatus: true, api: map[apisix.Ref]string{vAPI4: apisixtest.Unhealthy, vAPI6: apisixtest.Unhealthy}}, nagiosOK},
		{"daemon-bird-missed-the-addresses", verifyEnv{bird: "up-novip", daemon: vDaemonWants(true, true), iface: vBoth}, nagiosCritical},
		{"daemon-wants-withdrawn-bird-still-exports", verifyEnv{bird: "up-vip", daemon: vDaemonWants(false, true), iface: vBoth}, nagiosCritical},
		// Both sessions down: nothing carries the VIPs, which disagree.
		{"daemon-peer-down", verifyEnv{bird: "peerdown-vip", daemon: vDaemonWants(true, true), iface: vBoth}, nagiosCritical},
		// bird.protocols names a session BIRD does not have; the others
		// carry every VIP.
		{"daemon-selected-protocol-missing", verifyEnv{bird: "up-vip", protocols: []string{"peer_b", "peer_b6", "peer_c"}, daemon: vDaemonWants(true, true), iface: vBoth}, nagiosWarning},
		{"poll-not-judged", verifyEnv{bird: "up-vip", api: vHealthy(vAPI6), iface: vBoth}, nagiosUnknown},
		{"poll-not-judged-and-mismatch", verifyEnv{bird: "up-novip", api: vHealthy(vAPI6), iface: vBoth}, nagiosCritical},
		{"bird-not-reachable", verifyEnv{daemon: vDaemonWants(true, true), iface: vBoth}, nagiosUnknown},
		{"neither-daemon-nor-api", verifyEnv{bird: "up-vip", iface: vBoth}, nagiosUnknown},
		{"interface-unreadable", verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), ifaceErr: errors.New("netlink: permission denied")}, nagiosUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := tc.env.start(t).run("--nagios")
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s", code, tc.code, out)
			}
			checkNagiosLine(t, out, code, errs)
			verifyGolden(t, "verify-"+tc.name+".nagios.golden", out)
		})
	}
}

// checkNagiosLine: one line, "RHI STATE - ", the state matching the exit
// code, nothing on stderr.
func checkNagiosLine(t *testing.T, out string, code int, stderr string) {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("stdout is not one line: %q", out)
	}
	if code < 0 || code > 3 || !strings.HasPrefix(out, "RHI "+nagiosStates[code]+" - ") {
		t.Errorf("exit %d with line %q", code, out)
	}
	if stderr != "" {
		t.Errorf("stderr not empty: %q", stderr)
	}
}

func TestVerifyNagiosUsage(t *testing.T) {
	good := verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), iface: vBoth}
	w := good.start(t)
	// The flag package's complaint and the usage go to stderr.
	code, out, _ := w.run("--nagios", "--nope")
	if code != nagiosUnknown || out != "RHI UNKNOWN - could not check: bad usage (rhi verify --help)\n" {
		t.Errorf("bad flag: exit %d, stdout %q", code, out)
	}
	if code, _, errs := w.run("--nagios", "--json"); code != exitBadInput || !strings.Contains(errs, "exclude each other") {
		t.Errorf("--json --nagios: exit %d, stderr %q", code, errs)
	}
	var o, e bytes.Buffer
	code = run([]string{"verify", "--nagios", "--config", "../../internal/config/testdata/invalid/bad_condition.yaml"}, &o, &e)
	if code != nagiosUnknown || !strings.Contains(o.String(), "condition") {
		t.Errorf("invalid config: exit %d, stdout %q", code, o.String())
	}
	checkNagiosLine(t, o.String(), code, e.String())
}

// TestNagiosLine covers the mapping where no BIRD transcript shows it: one
// of two sessions down while the other carries every VIP, and a text that
// holds the perfdata separator.
func TestNagiosLine(t *testing.T) {
	v4 := netip.MustParsePrefix("10.0.0.1/32")
	up := router.ProtocolState{Name: "a", Established: true}
	down := router.ProtocolState{Name: "b", Problem: "not Established"}
	agree := router.VIPReport{Prefix: v4, Agrees: true}
	many := []router.VIPReport{}
	for i := range 5 {
		many = append(many, router.VIPReport{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 32), Problem: "not in | table"})
	}
	tests := []struct {
		name      string
		rep       router.Report
		notJudged []string
		state     int
		line      string
	}{
		{"ok", router.Report{Protocols: []router.ProtocolState{up}, VIPs: []router.VIPReport{agree}}, nil, nagiosOK,
			"RHI OK - 1 VIPs agree, 1 of 1 sessions Established | vips=1 agree=1 disagree=0 sessions_up=1"},
		{"one session down", router.Report{Protocols: []router.ProtocolState{up, down}, VIPs: []router.VIPReport{agree}}, nil, nagiosWarning,
			"RHI WARNING - 1 VIPs agree, 1 of 2 sessions Established: b: not Established | vips=1 agree=1 disagree=0 sessions_up=1"},
		{"no BGP protocol", router.Report{Problems: []string{"no BGP protocol in BIRD"}, VIPs: []router.VIPReport{{Prefix: v4, Expected: router.Absent, Agrees: true}}}, nil, nagiosWarning,
			"RHI WARNING - 1 VIPs agree, 0 of 0 sessions Established: no BGP protocol in BIRD | vips=1 agree=1 disagree=0 sessions_up=0"},
		{"not judged", router.Report{Protocols: []router.ProtocolState{up}, VIPs: []router.VIPReport{agree}}, []string{"10.0.0.1/32"}, nagiosUnknown,
			"RHI UNKNOWN - 1 of 1 VIPs NOT JUDGED (health unknown): 10.0.0.1/32; 1 of 1 sessions Established | vips=1 agree=1 disagree=0 sessions_up=1"},
		{"many disagree, a pipe in the text", router.Report{Protocols: []router.ProtocolState{up, down}, VIPs: many}, nil, nagiosCritical,
			"RHI CRITICAL - 5 of 5 VIPs disagree with BIRD: 10.0.0.0/32 (not in / table); 10.0.0.1/32 (not in / table); 10.0.0.2/32 (not in / table); and 2 more; 1 of 2 sessions Established | vips=5 agree=0 disagree=5 sessions_up=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state, line := nagiosLine(tc.rep, tc.notJudged)
			if state != tc.state || line != tc.line {
				t.Errorf("got %d %q\nwant %d %q", state, line, tc.state, tc.line)
			}
		})
	}
}
