package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// drainWarnTimeout bounds the question to BIRD before a drain.
const drainWarnTimeout = 5 * time.Second

// askGuard asks BIRD's guard tables about vips; tests replace it.
var askGuard = func(ctx context.Context, cfg *config.Config, vips []netip.Prefix) guardbird.Answer {
	return guardbird.Socket{Path: cfg.Bird.Socket, Timeout: cfg.Bird.Timeout}.Ask(ctx, vips)
}

// warnLastSite warns, before a drain, about each VIP that no other site
// announces as BIRD's guard table (tiers.conf) sees it: draining it
// withdraws it from the whole network. It is a warning only; the drain
// goes ahead. It asks only when fail_open is on, the sign that BIRD has
// the guard tables; when BIRD cannot be asked it says so.
func warnLastSite(ctx context.Context, cfg *config.Config, targets []netip.Prefix, stderr io.Writer) {
	if len(targets) == 0 || !cfg.FailOpen.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, drainWarnTimeout)
	defer cancel()
	a := askGuard(ctx, cfg, targets)
	if err := a.Err; err != nil || a.VIPErr != nil {
		if err == nil {
			err = a.VIPErr
		}
		fmt.Fprintf(stderr, "warning: cannot ask BIRD whether other sites announce the VIPs drained: %v\n", err)
	}
	for _, p := range targets {
		others, ok := a.Origins[p]
		if ok && len(others) == 0 {
			fmt.Fprintf(stderr, "warning: no other site announces %s (BIRD's %s): draining it withdraws it from the whole network\n", p, guardbird.Table(p))
		}
	}
}
