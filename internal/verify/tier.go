package verify

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/internal/guardbird"
	"github.com/rhi-daemon/rhi/internal/router"
)

// exportCommand is the export question for v through protocol: with every
// attribute ("… all") when its tier is checked.
func exportCommand(protocol string, v router.VIP) string {
	if v.Tier != "" {
		return bird.ExportAllCommand(protocol, v.Prefix)
	}
	return bird.ExportCommand(protocol, v.Prefix)
}

// exportedTier reads the tier of the route in an export reply (`show route
// export … all`): TierFull, TierDegraded, TierLastResort, or a description
// of marks that fit no tier. BIRD shows the path as the export filter
// leaves it, before the copy of the own AS that every eBGP export adds: a
// degraded route carries a large community (A, 1, 1) and its path starts
// with at least one copy of A (tiers.conf adds RHI_DEGRADED_PREPEND of
// them); a last-resort route carries (A, 1, 2), GRACEFUL_SHUTDOWN and 8
// copies of A; a full-weight route carries none of them. An iBGP export has
// the communities and an empty path. With site set, a route without the
// site identity (A, 2, site), or with another, is reported as such. BIRD
// 2's and BIRD 3's names of the attributes are both read; a reply whose
// attributes are not understood is an error (bird.ErrUnreadable), never a
// full-weight export.
func exportedTier(reply bird.Reply, prefix netip.Prefix, site uint32) (string, error) {
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
	tier := tierOf(p)
	if site != 0 {
		var ids []uint32
		for _, c := range p.LargeCommunities {
			if c[1] == birdconf.SiteData1 {
				ids = append(ids, c[2])
			}
		}
		switch {
		case len(ids) == 0:
			tier += fmt.Sprintf(" without the site identity (AS, %d, %d)", birdconf.SiteData1, site)
		case len(ids) > 1 || ids[0] != site:
			tier += fmt.Sprintf(" with site identity %v, not site_id %d", ids, site)
		}
	}
	return tier, nil
}

// tierOf reads a path's tier from its marks, or describes marks that fit
// none.
func tierOf(p bird.Path) string {
	var degraded, last []uint32 // the A of each (A, 1, 1) and (A, 1, 2)
	for _, c := range p.LargeCommunities {
		switch {
		case c[1] == birdconf.TierData1 && c[2] == birdconf.DegradedData2:
			degraded = append(degraded, c[0])
		case c[1] == birdconf.TierData1 && c[2] == birdconf.LastResortData2:
			last = append(last, c[0])
		}
	}
	gshut := slices.Contains(p.Communities, bird.Community{birdconf.GracefulShutdownAS, birdconf.GracefulShutdownValue})
	switch {
	case len(degraded) > 0 && (len(last) > 0 || gshut):
		return "degraded and last-resort marks together"
	case len(last) > 0 && !gshut:
		return fmt.Sprintf("last-resort community (%d, 1, 2) without GRACEFUL_SHUTDOWN", last[0])
	case gshut && len(last) == 0:
		return "GRACEFUL_SHUTDOWN without the last-resort community (AS, 1, 2)"
	case gshut:
		if len(p.ASPath) == 0 || p.LeadingCopies(last[0]) >= birdconf.LastResortPrepend {
			return router.TierLastResort
		}
		return fmt.Sprintf("last-resort community (%d, 1, 2) with %d copies of the AS prepended, want %d (path %s)",
			last[0], p.LeadingCopies(last[0]), birdconf.LastResortPrepend, asPath(p.ASPath))
	case len(degraded) == 0 && len(p.ASPath) == 0:
		return router.TierFull
	case len(degraded) == 0:
		return fmt.Sprintf("announced with AS path %s but no degraded community", asPath(p.ASPath))
	case len(p.ASPath) == 0:
		return router.TierDegraded // iBGP: LOCAL_PREF ranks it
	}
	for _, as := range degraded {
		if p.LeadingCopies(as) >= 1 {
			return router.TierDegraded
		}
	}
	return fmt.Sprintf("degraded community (%d, 1, 1) without the prepended AS (path %s)", degraded[0], asPath(p.ASPath))
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
func tierProblems(vr router.VIPReport) []string {
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

// RouterSiteID asks BIRD for its router id ("show status") and returns it
// as a site identity, for Input.SiteID when config site_id is not set.
func RouterSiteID(ctx context.Context, b Bird) (uint32, error) {
	r, err := b.Exec(ctx, "show status")
	if err != nil {
		return 0, fmt.Errorf("show status: %w", err)
	}
	return guardbird.RouterSiteID(r)
}
