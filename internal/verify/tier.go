package verify

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/internal/config"
)

// The degraded tier (issue 14). A present VIP whose Tier is set is also
// checked for how each session exports it: with the degraded attributes
// (deploy/bird/tiers.conf: the own AS prepended, the large community
// (AS, 1, 1)) when degraded, without them when announced at full weight.
const (
	TierFull     = "announced" // exported without the degraded attributes
	TierDegraded = "degraded"  // exported with them
)

// exportCommand is the export question for v through protocol: with every
// attribute ("… all") when its tier is checked.
func exportCommand(protocol string, v VIP) string {
	if v.Tier != "" {
		return bird.ExportAllCommand(protocol, v.Prefix)
	}
	return bird.ExportCommand(protocol, v.Prefix)
}

// exportedTier reads the tier of the route in an export reply (`show route
// export … all`). BIRD shows the path as the export filter leaves it,
// before the copy of the own AS that every eBGP export adds: a degraded
// route carries a large community (A, 1, 1) and its path starts with at
// least one copy of A (tiers.conf adds RHI_DEGRADED_PREPEND of them); a
// full-weight route carries neither. Anything between (the community
// without the prepend, or the reverse) is reported as such. BIRD 2's and
// BIRD 3's names of the attributes are both read; a reply whose
// attributes are not understood is an error (bird.ErrUnreadable), never a
// full-weight export.
func exportedTier(reply bird.Reply, prefix netip.Prefix) (string, error) {
	paths, err := bird.ParsePaths(reply)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if p.Prefix != prefix.Masked() {
			return "", fmt.Errorf("reply lists %q", p.Prefix)
		}
	}
	if len(paths) == 0 {
		return "", fmt.Errorf("no route in the reply")
	}
	p := paths[0]
	if p.Source == "" {
		// No source line (BIRD 2's "Type:", BIRD 3's "source:"): the
		// reply's attributes are in a form not known, and a missing path
		// or community would read as a full-weight export.
		return "", fmt.Errorf("route of %s by %q: %w: no source attribute, so its other attributes are not known either", p.Prefix, p.Proto, bird.ErrUnreadable)
	}
	var marks []uint32
	for _, c := range p.LargeCommunities {
		if c[1] == 1 && c[2] == 1 {
			marks = append(marks, c[0])
		}
	}
	switch {
	case len(marks) == 0 && len(p.ASPath) == 0:
		return TierFull, nil
	case len(marks) == 0:
		return fmt.Sprintf("announced with AS path %s but no degraded community", asPath(p.ASPath)), nil
	}
	for _, as := range marks {
		if p.LeadingCopies(as) >= 1 {
			return TierDegraded, nil
		}
	}
	return fmt.Sprintf("degraded community (%d, 1, 1) without the prepended AS (path %s)", marks[0], asPath(p.ASPath)), nil
}

func asPath(path []uint32) string {
	if len(path) == 0 {
		return "empty"
	}
	s := make([]string, len(path))
	for i, as := range path {
		s[i] = fmt.Sprint(as)
	}
	return strings.Join(s, " ")
}

// tierProblems says, for a present VIP whose tier is checked, which
// sessions export it otherwise than its tier.
func tierProblems(vr VIPReport) []string {
	if vr.Tier == "" {
		return nil
	}
	var out []string
	for name, got := range vr.ExportedTier {
		if got != vr.Tier {
			out = append(out, fmt.Sprintf("exported to %s as %s, want %s", name, got, vr.Tier))
		}
	}
	slices.Sort(out)
	return out
}

// runningTier is the tier `rhi verify` checks for a VIP of the running
// daemon: the one its /status names, when the VIP is present and the
// config file gives it a degraded tier; "" otherwise. (From a poll alone
// no tier is checked: rise and fall need a history one poll lacks.)
func runningTier(cfg *config.Config, p netip.Prefix, v RunningVIP) string {
	if !v.Desired || (v.Tier != TierFull && v.Tier != TierDegraded) {
		return ""
	}
	for i := range cfg.VIPs {
		if cfg.VIPs[i].Address == p {
			if cfg.VIPs[i].Degraded.On() {
				return v.Tier
			}
			return ""
		}
	}
	return ""
}
