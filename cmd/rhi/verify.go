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
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/expect"
	"github.com/rhi-daemon/rhi/internal/probe"
	"github.com/rhi-daemon/rhi/internal/router"
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

// verifyDeps are what `rhi verify` reads the world through: the command
// uses readInterface and checkBird; tests pass fakes or wrappers.
type verifyDeps struct {
	readIface interfaceReader
	checkBird func(ctx context.Context, socket string, in router.Input) router.Report
}

func cmdVerify(args []string, stdout, stderr io.Writer) int {
	return verifyWith(context.Background(), args, stdout, stderr, verifyDeps{readIface: readInterface, checkBird: checkBird})
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

// verifyFlags are the flags of `rhi verify`.
type verifyFlags struct {
	config, socket string
	json, nagios   bool
}

// parseVerify parses the flags; when ok is false the run ends with code.
func parseVerify(args []string, stdout, stderr io.Writer) (f verifyFlags, code int, ok bool) {
	fs := flags("verify", verifySynopsis, stdout, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rhi verify %s\n\n%s%sFlags:\n", verifySynopsis, verifyHelp, nagiosHelp)
		printFlags(fs)
	}
	fs.StringVar(&f.config, "config", defaultConfig, "configuration file")
	fs.StringVar(&f.socket, "bird-socket", "", "BIRD control socket (default: bird.socket of the config)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.BoolVar(&f.nagios, "nagios", false, "print one Nagios/Icinga plugin line; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN")
	if code, ok := parse(fs, args, stdout); !ok {
		if code == exitBadInput && nagiosAsked(args) {
			return f, nagiosCouldNotCheck(stdout, errors.New("bad usage (rhi verify --help)")), false
		}
		return f, code, false
	}
	if f.json && f.nagios {
		fmt.Fprintln(stderr, "rhi verify: --json and --nagios exclude each other")
		return f, exitBadInput, false
	}
	return f, 0, true
}

// verifyWith runs `rhi verify` under ctx, reading the world through deps.
func verifyWith(ctx context.Context, args []string, stdout, stderr io.Writer, deps verifyDeps) int {
	f, code, ok := parseVerify(args, stdout, stderr)
	if !ok {
		return code
	}
	cfg, err := config.Load(f.config, apisix.UpstreamKey)
	if err != nil {
		if f.nagios {
			return nagiosCouldNotCheck(stdout, err)
		}
		fmt.Fprintf(stderr, "%v\n", err)
		return exitBadInput
	}
	out := verifyOutput{flags: f, stdout: stdout, stderr: stderr}
	run, err := runVerify(ctx, cfg, cmp.Or(f.socket, cfg.Bird.Socket), deps)
	switch {
	case err != nil:
		return out.fail(run, err)
	case f.nagios:
		return writeNagiosReport(stdout, run.rep, run.notJudged())
	case f.json:
		return out.json(run)
	}
	return out.table(run)
}

// verifyRun is what one run found: what rhi wants, what BIRD said, and the
// exit code.
type verifyRun struct {
	want *expect.Want // nil when nobody could say
	rep  router.Report
	code int
}

// runVerify learns what rhi wants, reads the interface and asks BIRD at
// socket. An error is a check that could not be made; run.want is set when
// the expectation was learnt before it.
func runVerify(ctx context.Context, cfg *config.Config, socket string, deps verifyDeps) (*verifyRun, error) {
	run := &verifyRun{code: exitBadInput}
	w, err := expectation(ctx, cfg)
	if err != nil {
		return run, err
	}
	run.want = w
	st, err := deps.readIface(ctx, w.Interface)
	switch {
	case errors.Is(err, vip.ErrNoInterface):
		w.Notes = append(w.Notes, fmt.Sprintf("interface %q does not exist: it holds no VIP", w.Interface))
	case err != nil:
		return run, fmt.Errorf("read interface %q: %w", w.Interface, err)
	case !st.Up:
		w.Notes = append(w.Notes, fmt.Sprintf("interface %q is down: BIRD announces nothing from it", w.Interface))
	}
	hs, err := withDegraded(ctx, cfg, held(st), deps.readIface)
	if err != nil {
		return run, err
	}
	in := w.Input(hs, cfg.Bird.Protocols, cfg.Bird.Timeout)
	// site_id's default is BIRD's router id, as for the guard.
	in.SiteID, in.SiteFromRouter = uint32(cfg.SiteID), cfg.SiteID == 0
	run.rep = deps.checkBird(ctx, socket, in)
	run.code = run.rep.ExitCode()
	if run.code == router.ExitConsistent && len(w.NotJudged()) > 0 {
		run.code = router.ExitUnchecked
	}
	return run, nil
}

// notJudged lists the VIPs whose health was unknown, for the outputs.
func (r *verifyRun) notJudged() []jsonNotJudged {
	var out []jsonNotJudged
	for _, v := range r.want.NotJudged() {
		out = append(out, jsonNotJudged{VIP: v.Prefix.String(), Reason: v.Why})
	}
	return out
}

// verifyOutput renders a run as the flags ask.
type verifyOutput struct {
	flags          verifyFlags
	stdout, stderr io.Writer
}

// jsonOf is the --json object of run, as far as it got.
func (o verifyOutput) jsonOf(run *verifyRun) verifyJSON {
	out := verifyJSON{SchemaVersion: verifySchemaVersion, ExitCode: run.code}
	if w := run.want; w != nil {
		out.Expectation = &jsonExpectation{Source: w.Source, Address: w.Address, Fallback: w.Fallback}
	}
	return out
}

// fail reports a check that could not be made.
func (o verifyOutput) fail(run *verifyRun, err error) int {
	if o.flags.nagios {
		return nagiosCouldNotCheck(o.stdout, err)
	}
	fmt.Fprintf(o.stderr, "rhi verify: %v\n", err)
	if o.flags.json {
		out := o.jsonOf(run)
		out.ExitCode, out.Error = exitBadInput, err.Error()
		writeVerifyJSON(o.stdout, o.stderr, out)
	}
	return exitBadInput
}

// json writes the --json object of a run whose expectation is known.
func (o verifyOutput) json(run *verifyRun) int {
	out := o.jsonOf(run)
	out.Notes, out.NotJudged = run.want.Notes, run.notJudged()
	raw, err := json.Marshal(run.rep)
	if err != nil {
		return o.fail(run, fmt.Errorf("encode report: %w", err))
	}
	out.Check = raw
	if run.rep.Err != nil {
		out.Error = "could not check: " + run.rep.Err.Error()
		fmt.Fprintf(o.stderr, "rhi verify: %s\n", out.Error)
	}
	writeVerifyJSON(o.stdout, o.stderr, out)
	return run.code
}

// table writes the human report of a run whose expectation is known.
func (o verifyOutput) table(run *verifyRun) int {
	w := run.want
	if run.rep.Err != nil {
		fmt.Fprintf(o.stderr, "rhi verify: %s\nrhi verify: could not check: %v\n", wantLine(w), run.rep.Err)
		return run.code
	}
	var buf bytes.Buffer
	fmt.Fprintln(&buf, wantLine(w))
	for _, n := range w.Notes {
		fmt.Fprintln(&buf, "note: "+n)
	}
	for _, v := range w.VIPs {
		if v.Judged && v.Why != "" { // a threshold or a probe withdrew it
			fmt.Fprintf(&buf, "expected absent: %s: %s\n", v.Prefix, v.Why)
		}
	}
	notJudged := w.NotJudged()
	for _, v := range notJudged {
		fmt.Fprintf(&buf, "NOT JUDGED: %s: %s; checked against the interface (%s)\n", v.Prefix, v.Why, presence(v.Present))
	}
	fmt.Fprintln(&buf)
	if err := run.rep.WriteTable(&buf); err != nil {
		return o.fail(run, err)
	}
	if n := len(notJudged); n > 0 {
		fmt.Fprintf(&buf, "NOT JUDGED: %d of %d VIPs: health unknown, see above\n", n, len(w.VIPs))
	}
	if _, err := o.stdout.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(o.stderr, "rhi verify: %v\n", err)
		return exitBadInput
	}
	return run.code
}

// wantLine is the sentence that opens the human report.
func wantLine(w *expect.Want) string {
	if w.Source == expect.SourceDaemon {
		return "expected state from the running daemon on " + w.Address
	}
	return fmt.Sprintf("expected state from a fresh poll of %s (%s)", w.Address, w.Fallback)
}

func writeVerifyJSON(stdout, stderr io.Writer, out verifyJSON) {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "rhi verify: %v\n", err)
	}
}

// checkBird checks in against the BIRD at socket; a refused connection
// says how to get the permission.
func checkBird(ctx context.Context, socket string, in router.Input) router.Report {
	rep := verify.Socket{Path: socket}.Check(ctx, in)
	rep.Err = birdHint(rep.Err, birdHintVerify)
	return rep
}

func presence(on bool) string {
	if on {
		return "present"
	}
	return "absent"
}

// expect learns what rhi wants: from the running daemon when it answers,
// else from one fresh poll of the control API, made as the daemon makes
// it. The error says why neither worked.
func expectation(ctx context.Context, cfg *config.Config) (*expect.Want, error) {
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
			return expect.FromDaemon(cfg, running(st))
		}
	}
	client, err := newHealth(cfg) // the daemon's client: same URL, timeout and poll mode
	if err != nil {
		return nil, fmt.Errorf("no expected state: %s; %w", fallback, err)
	}
	w, err := expect.FromPollProbed(ctx, cfg, client, probe.New(probe.Options{Version: version}))
	if err != nil {
		return nil, fmt.Errorf("no expected state: %s; %w", fallback, err)
	}
	w.Fallback = fallback
	return w, nil
}

// running is what the daemon's status says it manages.
func running(st status.Status) expect.Running {
	r := expect.Running{Interface: st.Interface.Name, Withdrawing: st.Interface.Withdrawing}
	for _, v := range st.VIPs {
		r.VIPs = append(r.VIPs, expect.RunningVIP{Address: v.Address, Desired: v.Desired, Why: capacityWhy(v), Tier: string(v.Tier)})
	}
	return r
}

// held returns the host prefixes the interface makes BIRD originate: its
// host addresses, and the peer prefix of each point-to-point entry
// ("10.9.0.1 peer 10.0.0.99/32" originates 10.0.0.99/32), sorted, once
// each. A peer prefix is not a VIP on the interface, but BIRD exports it
// all the same, with nothing checking its health.
func held(st vip.State) []netip.Prefix {
	out := slices.Clone(st.Present)
	for _, q := range st.ForeignPeers {
		if p := q.Peer; p.IsValid() && p.Bits() == p.Addr().BitLen() && !p.Addr().Is4In6() {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, netip.Prefix.Compare)
	return slices.Compact(out)
}

// withDegraded adds to held the host addresses on the lower interfaces
// rhi uses: degraded.interface when some VIP of cfg can be degraded, and
// last_resort.interface when the fail-open guard is on. A VIP there is on
// an interface rhi announces from. A missing interface holds none.
func withDegraded(ctx context.Context, cfg *config.Config, held []netip.Prefix, readIface interfaceReader) ([]netip.Prefix, error) {
	var ifaces []string
	if degradedOn(cfg) {
		ifaces = append(ifaces, cfg.Degraded.Interface)
	}
	if cfg.FailOpen.Enabled() && lastResortOwn(cfg) {
		ifaces = append(ifaces, cfg.LastResort.Interface)
	}
	out := held
	for _, name := range ifaces {
		st, err := readIface(ctx, name)
		switch {
		case errors.Is(err, vip.ErrNoInterface):
			continue
		case err != nil:
			return nil, fmt.Errorf("read interface %q: %w", name, err)
		}
		out = slices.Clone(out)
		for _, p := range st.Present {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
