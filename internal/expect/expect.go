package expect

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/router"
)

// Where a Want comes from, in `rhi verify --json`.
const (
	SourceDaemon = "daemon"
	SourcePoll   = "poll"
)

// Want is what rhi wants, per VIP, and where that was learnt: the
// expectation `rhi verify` holds BIRD to.
type Want struct {
	Source    string // SourceDaemon or SourcePoll
	Address   string // control_socket, or the control API's URL
	Fallback  string // why the daemon was not the source; "" when it was
	Interface string // the interface the VIPs live on
	VIPs      []Wanted
	Notes     []string // for people: what the expectation left out or assumed
}

// Wanted is one VIP's expected state. When Judged is false nobody could
// say what it should be, and Input takes Present from the interface.
type Wanted struct {
	Prefix  netip.Prefix
	Present bool
	Judged  bool
	Why     string // why it is not judged; or what withdrew it (a threshold, a probe), if anything did
	// Tier is how BIRD must export a present VIP (TierFull, TierDegraded,
	// TierLastResort), "" when not checked.
	Tier string
}

// Running is what the running daemon says it manages (its /status), as
// FromDaemon needs it.
type Running struct {
	Interface   string   // the interface it manages; "": the config's
	Withdrawing []string // VIPs dropped by a reload, still on the interface
	VIPs        []RunningVIP
}

// RunningVIP is one VIP of the running daemon and its decision.
type RunningVIP struct {
	Address string
	Desired bool
	// Why, for a VIP not desired, names a capacity threshold or a probe
	// that withdrew it; "" otherwise.
	Why  string
	Tier string // its /status tier: announced, degraded, last_resort, withdrawn
}

// FromDaemon takes the daemon's decisions. The daemon's VIPs are the
// ones checked, since they are what it announces; a config file that
// differs (edited, not yet reloaded) is noted, not judged.
//
// VIPs a reload dropped that the daemon is still withdrawing are checked
// as absent: the daemon owns them until they are gone, and BIRD must stop
// exporting them.
func FromDaemon(cfg *config.Config, run Running) (*Want, error) {
	w := &Want{Source: SourceDaemon, Address: cfg.ControlSocket, Interface: cmp.Or(run.Interface, cfg.Interface)}
	running := map[netip.Prefix]bool{}
	for _, v := range run.VIPs {
		p, err := netip.ParsePrefix(v.Address)
		if err != nil {
			return nil, fmt.Errorf("status from %s: vip %q: %w", cfg.ControlSocket, v.Address, err)
		}
		running[p] = true
		w.VIPs = append(w.VIPs, Wanted{Prefix: p, Present: v.Desired, Judged: true, Why: v.Why, Tier: runningTier(cfg, p, v)})
	}
	withdrawing := map[netip.Prefix]bool{}
	for _, a := range run.Withdrawing {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("status from %s: withdrawing vip %q: %w", cfg.ControlSocket, a, err)
		}
		if !running[p] {
			withdrawing[p] = true
			w.VIPs = append(w.VIPs, Wanted{Prefix: p, Present: false, Judged: true})
		}
	}
	if len(run.Withdrawing) > 0 {
		w.Notes = append(w.Notes, "dropped from the config by a reload and still being withdrawn (checked as withdrawn): "+strings.Join(run.Withdrawing, " "))
	}
	w.noteDrift(cfg, run.Interface, running, withdrawing)
	return w, nil
}

// noteDrift notes where the config file and the running daemon differ.
func (w *Want) noteDrift(cfg *config.Config, iface string, running, withdrawing map[netip.Prefix]bool) {
	var onlyFile, onlyDaemon []string
	inFile := map[netip.Prefix]bool{}
	for _, v := range cfg.VIPs {
		inFile[v.Address] = true
		if !running[v.Address] && !withdrawing[v.Address] {
			onlyFile = append(onlyFile, v.Address.String())
		}
	}
	for _, v := range w.VIPs {
		if !inFile[v.Prefix] && !withdrawing[v.Prefix] {
			onlyDaemon = append(onlyDaemon, v.Prefix.String())
		}
	}
	if len(onlyFile) > 0 {
		w.Notes = append(w.Notes, "in the config file but not in the running daemon (reload it to apply), not checked: "+strings.Join(onlyFile, " "))
	}
	if len(onlyDaemon) > 0 {
		w.Notes = append(w.Notes, "in the running daemon but no longer in the config file (checked): "+strings.Join(onlyDaemon, " "))
	}
	if iface != "" && iface != cfg.Interface {
		w.Notes = append(w.Notes, fmt.Sprintf("the running daemon manages interface %q, the config file names %q (a restart applies it)", iface, cfg.Interface))
	}
}

// Poller reads the health of upstreams, as the daemon does: an
// *apisix.Client built from the config (its URL, timeout and poll mode).
type Poller interface {
	Poll(ctx context.Context, keys []health.Upstream) health.Snapshot
}

// FromPoll polls the control API once through p and evaluates each
// VIP's condition. Rise/fall and the failure policy need a history that
// one poll does not have: a settled verdict is taken as it is, an
// unsettled one is not judged. The error says that the API did not answer
// at all.
func FromPoll(ctx context.Context, cfg *config.Config, p Poller) (*Want, error) {
	w := &Want{Source: SourcePoll, Address: cfg.ControlURL, Interface: cfg.Interface}
	var keys []health.Upstream
	for _, v := range cfg.VIPs {
		keys = append(keys, v.Upstreams...)
	}
	var snap health.Snapshot
	if len(keys) > 0 {
		snap = p.Poll(ctx, keys)
		if err := unanswered(snap, keys); err != nil {
			return nil, fmt.Errorf("control API at %s did not answer: %w", cfg.ControlURL, err)
		}
	}
	for i := range cfg.VIPs {
		v := &cfg.VIPs[i]
		wv := Wanted{Prefix: v.Address, Judged: true}
		switch decide.Evaluate(v, snap, cfg.FailurePolicy.NoChecker) {
		case decide.Available:
			wv.Present = true
		case decide.Unavailable:
			wv.Why = thresholdWhy(v, snap, cfg.FailurePolicy.NoChecker) // "" unless a threshold decided it
			if cfg.FailOpen.Enabled() {
				// The fail-open guard keeps it in last resort or withdraws
				// it, as BIRD's view of the other sites says: one poll
				// cannot tell which.
				wv.Judged = false
				wv.Why = "unavailable; the fail-open guard decides between last resort and withdrawn"
			}
		default:
			wv.Judged = false
			wv.Why = "health unknown (" + unsettled(v, snap, cfg.FailurePolicy.NoChecker) + ")"
		}
		w.VIPs = append(w.VIPs, wv)
	}
	return w, nil
}

// unanswered returns the first key's error when no key got an answer from
// APISIX (every one failed): then nothing at all is known.
func unanswered(snap health.Snapshot, keys []health.Upstream) error {
	for _, k := range keys {
		if snap[k.Key].Verdict != health.Failed {
			return nil
		}
	}
	return snap[keys[0].Key].Err
}

// unsettled names the upstreams of v that the poll could not read.
func unsettled(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) string {
	var out []string
	for _, u := range v.Upstreams {
		r := snap[u.Key]
		if decide.Classify(r, noChecker) != decide.UpstreamFailed {
			continue
		}
		s := health.ShortKey(u.Key) + ": " + r.Verdict.String()
		if r.Err != nil {
			s += ": " + r.Err.Error()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "; ")
}

// Input is the check of w against an interface that holds held: a VIP not
// judged is held to what the interface holds (what the daemon would keep),
// and a host address on the interface that rhi neither wants nor is
// withdrawing is checked as Unmanaged (BIRD must not export it; nothing
// checks its health) and noted. protocols and timeout are config
// bird.protocols and bird.timeout.
func (w *Want) Input(held []netip.Prefix, protocols []string, timeout time.Duration) router.Input {
	on := make(map[netip.Prefix]bool, len(held))
	for _, p := range held {
		on[p] = true
	}
	in := router.Input{Protocols: protocols, ExchangeTimeout: timeout}
	known := make(map[netip.Prefix]bool, len(w.VIPs))
	for i := range w.VIPs {
		v := &w.VIPs[i]
		known[v.Prefix] = true
		if !v.Judged {
			v.Present = on[v.Prefix]
		}
		in.VIPs = append(in.VIPs, router.VIP{Prefix: v.Prefix, Expected: expected(v.Present), OnInterface: on[v.Prefix], Tier: v.Tier})
	}
	var names []string
	for _, p := range held {
		if !known[p] {
			in.VIPs = append(in.VIPs, router.VIP{Prefix: p, Expected: router.Unmanaged, OnInterface: true})
			names = append(names, p.String())
		}
	}
	if len(names) > 0 {
		w.Notes = append(w.Notes, "on the interface but not managed by rhi (checked: BIRD must not export them): "+strings.Join(names, " "))
	}
	return in
}

// NotJudged returns the VIPs whose health nobody could tell.
func (w *Want) NotJudged() []Wanted {
	var out []Wanted
	for _, v := range w.VIPs {
		if !v.Judged {
			out = append(out, v)
		}
	}
	return out
}

func expected(present bool) router.Expectation {
	if present {
		return router.Present
	}
	return router.Absent
}

// runningTier is the tier `rhi verify` checks for a VIP of the running
// daemon: the one its /status names (its placement), when the VIP is
// present and the config uses the tiers (the VIP can be degraded, or the
// fail-open guard is on; last resort always); "" otherwise. It is what the
// daemon's own confirmation expects. (From a poll alone no tier is
// checked: rise and fall need a history one poll lacks.)
func runningTier(cfg *config.Config, p netip.Prefix, v RunningVIP) string {
	if !v.Desired {
		return ""
	}
	if v.Tier == router.TierLastResort {
		return router.TierLastResort
	}
	if v.Tier != router.TierFull && v.Tier != router.TierDegraded {
		return ""
	}
	for i := range cfg.VIPs {
		if cfg.VIPs[i].Address == p {
			if cfg.VIPs[i].Degraded.On() || cfg.FailOpen.Enabled() {
				return v.Tier
			}
			return ""
		}
	}
	return ""
}
