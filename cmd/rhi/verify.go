package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/verify"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// verifyStatusTimeout bounds the question to the running daemon. It answers
// from memory on its control socket, so a slow answer means it is not
// really there.
const verifyStatusTimeout = 3 * time.Second

const verifySynopsis = "[--config PATH] [--bird-socket PATH] [--json | --nagios]"

const verifyHelp = `Checks that BIRD announces what rhi wants, and only that: per VIP, the
expected state, whether the address is on the interface, whether BIRD's table
holds it from the direct protocol and whether each selected BGP protocol
exports it; and that every selected protocol is Established. A VIP that should
be announced but that no Established selected session carries is a mismatch.
A host address on the interface that rhi does not manage (neither a VIP
nor one it is withdrawing) is checked too: BIRD must not export it, since
nothing checks its health. It changes nothing.

The expected state comes from the running daemon on control_socket when it
answers (what it decided). Otherwise it comes from one fresh poll of the
control API: available means present, unavailable means absent. A VIP that
the poll cannot settle (an upstream failed or was not found) is NOT JUDGED:
it is checked against what the interface holds (what the daemon would keep),
and the run exits 2 unless something else is wrong.

Exit codes:
  0  consistent: every VIP agrees, every selected protocol is Established
  1  mismatch: a VIP disagrees, a selected protocol is not Established, or
     BIRD exports an address on the interface that rhi does not manage
     (wins over 2 when some VIPs could not be judged: it is the news)
  2  could not check: bad usage or config, neither the daemon nor the control
     API answered, the interface or BIRD could not be read, or a VIP was NOT
     JUDGED

The report goes to stdout; errors go to stderr. With --json, stdout holds one
JSON object whenever the config loads, its exit_code being the exit code.

`

// interfaceReader reads what the named interface holds. The command uses
// readInterface; tests pass a fake so that they need no netlink.
type interfaceReader func(ctx context.Context, name string) (vip.State, error)

// readInterface reads the interface over netlink; it needs no privileges.
func readInterface(ctx context.Context, name string) (vip.State, error) {
	nl, err := vip.NewHandle(netlinkTimeout)
	if err != nil {
		return vip.State{}, err
	}
	defer nl.Close()
	// Observe logs only netlink retries at debug level: nothing to show.
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	return vip.New(nl, name, quiet).Observe(ctx)
}

func cmdVerify(args []string, stdout, stderr io.Writer) int {
	return verifyWith(args, stdout, stderr, readInterface)
}

// Where an expectation comes from, in the JSON output.
const (
	fromDaemon = "daemon"
	fromPoll   = "poll"
)

// expectation is what rhi wants, per VIP, and where that was learnt.
type expectation struct {
	source   string // fromDaemon or fromPoll
	address  string // control_socket, or the control API's URL
	fallback string // why the daemon was not the source; "" when it was
	iface    string // the interface the VIPs live on
	vips     []expectedVIP
	notes    []string
}

// expectedVIP is one VIP's expected state. When judged is false nobody
// could say what it should be, and present is filled in later from the
// interface.
type expectedVIP struct {
	prefix  netip.Prefix
	present bool
	judged  bool
	why     string // why it is not judged
}

// line is the sentence that opens the human report.
func (e *expectation) line() string {
	if e.source == fromDaemon {
		return "expected state from the running daemon on " + e.address
	}
	return fmt.Sprintf("expected state from a fresh poll of %s (%s)", e.address, e.fallback)
}

// verifySchemaVersion is the version of the --json output; 1 was the
// unversioned output before it, 2 the first to say so (the version of the
// /status JSON that came with it: status.SchemaVersion).
const verifySchemaVersion = 2

// verifyJSON is the --json output. The report of internal/verify is kept
// whole under "check", in the form the daemon's /status uses; exit_code
// here is the process's, which differs from check.exit_code only when a
// VIP was not judged.
type verifyJSON struct {
	SchemaVersion int              `json:"schema_version"`
	ExitCode      int              `json:"exit_code"`
	Error         string           `json:"error,omitempty"`
	Expectation   *jsonExpectation `json:"expectation,omitempty"`
	Notes         []string         `json:"notes,omitempty"`
	NotJudged     []jsonNotJudged  `json:"not_judged,omitempty"`
	Check         json.RawMessage  `json:"check,omitempty"`
}

type jsonExpectation struct {
	Source   string `json:"source"`             // "daemon" or "poll"
	Address  string `json:"address"`            // control_socket or the control API's URL
	Fallback string `json:"fallback,omitempty"` // why the daemon was not asked or did not answer
}

type jsonNotJudged struct {
	VIP    string `json:"vip"`
	Reason string `json:"reason"`
}

// verifyWith runs `rhi verify` reading the interface through readIface.
func verifyWith(args []string, stdout, stderr io.Writer, readIface interfaceReader) int {
	fs := flags("verify", verifySynopsis, stdout, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rhi verify %s\n\n%s%sFlags:\n", verifySynopsis, verifyHelp, nagiosHelp)
		printFlags(fs)
	}
	path := fs.String("config", defaultConfig, "configuration file")
	socket := fs.String("bird-socket", "", "BIRD control socket (default: bird.socket of the config)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	nagios := fs.Bool("nagios", false, "print one Nagios/Icinga plugin line; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN")
	if code, ok := parse(fs, args, stdout); !ok {
		if code == exitBadInput && nagiosAsked(args) {
			return nagiosCouldNotCheck(stdout, errors.New("bad usage (rhi verify --help)"))
		}
		return code
	}
	if *asJSON && *nagios {
		fmt.Fprintln(stderr, "rhi verify: --json and --nagios exclude each other")
		return exitBadInput
	}
	cfg, err := config.Load(*path)
	if err != nil {
		if *nagios {
			return nagiosCouldNotCheck(stdout, err)
		}
		fmt.Fprintf(stderr, "%v\n", err)
		return exitBadInput
	}
	out := verifyJSON{SchemaVersion: verifySchemaVersion, ExitCode: exitBadInput}
	fail := func(err error) int {
		if *nagios {
			return nagiosCouldNotCheck(stdout, err)
		}
		fmt.Fprintf(stderr, "rhi verify: %v\n", err)
		if *asJSON {
			out.Error = err.Error()
			writeVerifyJSON(stdout, stderr, out)
		}
		return exitBadInput
	}

	ctx := context.Background()
	exp, err := expect(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	out.Expectation = &jsonExpectation{Source: exp.source, Address: exp.address, Fallback: exp.fallback}

	st, err := readIface(ctx, exp.iface)
	switch {
	case errors.Is(err, vip.ErrNoInterface):
		exp.notes = append(exp.notes, fmt.Sprintf("interface %q does not exist: it holds no VIP", exp.iface))
	case err != nil:
		return fail(fmt.Errorf("read interface %q: %w", exp.iface, err))
	case !st.Up:
		exp.notes = append(exp.notes, fmt.Sprintf("interface %q is down: BIRD announces nothing from it", exp.iface))
	}
	in := verify.Input{Protocols: cfg.Bird.Protocols, ExchangeTimeout: cfg.Bird.Timeout}
	for i := range exp.vips {
		v := &exp.vips[i]
		on := st.Has(v.prefix)
		if !v.judged {
			v.present = on
			out.NotJudged = append(out.NotJudged, jsonNotJudged{VIP: v.prefix.String(), Reason: v.why})
		}
		in.VIPs = append(in.VIPs, verify.VIP{Prefix: v.prefix, Expected: expected(v.present), OnInterface: on})
	}
	in.VIPs = appendUnmanaged(in.VIPs, exp, st)
	out.Notes = exp.notes

	rep := checkBird(ctx, cmp.Or(*socket, cfg.Bird.Socket), cfg.Bird.Timeout, in)
	code := rep.ExitCode()
	if code == verify.ExitConsistent && len(out.NotJudged) > 0 {
		code = verify.ExitUnchecked
	}
	out.ExitCode = code

	if *nagios {
		return writeNagiosReport(stdout, rep, out.NotJudged)
	}
	if *asJSON {
		raw, err := json.Marshal(rep)
		if err != nil {
			return fail(fmt.Errorf("encode report: %w", err))
		}
		out.Check = raw
		if rep.Err != nil {
			out.Error = "could not check: " + rep.Err.Error()
			fmt.Fprintf(stderr, "rhi verify: %s\n", out.Error)
		}
		writeVerifyJSON(stdout, stderr, out)
		return code
	}
	if rep.Err != nil {
		fmt.Fprintf(stderr, "rhi verify: %s\nrhi verify: could not check: %v\n", exp.line(), rep.Err)
		return code
	}
	var buf bytes.Buffer
	fmt.Fprintln(&buf, exp.line())
	for _, n := range exp.notes {
		fmt.Fprintln(&buf, "note: "+n)
	}
	for _, v := range exp.vips {
		if !v.judged {
			fmt.Fprintf(&buf, "NOT JUDGED: %s: %s; checked against the interface (%s)\n", v.prefix, v.why, presence(v.present))
		}
	}
	fmt.Fprintln(&buf)
	if err := rep.WriteTable(&buf); err != nil {
		return fail(err)
	}
	if n := len(out.NotJudged); n > 0 {
		fmt.Fprintf(&buf, "NOT JUDGED: %d of %d VIPs: health unknown, see above\n", n, len(exp.vips))
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "rhi verify: %v\n", err)
		return exitBadInput
	}
	return code
}

// appendUnmanaged adds to vips the host addresses on the interface that
// rhi neither wants nor is withdrawing: nothing checks their health, so
// BIRD must not export them (verify.Unmanaged). They are noted.
func appendUnmanaged(vips []verify.VIP, exp *expectation, st vip.State) []verify.VIP {
	known := make(map[netip.Prefix]bool, len(exp.vips))
	for _, v := range exp.vips {
		known[v.prefix] = true
	}
	var names []string
	for _, p := range st.Present {
		if !known[p] {
			vips = append(vips, verify.VIP{Prefix: p, Expected: verify.Unmanaged, OnInterface: true})
			names = append(names, p.String())
		}
	}
	if len(names) > 0 {
		exp.notes = append(exp.notes, "on the interface but not managed by rhi (checked: BIRD must not export them): "+strings.Join(names, " "))
	}
	return vips
}

func writeVerifyJSON(stdout, stderr io.Writer, out verifyJSON) {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "rhi verify: %v\n", err)
	}
}

// checkBird connects to BIRD and checks in; a failed connection is a report
// that could not be made.
func checkBird(ctx context.Context, socket string, timeout time.Duration, in verify.Input) verify.Report {
	dctx, cancel := context.WithTimeout(ctx, cmp.Or(timeout, config.Default().Bird.Timeout))
	conn, err := bird.Dial(dctx, socket)
	cancel()
	if err != nil {
		return verify.Report{Err: birdHint(err, birdHintVerify)}
	}
	defer conn.Close()
	return verify.Check(ctx, conn, in)
}

func expected(present bool) verify.Expectation {
	if present {
		return verify.Present
	}
	return verify.Absent
}

func presence(on bool) string {
	if on {
		return "present"
	}
	return "absent"
}

// expect learns what rhi wants: from the running daemon when it answers,
// else from one fresh poll of the control API. The error says why neither
// worked.
func expect(ctx context.Context, cfg *config.Config) (*expectation, error) {
	var fallback string
	if cfg.ControlSocket == "" {
		fallback = "control_socket is empty: no daemon to ask"
	} else {
		sctx, cancel := context.WithTimeout(ctx, verifyStatusTimeout)
		_, st, err := fetchStatus(sctx, cfg.ControlSocket)
		cancel()
		switch {
		case err != nil:
			fallback = fmt.Sprintf("the daemon on %s did not answer: %v", cfg.ControlSocket, err)
		case !st.Ready:
			fallback = fmt.Sprintf("the daemon on %s has not finished its first tick", cfg.ControlSocket)
		default:
			return fromStatus(cfg, st.Interface, st.VIPs)
		}
	}
	exp, err := fromFreshPoll(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("no expected state: %s; %w", fallback, err)
	}
	exp.fallback = fallback
	return exp, nil
}

// fromStatus takes the daemon's decisions. The daemon's VIPs are the ones
// checked, since they are what it announces; a config file that differs
// (edited, not yet reloaded) is noted, not judged.
//
// VIPs a reload dropped that the daemon is still withdrawing are checked
// as absent: the daemon owns them until they are gone, and BIRD must stop
// exporting them.
func fromStatus(cfg *config.Config, iface status.InterfaceStatus, vips []status.VIPStatus) (*expectation, error) {
	exp := &expectation{source: fromDaemon, address: cfg.ControlSocket, iface: cmp.Or(iface.Name, cfg.Interface)}
	running := map[netip.Prefix]bool{}
	for _, v := range vips {
		p, err := netip.ParsePrefix(v.Address)
		if err != nil {
			return nil, fmt.Errorf("status from %s: vip %q: %w", cfg.ControlSocket, v.Address, err)
		}
		running[p] = true
		exp.vips = append(exp.vips, expectedVIP{prefix: p, present: v.Desired, judged: true})
	}
	withdrawing := map[netip.Prefix]bool{}
	for _, a := range iface.Withdrawing {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("status from %s: withdrawing vip %q: %w", cfg.ControlSocket, a, err)
		}
		if !running[p] {
			withdrawing[p] = true
			exp.vips = append(exp.vips, expectedVIP{prefix: p, present: false, judged: true})
		}
	}
	if len(iface.Withdrawing) > 0 {
		exp.notes = append(exp.notes, "dropped from the config by a reload and still being withdrawn (checked as withdrawn): "+strings.Join(iface.Withdrawing, " "))
	}
	var onlyFile, onlyDaemon []string
	inFile := map[netip.Prefix]bool{}
	for _, v := range cfg.VIPs {
		inFile[v.Address] = true
		if !running[v.Address] && !withdrawing[v.Address] {
			onlyFile = append(onlyFile, v.Address.String())
		}
	}
	for _, v := range exp.vips {
		if !inFile[v.prefix] && !withdrawing[v.prefix] {
			onlyDaemon = append(onlyDaemon, v.prefix.String())
		}
	}
	if len(onlyFile) > 0 {
		exp.notes = append(exp.notes, "in the config file but not in the running daemon (reload it to apply), not checked: "+strings.Join(onlyFile, " "))
	}
	if len(onlyDaemon) > 0 {
		exp.notes = append(exp.notes, "in the running daemon but no longer in the config file (checked): "+strings.Join(onlyDaemon, " "))
	}
	if iface.Name != "" && iface.Name != cfg.Interface {
		exp.notes = append(exp.notes, fmt.Sprintf("the running daemon manages interface %q, the config file names %q (a restart applies it)", iface.Name, cfg.Interface))
	}
	return exp, nil
}

// fromFreshPoll polls the control API once and evaluates each VIP's
// condition. Rise/fall and the failure policy need a history that one poll
// does not have: a settled verdict is taken as it is, an unsettled one is
// not judged. The error says that the API did not answer at all.
func fromFreshPoll(ctx context.Context, cfg *config.Config) (*expectation, error) {
	exp := &expectation{source: fromPoll, address: cfg.ControlURL, iface: cfg.Interface}
	var keys []string
	for _, v := range cfg.VIPs {
		keys = append(keys, v.Upstreams...)
	}
	var snap apisix.Snapshot
	if len(keys) > 0 {
		client, err := apisix.NewClient(cfg.ControlURL, apisix.Options{Timeout: cfg.Timeout})
		if err != nil {
			return nil, err
		}
		snap = client.Poll(ctx, keys)
		if err := unanswered(snap, keys); err != nil {
			return nil, fmt.Errorf("control API at %s did not answer: %w", cfg.ControlURL, err)
		}
	}
	for i := range cfg.VIPs {
		v := &cfg.VIPs[i]
		ev := expectedVIP{prefix: v.Address, judged: true}
		switch decide.Evaluate(v, snap, cfg.FailurePolicy.NoChecker) {
		case decide.Available:
			ev.present = true
		case decide.Unavailable:
		default:
			ev.judged = false
			ev.why = "health unknown (" + unsettled(v, snap, cfg.FailurePolicy.NoChecker) + ")"
		}
		exp.vips = append(exp.vips, ev)
	}
	return exp, nil
}

// unanswered returns the first key's error when no key got an answer from
// APISIX (every one failed): then nothing at all is known.
func unanswered(snap apisix.Snapshot, keys []string) error {
	for _, k := range keys {
		if snap[k].Verdict != apisix.Failed {
			return nil
		}
	}
	return snap[keys[0]].Err
}

// unsettled names the upstreams of v that the poll could not read.
func unsettled(v *config.VIP, snap apisix.Snapshot, noChecker string) string {
	var out []string
	for _, k := range v.Upstreams {
		r := snap[k]
		if decide.Classify(r, noChecker) != decide.UpstreamFailed {
			continue
		}
		s := shortKey(k) + ": " + r.Verdict.String()
		if r.Err != nil {
			s += ": " + r.Err.Error()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "; ")
}
