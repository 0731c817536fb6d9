package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/status"
)

// maxStatusBytes bounds the /status body `rhi status` reads.
const maxStatusBytes = 64 << 20

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := flags("status", "[--config PATH] [--json]", stdout, stderr)
	path := fs.String("config", defaultConfig, "configuration file (for control_socket)")
	asJSON := fs.Bool("json", false, "print the daemon's JSON as it is (control characters escaped)")
	if code, ok := parse(fs, args, stdout); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return exitBadInput
	}
	if cfg.ControlSocket == "" {
		fmt.Fprintf(stderr, "rhi status: control_socket is empty in %s: the daemon cannot be asked\n", *path)
		return exitBadInput
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	raw, st, err := fetchStatus(ctx, cfg.ControlSocket)
	if err != nil {
		fmt.Fprintf(stderr, "rhi status: daemon not reachable on %s: %v\n", cfg.ControlSocket, err)
		return exitBadInput
	}
	if *asJSON {
		stdout.Write(raw)
		return exitOK
	}
	writeStatus(stdout, st, time.Now())
	return exitOK
}

// fetchStatus asks the running daemon for its status on its control
// socket, which answers only if the kernel says the daemon's user is at the
// other end (see internal/ctlsock). Errors say what went wrong, not where:
// the caller names the socket. Every string of the status returned,
// and the JSON text, are cleaned of control characters: they are printed.
func fetchStatus(ctx context.Context, socket string) ([]byte, status.Status, error) {
	var st status.Status
	req, err := http.NewRequestWithContext(ctx, "GET", "http://rhi/status", nil)
	if err != nil {
		return nil, st, err
	}
	resp, err := ctlsock.Client{Path: socket}.HTTP().Do(req)
	if err != nil {
		return nil, st, urlCause(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes))
	if err != nil {
		return nil, st, fmt.Errorf("reading its answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, st, fmt.Errorf("it answered HTTP %d", resp.StatusCode)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, st, fmt.Errorf("decoding its answer: %w", err)
	}
	cleanStrings(reflect.ValueOf(&st).Elem())
	return cleanJSON(raw), st, nil
}

// urlCause drops the *url.Error around err: the URL of a request on the
// control socket is a placeholder ("http://rhi/status"); keep the cause.
func urlCause(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// writeStatus prints the status as a table a person reads at a glance.
func writeStatus(w io.Writer, s status.Status, now time.Time) {
	if s.DryRun {
		fmt.Fprintln(w, "mode       DRY RUN: rhi changes nothing on the interface; BIRD is checked against the interface as it is")
	}
	if !s.Ready {
		fmt.Fprintln(w, "rhi is starting: no tick yet")
		return
	}
	iface := "up"
	switch {
	case !s.Interface.Exists:
		iface = "MISSING"
	case !s.Interface.Up:
		iface = "DOWN"
	}
	fmt.Fprintf(w, "interface  %s (%s)", s.Interface.Name, iface)
	if s.Interface.Error != "" {
		fmt.Fprintf(w, "  error: %s", s.Interface.Error)
	}
	fmt.Fprintln(w)
	api := s.ControlAPI
	fmt.Fprintf(w, "apisix     %s  last poll %s ago, took %s, %d/%d upstreams unreadable, %d failed polls in a row\n",
		api.URL, ago(now, api.LastPoll), api.PollDuration.Round(time.Millisecond), api.Unreadable, api.Upstreams, api.ConsecutiveFailedPolls)
	fmt.Fprintf(w, "bird       %s\n", birdLine(s.Bird, now))
	if g := s.FailOpen; g != nil {
		fmt.Fprintf(w, "guard      %s\n", guardLine(g, now))
	}
	if err := status.Judge(s, now); err != nil {
		fmt.Fprintf(w, "health     UNHEALTHY (/healthz 503): %v\n", err)
	}
	if foreign := slices.DeleteFunc(slices.Clone(s.Interface.Foreign), func(a string) bool {
		return slices.Contains(s.Interface.Unmanaged, a) // listed below
	}); len(foreign) > 0 {
		fmt.Fprintf(w, "foreign    %s (not rhi's, left alone)\n", strings.Join(foreign, " "))
	}
	if len(s.Interface.Unmanaged) > 0 {
		fmt.Fprintf(w, "UNMANAGED  %s (neither configured nor put there by rhi: announced without a health check)\n", strings.Join(s.Interface.Unmanaged, " "))
	}
	if s.Interface.RecordError != "" {
		fmt.Fprintf(w, "record     CANNOT WRITE: %s\n", s.Interface.RecordError)
	}
	writeReload(w, s.Reload, now)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VIP\tWANT\tIFACE\tBIRD\tVERDICT\tREASON\tSINCE\tUPSTREAMS")
	for _, v := range s.VIPs {
		want, onIface := wantCells(v)
		ups := vipCells(v)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Address, want, onIface, birdCell(v.Bird), v.Verdict, v.Reason, ago(now, v.Since), strings.Join(ups, " "))
	}
	tw.Flush()
	for _, v := range s.VIPs {
		if v.Bird != nil && !v.Bird.Agrees && !v.Bird.Stale {
			fmt.Fprintf(w, "\n%s: BIRD disagrees: %s", v.Address, v.Bird.Problem)
		}
	}
	for _, v := range s.VIPs {
		if !v.DrainDeadline.IsZero() {
			fmt.Fprintf(w, "\n%s: %s: in last resort (GRACEFUL_SHUTDOWN) until %s (in %s), then withdrawn", v.Address, v.DrainPhase,
				v.DrainDeadline.Format(time.RFC3339), v.DrainDeadline.Sub(now).Round(100*time.Millisecond))
		}
	}
	writeVIPErrors(w, s.VIPs)
	fmt.Fprintln(w)
}

// writeVIPErrors writes why each upstream could not be read and why each
// probe is not up, a line each.
func writeVIPErrors(w io.Writer, vips []status.VIPStatus) {
	for _, v := range vips {
		for _, u := range v.Upstreams {
			if u.Error != "" {
				fmt.Fprintf(w, "\n%s: %s: %s", v.Address, u.Key, u.Error)
			}
		}
		if p := v.Probe; p != nil && p.Error != "" {
			fmt.Fprintf(w, "\n%s: probe %s: %s", v.Address, p.Result, p.Error)
		}
	}
}

// vipCells are the upstream cells of a VIP's row, and its probe's.
func vipCells(v status.VIPStatus) []string {
	var cells []string
	for _, u := range v.Upstreams {
		cells = append(cells, upstreamCell(u))
	}
	if p := v.Probe; p != nil {
		cells = append(cells, probeCell(p))
	}
	return cells
}

// wantCells are a VIP's WANT and IFACE cells: what rhi wants (withdraw,
// draining or stopping: in last resort for its drain_grace, drained,
// announce, degraded, lastresort) and where the VIP is (absent,
// present, degraded: on degraded.interface, or lastresort: on
// last_resort.interface), marked "!" when they disagree.
func wantCells(v status.VIPStatus) (want, onIface string) {
	want = "withdraw"
	switch {
	case v.DrainPhase == "draining" || v.DrainPhase == "stopping":
		want = v.DrainPhase // in last resort until drain_deadline
	case v.Drained:
		want = "drained"
	case v.Desired && v.Tier == decide.TierDegraded:
		want = "degraded"
	case v.Desired && v.Tier == decide.TierLastResort:
		want = "lastresort"
	case v.Desired:
		want = "announce"
	}
	onIface = "absent"
	switch {
	case v.OnLastResort:
		onIface = "lastresort" // on last_resort.interface
	case v.OnDegraded:
		onIface = "degraded" // on degraded.interface
	case v.OnInterface:
		onIface = "present"
	}
	if v.OnInterface != v.Desired || v.Desired && (v.OnDegraded != (v.Tier == decide.TierDegraded) || v.OnLastResort != (v.Tier == decide.TierLastResort)) {
		onIface += "!"
	}
	return want, onIface
}

// writeReload says, on one line, that the last reload was rejected, and
// why; nothing when it was not.
func writeReload(w io.Writer, r status.ReloadStatus, now time.Time) {
	if r.LastError == "" {
		return
	}
	why := strings.NewReplacer("\n", "; ", `\n`, "; ").Replace(r.LastError) // fetchStatus escaped newlines
	fmt.Fprintf(w, "reload     %d REJECTED %s ago, the previous configuration runs: %s\n", r.Generation, ago(now, r.LastAt), why)
}

// birdLine sums up BIRD's side: reachable, and which sessions are up.
func birdLine(b status.BirdStatus, now time.Time) string {
	switch {
	case !b.Enabled:
		return "confirmation off"
	case b.LastCheck.IsZero():
		return b.Socket + "  not checked yet"
	case b.Error != "":
		last := "never answered"
		if !b.LastOK.IsZero() {
			last = "last answer " + ago(now, b.LastOK) + " ago"
		}
		return fmt.Sprintf("%s  UNREACHABLE (checked %s ago, %s): %s", b.Socket, ago(now, b.LastCheck), last, b.Error)
	}
	var sessions []string
	for _, p := range b.Protocols {
		state := p.BGPState
		if state == "" {
			state = p.State
		}
		sessions = append(sessions, p.Name+"="+state)
	}
	return fmt.Sprintf("%s  checked %s ago: %d VIPs agree, %d disagree; sessions %s",
		b.Socket, ago(now, b.LastCheck), b.Agree, b.Disagree, strings.Join(sessions, " "))
}

// guardLine is the fail-open guard's line: its rule, whether BIRD's view
// of the other sites is known, and whether the last-resort interface
// exists.
func guardLine(g *status.FailOpenStatus, now time.Time) string {
	out := fmt.Sprintf("min %d other sites for %s; ", g.MinOtherSites, time.Duration(g.HoldSeconds*float64(time.Second)))
	switch {
	case g.Known:
		out += "view known, last answer " + ago(now, g.LastAnswer) + " ago"
	default:
		out += "view UNKNOWN (no failing VIP is withdrawn): " + g.Error
	}
	if !g.LastResortExists {
		out += "; last resort " + g.LastResortInterface + " MISSING (a failing VIP stays where it is)"
	}
	return out
}

// birdCell is one VIP's BIRD column: "ok", "ok 25ms" (time to agree after
// the last change), "NO" when BIRD disagrees, "?" when BIRD could not be
// asked since.
func birdCell(c *status.VIPConfirm) string {
	switch {
	case c == nil:
		return "-"
	case c.Stale:
		return "?"
	case !c.Agrees:
		return "NO"
	case c.Latency > 0:
		return "ok " + c.Latency.Round(time.Millisecond).String()
	}
	return "ok"
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// upstreamCell is one upstream in the VIP table: "upstreams/api=up", with
// its nodes and threshold when it has one: "upstreams/api=up(1/10<5)".
func upstreamCell(u status.UpstreamStatus) string {
	c := health.ShortKey(u.Key) + "=" + u.Verdict
	if u.MinHealthy != "" {
		rel := ">="
		if u.Healthy < u.Needed {
			rel = "<"
		}
		c += fmt.Sprintf("(%d/%d%s%d, min %s)", u.Healthy, u.Nodes, rel, u.Needed, u.MinHealthy)
	}
	return c
}

// probeCell is a VIP's probe in the VIP table: "probe=down(503 12ms)".
func probeCell(p *status.ProbeStatus) string {
	lat := time.Duration(p.LatencySeconds * float64(time.Second)).Round(time.Millisecond)
	if p.Status != 0 {
		return fmt.Sprintf("probe=%s(%d %s)", p.Result, p.Status, lat)
	}
	return fmt.Sprintf("probe=%s(%s)", p.Result, lat)
}
