package main

import (
	"context"
	"net/netip"

	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// guardView gives the daemon the guard's view from guardbird's answer.
//
// Interim: this guardbird asks once per VIP and counts every path of
// another origin AS, whatever its tier, where the guard needs the distinct
// site ids of the other sites with a serving path, from one dump. Until
// guardbird answers that, origin ASes stand in for site ids, and a VIP
// BIRD did not answer for is unknown.
type guardView struct{ s guardbird.Socket }

func (g guardView) View(ctx context.Context, vips []netip.Prefix) guard.View {
	a := g.s.Ask(ctx, vips)
	return guard.View{At: a.At, Err: a.Err, Serving: a.Origins}
}
