package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// drainWarnTimeout bounds the question to BIRD before a drain.
const drainWarnTimeout = 5 * time.Second

// askGuard reads one round of BIRD's guard tables about vips (the fail-open
// guard's own view); tests replace it.
var askGuard = func(ctx context.Context, cfg *config.Config, vips []netip.Prefix) guardbird.View {
	return guardbird.Viewer{Path: cfg.Bird.Socket, Timeout: cfg.Bird.Timeout, SiteID: uint32(cfg.SiteID)}.View(ctx, vips)
}

// warnLastSite warns, before a drain, about each VIP that no other site
// serves as BIRD's guard tables (tiers.conf) show them (a path in last
// resort does not serve): draining it withdraws the last serving
// announcement of it. It is a warning only; the drain goes ahead. It asks
// only when fail_open is on, the sign that BIRD has the guard tables;
// when BIRD cannot tell, for the round or a VIP, it says so.
func warnLastSite(ctx context.Context, cfg *config.Config, targets []netip.Prefix, stderr io.Writer) {
	if len(targets) == 0 || !cfg.FailOpen.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, drainWarnTimeout)
	defer cancel()
	v := askGuard(ctx, cfg, targets)
	if v.Err != nil {
		fmt.Fprintf(stderr, "warning: cannot ask BIRD whether other sites serve the VIPs drained: %v\n", v.Err)
		return
	}
	for _, p := range targets {
		others, ok := v.Sites(p)
		switch {
		case !ok:
			why := v.Unknown[p]
			if why == nil {
				why = errors.New("BIRD's answer does not cover it")
			}
			fmt.Fprintf(stderr, "warning: cannot tell whether other sites serve %s: %v\n", p, why)
		case len(others) == 0:
			fmt.Fprintf(stderr, "warning: no other site serves %s (BIRD's guard tables): draining it withdraws it from the whole network\n", p)
		}
	}
}
