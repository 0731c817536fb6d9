package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// The lab speaker's VIPs and sessions in the BIRD transcripts of testdata:
// peer_b carries IPv4, peer_b6 IPv6.
var (
	vVIP4 = netip.MustParsePrefix("10.255.0.10/32")
	vVIP6 = netip.MustParsePrefix("fd00:255::10/128")
	vAPI4 = apisix.Ref{Type: "upstreams", ID: "api4"}
	vAPI6 = apisix.Ref{Type: "upstreams", ID: "api6"}
)

func vTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// vBirdReplies is what the lab speaker answers in a situation: up-vip,
// up-novip or peerdown-vip (see testdata/README.md).
func vBirdReplies(t *testing.T, situation string) map[string]string {
	m := map[string]string{
		"show protocols all":                     vTestdata(t, "lab-show-protocols-all."+situation+".txt"),
		bird.TableRouteCommand(vVIP4, "master4"): vTestdata(t, "bird2.0.12-show-route-vip-table-master4-all."+situation+".txt"),
		bird.TableRouteCommand(vVIP6, "master6"): vTestdata(t, "bird2.0.12-show-route-vip6-table-master6-all."+situation+".txt"),
	}
	if situation != "peerdown-vip" { // exports are asked only of Established sessions
		m[bird.ExportCommand("peer_b", vVIP4)] = vTestdata(t, "bird2.0.12-show-route-export-peer_b-vip."+situation+".txt")
		m[bird.ExportCommand("peer_b6", vVIP6)] = vTestdata(t, "bird2.0.12-show-route-export-peer_b6-vip6."+situation+".txt")
	}
	return m
}

// verifyEnv is the world one `rhi verify` runs in.
type verifyEnv struct {
	bird      string   // BIRD's situation; "": nothing listens on bird.socket
	stall     bool     // BIRD never answers "show protocols all"; the run's deadline passes once it has read it
	protocols []string // bird.protocols; nil: every BGP protocol

	daemon   *status.Status // nil: nothing listens on control_socket
	noStatus bool           // control_socket is empty

	// api maps each upstream the control API knows to its nodes' status;
	// an upstream left out is "not found". nil: nothing listens.
	api      map[apisix.Ref]string
	apiFault apisixtest.Fault
	pollMode string // apisix_poll_mode; "": the default

	ifaceName string         // the interface that exists; "" = rhi0
	iface     []netip.Prefix // what it holds
	ifaceErr  error          // the reader's error
	ifaceDown bool           // the interface is administratively down
}

// verifyWorld is a running verifyEnv.
type verifyWorld struct {
	config  string             // rhi.yaml
	api     *apisixtest.Server // the control API; nil when nothing listens
	ctx     context.Context    // the run's
	deps    verifyDeps         // the fake interface; the real check of BIRD, recorded in checked
	checked *[]router.Input    // what the runs asked BIRD to check
	// scrub replaces the test's temporary addresses and paths by fixed
	// names, for golden files.
	scrub *strings.Replacer
}

// vDeadAddr is a loopback address nothing listens on.
func vDeadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (e verifyEnv) start(t *testing.T) verifyWorld {
	t.Helper()
	dir := t.TempDir()

	socket := filepath.Join(dir, "nobird.ctl")
	var ctx context.Context = context.Background()
	if e.bird != "" {
		srv := birdtest.NewServer(t, vBirdReplies(t, e.bird))
		if e.stall {
			srv.Stall("show protocols all")
			ctx = expireOnCommands(t, srv, 2) // "restrict", "show protocols all"
		}
		socket = srv.Path
	}

	status := deadSocket(t)
	if e.daemon != nil {
		body, err := json.Marshal(e.daemon)
		if err != nil {
			t.Fatal(err)
		}
		status = serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/status" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
	}
	if e.noStatus {
		status = ""
	}

	apiURL := "http://" + vDeadAddr(t)
	var api *apisixtest.Server
	if e.api != nil {
		api = apisixtest.New()
		for ref, st := range e.api {
			api.SetNodes(ref, apisixtest.Node{IP: "10.1.0.1", Port: 80, Status: st}, apisixtest.Node{IP: "10.1.0.2", Port: 80, Status: st})
		}
		api.SetGlobalFault(e.apiFault)
		apiURL = api.Start().URL
		t.Cleanup(api.Close)
	}

	protocols := ""
	if e.protocols != nil {
		protocols = fmt.Sprintf("\n  protocols: [%s]", strings.Join(e.protocols, ", "))
	}
	mode := ""
	if e.pollMode != "" {
		mode = "\napisix_poll_mode: " + e.pollMode
	}
	// The timeouts bound exchanges that must succeed: generous.
	cfg := fmt.Sprintf(`apisix_control_url: %s
apisix_timeout: 10s%s
interface: rhi0
control_socket: "%s"
bird:
  socket: %s
  timeout: %s%s
vips:
  - address: 10.255.0.10
    upstreams: ["/apisix/upstreams/api4"]
  - address: fd00:255::10
    upstreams: ["/apisix/upstreams/api6"]
`, apiURL, mode, status, socket, vBirdTimeout, protocols)
	path := filepath.Join(dir, "rhi.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	held := slices.Clone(e.iface)
	slices.SortFunc(held, netip.Prefix.Compare)
	name := e.ifaceName
	if name == "" {
		name = "rhi0"
	}
	read := func(ctx context.Context, iface string) (vip.State, error) {
		switch {
		case e.ifaceErr != nil:
			return vip.State{}, e.ifaceErr
		case iface != name:
			return vip.State{}, fmt.Errorf("%w %q", vip.ErrNoInterface, iface)
		}
		return vip.State{Exists: true, Up: !e.ifaceDown, LowerUp: !e.ifaceDown, Present: held}, nil
	}

	var pairs []string
	if status != "" {
		pairs = append(pairs, status, "CONTROL_SOCKET")
	}
	pairs = append(pairs, socket, "BIRD_SOCKET", dir, "TMPDIR", apiURL, "API_URL", strings.TrimPrefix(apiURL, "http://"), "API_ADDR")
	checked := new([]router.Input)
	check := func(ctx context.Context, socket string, in router.Input) router.Report {
		*checked = append(*checked, in)
		return checkBird(ctx, socket, in)
	}
	return verifyWorld{config: path, api: api, ctx: ctx, deps: verifyDeps{readIface: read, checkBird: check}, checked: checked, scrub: strings.NewReplacer(pairs...)}
}

// vBirdTimeout is bird.timeout in the config of a verifyEnv.
const vBirdTimeout = "10s"

// expireOnCommands returns a context whose deadline passes once srv has
// read n commands ("restrict" counts), not with time.
func expireOnCommands(t *testing.T, srv *birdtest.Server, n int) context.Context {
	cue := newCue(context.Background())
	go func() {
		if srv.WaitCommands(t.Context(), n) == nil {
			cue.expire()
		}
	}()
	return cue
}

// run runs `rhi verify` in w with args after --config.
func (w verifyWorld) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = verifyWith(w.ctx, append([]string{"--config", w.config}, args...), &out, &errb, w.deps)
	return code, w.scrub.Replace(out.String()), w.scrub.Replace(errb.String())
}

// golden compares got with testdata/name, or rewrites it with -update.
func verifyGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func vDaemonWants(present ...bool) *status.Status {
	st := &status.Status{Ready: true, Interface: status.InterfaceStatus{Name: "rhi0", Exists: true, Up: true}}
	for i, p := range []netip.Prefix{vVIP4, vVIP6}[:len(present)] {
		st.VIPs = append(st.VIPs, status.VIPStatus{Address: p.String(), Desired: present[i], OnInterface: present[i]})
	}
	return st
}

var vBoth = []netip.Prefix{vVIP4, vVIP6}

func vHealthy(refs ...apisix.Ref) map[apisix.Ref]string {
	m := map[apisix.Ref]string{}
	for _, r := range refs {
		m[r] = apisixtest.Healthy
	}
	return m
}

// TestVerifyGolden runs each situation twice, for the table and for
// --json, and checks the exit code, the outputs and what goes to stderr.
func TestVerifyGolden(t *testing.T) {
	tests := []struct {
		name   string
		env    verifyEnv
		code   int
		stderr string // substring of stderr; "" = empty
		noOut  bool   // the table run prints nothing on stdout
	}{
		{
			name: "daemon-consistent",
			env:  verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), iface: vBoth},
			code: 0,
		},
		{
			name: "daemon-bird-missed-the-addresses",
			env:  verifyEnv{bird: "up-novip", daemon: vDaemonWants(true, true), iface: vBoth},
			code: 1,
		},
		{
			name: "daemon-peer-down",
			env:  verifyEnv{bird: "peerdown-vip", daemon: vDaemonWants(true, true), iface: vBoth},
			code: 1,
		},
		{
			// peer_b is IPv4 only: nothing announces the IPv6 VIP.
			name: "daemon-selected-protocol-lacks-a-family",
			env:  verifyEnv{bird: "up-vip", protocols: []string{"peer_b"}, daemon: vDaemonWants(true, true), iface: vBoth},
			code: 1,
		},
		{
			name: "daemon-wants-withdrawn-bird-still-exports",
			env:  verifyEnv{bird: "up-vip", daemon: vDaemonWants(false, true), iface: vBoth},
			code: 1,
		},
		{
			// A reload dropped the IPv6 VIP; the daemon is still
			// withdrawing it and BIRD still exports it: checked, mismatch.
			name: "daemon-withdrawing-a-dropped-vip",
			env: verifyEnv{bird: "up-vip", iface: vBoth, daemon: &status.Status{
				Ready: true, Interface: status.InterfaceStatus{Name: "rhi0", Exists: true, Up: true, Withdrawing: []string{vVIP6.String()}},
				VIPs: []status.VIPStatus{{Address: vVIP4.String(), Desired: true, OnInterface: true}},
			}},
			code: 1,
		},
		{
			// The daemon runs with the IPv4 VIP only; the IPv6 address
			// on the interface is nobody's, and BIRD exports it.
			name: "daemon-unmanaged-address-exported",
			env: verifyEnv{bird: "up-vip", iface: vBoth, daemon: &status.Status{
				Ready: true, Interface: status.InterfaceStatus{Name: "rhi0", Exists: true, Up: true, Unmanaged: []string{vVIP6.String()}},
				VIPs: []status.VIPStatus{{Address: vVIP4.String(), Desired: true, OnInterface: true}},
			}},
			code: 1,
		},
		{
			name: "daemon-starting-poll-used",
			env:  verifyEnv{bird: "up-vip", daemon: &status.Status{}, api: vHealthy(vAPI4, vAPI6), iface: vBoth},
			code: 0,
		},
		{
			name: "config-file-differs-from-daemon",
			env: verifyEnv{bird: "up-vip", iface: []netip.Prefix{vVIP4}, ifaceName: "rhi1", daemon: &status.Status{
				Ready: true, Interface: status.InterfaceStatus{Name: "rhi1", Exists: true, Up: true},
				VIPs: []status.VIPStatus{{Address: vVIP4.String(), Desired: true}},
			}},
			code: 0,
		},
		{
			name: "interface-missing",
			env:  verifyEnv{bird: "up-novip", daemon: vDaemonWants(true, true), ifaceErr: fmt.Errorf("%w %q", vip.ErrNoInterface, "rhi0")},
			code: 1,
		},
		{
			name: "poll-consistent",
			env:  verifyEnv{bird: "up-vip", api: vHealthy(vAPI4, vAPI6), iface: vBoth},
			code: 0,
		},
		{
			name: "poll-withdrawn-no-status-listen",
			env:  verifyEnv{bird: "up-novip", noStatus: true, api: map[apisix.Ref]string{vAPI4: apisixtest.Unhealthy, vAPI6: apisixtest.Unhealthy}},
			code: 0,
		},
		{
			name: "poll-not-judged",
			env:  verifyEnv{bird: "up-vip", api: vHealthy(vAPI6), iface: vBoth},
			code: 2,
		},
		{
			name: "poll-not-judged-and-mismatch",
			env:  verifyEnv{bird: "up-novip", api: vHealthy(vAPI6), iface: vBoth},
			code: 1,
		},
		{
			name:   "bird-not-reachable",
			env:    verifyEnv{daemon: vDaemonWants(true, true), iface: vBoth},
			code:   2,
			stderr: `could not check: bird: dial "BIRD_SOCKET"`,
			noOut:  true,
		},
		{
			name:   "neither-daemon-nor-api",
			env:    verifyEnv{bird: "up-vip", iface: vBoth},
			code:   2,
			stderr: "no expected state: the daemon on CONTROL_SOCKET did not answer: lstat CONTROL_SOCKET: no such file or directory; control API at API_URL did not answer",
			noOut:  true,
		},
		{
			name:   "api-answers-only-errors",
			env:    verifyEnv{bird: "up-vip", noStatus: true, api: vHealthy(vAPI4, vAPI6), apiFault: apisixtest.Status503, iface: vBoth},
			code:   2,
			stderr: "control API at API_URL did not answer",
			noOut:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.env.start(t)

			code, out, errs := w.run()
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			vCheckStderr(t, errs, tc.stderr)
			if tc.noOut {
				if out != "" {
					t.Errorf("stdout not empty:\n%s", out)
				}
			} else {
				verifyGolden(t, "verify-"+tc.name+".txt.golden", out)
			}

			code, out, errs = w.run("--json")
			if code != tc.code {
				t.Errorf("--json: exit %d, want %d\nstderr:\n%s", code, tc.code, errs)
			}
			vCheckStderr(t, errs, tc.stderr)
			verifyGolden(t, "verify-"+tc.name+".json.golden", out)
			var doc struct {
				ExitCode int `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.ExitCode != code {
				t.Errorf("--json: exit_code %d (%v), want the exit code %d", doc.ExitCode, err, code)
			}
		})
	}
}

func vCheckStderr(t *testing.T, got, want string) {
	t.Helper()
	switch {
	case want == "" && got != "":
		t.Errorf("stderr not empty: %s", got)
	case !strings.Contains(got, want):
		t.Errorf("stderr %q lacks %q", got, want)
	}
}

// TestVerifyOtherFailures covers what stops the command before or while
// asking BIRD, without golden output.
func TestVerifyOtherFailures(t *testing.T) {
	good := verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), iface: vBoth}
	tests := []struct {
		name   string
		env    verifyEnv
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"help lists the exit codes", good, []string{"-h"}, 0, "  2  could not check", ""},
		{"bad flag", good, []string{"--nope"}, 2, "", "flag provided but not defined"},
		{"stray argument", good, []string{"extra"}, 2, "", `unexpected argument "extra"`},
		{"bird-socket overrides the config", good, []string{"--bird-socket", "/nonexistent/bird.ctl"}, 2, "", `bird: dial "/nonexistent/bird.ctl"`},
		{"interface cannot be read", verifyEnv{bird: "up-vip", daemon: vDaemonWants(true, true), ifaceErr: errors.New("netlink: permission denied")}, nil, 2, "", `read interface "rhi0": netlink: permission denied`},
		{"interface down: said, and BIRD's view judged", verifyEnv{bird: "up-novip", daemon: vDaemonWants(true, true), iface: vBoth, ifaceDown: true}, nil, 1, `note: interface "rhi0" is down: BIRD announces nothing from it`, ""},
		{"status JSON is not a daemon's", verifyEnv{bird: "up-vip", daemon: &status.Status{Ready: true, VIPs: []status.VIPStatus{{Address: "bogus"}}}}, nil, 2, "", `vip "bogus"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.env.start(t)
			code, out, errs := w.run(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout %q lacks %q", out, tc.stdout)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr %q lacks %q", errs, tc.stderr)
			}
		})
	}
}

// TestVerifyBirdStalls: a BIRD that reads a command and never answers
// holds the run until the exchange's deadline, bird.timeout, passes; then
// it could not check (exit 2) and says so. Here the deadline passes on
// cue, once BIRD has read the command; bird.timeout must be what bounds
// each exchange.
func TestVerifyBirdStalls(t *testing.T) {
	w := verifyEnv{bird: "up-vip", stall: true, daemon: vDaemonWants(true, true), iface: vBoth}.start(t)
	code, out, errs := w.run()
	if code != exitBadInput {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitBadInput, out, errs)
	}
	if want := `could not check: "show protocols all": bird: read reply: context deadline exceeded`; !strings.Contains(errs, want) {
		t.Errorf("stderr %q lacks %q", errs, want)
	}
	want, _ := time.ParseDuration(vBirdTimeout)
	var bounds []time.Duration
	for _, in := range *w.checked {
		bounds = append(bounds, in.ExchangeTimeout)
	}
	if !slices.Equal(bounds, []time.Duration{want}) {
		t.Errorf("BIRD checked with exchanges bounded by %v; want one check, by bird.timeout (%v)", bounds, want)
	}
}

// TestVerifyBirdSocketFlag: --bird-socket reaches a BIRD the config does
// not name.
func TestVerifyBirdSocketFlag(t *testing.T) {
	w := verifyEnv{daemon: vDaemonWants(true, true), iface: vBoth}.start(t) // config: no BIRD
	srv := birdtest.NewServer(t, vBirdReplies(t, "up-vip"))
	if code, out, errs := w.run("--bird-socket", srv.Path); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if n := len(srv.Commands()); n == 0 {
		t.Error("the BIRD named by --bird-socket was not asked")
	}
}

func TestVerifyInvalidConfig(t *testing.T) {
	for _, args := range [][]string{nil, {"--json"}} {
		var out, errb bytes.Buffer
		code := run(append([]string{"verify", "--config", "../../internal/config/testdata/invalid/bad_condition.yaml"}, args...), &out, &errb)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitBadInput)
		}
		if !strings.Contains(errb.String(), "condition") || out.Len() != 0 {
			t.Errorf("%v: stdout %q, stderr %q: want the problem on stderr only", args, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"verify", "--config", "/nonexistent/rhi.yaml"}, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "/nonexistent/rhi.yaml") {
		t.Errorf("missing file: exit %d, stderr %q", code, errb.String())
	}
	// Upstream keys are checked by the APISIX client's rule, as the daemon
	// and check-config check them: a key that is a path but names no
	// APISIX resource ("/api", an unknown type) is refused with the same
	// words, not polled.
	for _, name := range []string{"upstream_no_slash.yaml", "upstream_unknown_type.yaml", "upstream_duplicate.yaml", "upstream_dot_id.yaml"} {
		f := "../../internal/config/testdata/invalid/" + name
		var vout, verr, cout, cerr bytes.Buffer
		code := run([]string{"verify", "--config", f}, &vout, &verr)
		ccode := run([]string{"check-config", "--config", f}, &cout, &cerr)
		if code != exitBadInput || ccode != exitBadInput || verr.String() != cerr.String() || vout.Len() != 0 {
			t.Errorf("%s: verify exit %d, stderr %q; check-config exit %d, stderr %q", name, code, verr.String(), ccode, cerr.String())
		}
	}
}

// TestReadInterface reads real interfaces: netlink reads need no root.
func TestReadInterface(t *testing.T) {
	ctx := context.Background()
	st, err := readInterface(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Exists || !st.Up || !slices.Contains(st.Foreign, netip.MustParsePrefix("127.0.0.1/8")) {
		t.Errorf("lo = %+v, want it up, holding 127.0.0.1/8", st)
	}
	if _, err := readInterface(ctx, "rhi-nosuch0"); !errors.Is(err, vip.ErrNoInterface) {
		t.Errorf("missing interface: err = %v, want ErrNoInterface", err)
	}
}

// TestVerifyPollsAsConfigured: the fresh poll reads the control API the
// way the daemon does, in apisix_poll_mode (it once ignored the mode).
func TestVerifyPollsAsConfigured(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		wantList bool
	}{{"", false}, {"per_upstream", false}, {"list", true}} {
		name := tc.mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			w := verifyEnv{bird: "up-vip", noStatus: true, api: vHealthy(vAPI4, vAPI6), iface: vBoth, pollMode: tc.mode}.start(t)
			code, _, stderr := w.run()
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			if got := w.api.ListRequests() > 0; got != tc.wantList {
				t.Errorf("apisix_poll_mode %q: the list was asked %d times, per-upstream requests %d", tc.mode, w.api.ListRequests(), w.api.Requests())
			}
		})
	}
}

// TestVerifyHeldCountsPeerPrefixes: the peer prefix of a point-to-point
// entry is originated by BIRD like a host address, so verify checks it.
func TestVerifyHeldCountsPeerPrefixes(t *testing.T) {
	st := vip.State{
		Present:      []netip.Prefix{netip.MustParsePrefix("10.0.0.100/32")},
		ForeignPeers: []vip.Peer{{Local: netip.MustParseAddr("10.9.0.1"), Peer: netip.MustParsePrefix("10.0.0.99/32")}, {Local: netip.MustParseAddr("10.9.0.2"), Peer: netip.MustParsePrefix("10.8.0.0/24")}},
	}
	if got := held(st); !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("10.0.0.99/32"), netip.MustParsePrefix("10.0.0.100/32")}) {
		t.Errorf("held = %v, want 10.0.0.99/32 (the peer) and 10.0.0.100/32", got)
	}
}
