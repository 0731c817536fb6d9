package main

import (
	"context"
	"net/netip"

	"github.com/rhi-daemon/rhi/internal/guard"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// guardView gives the daemon guardbird's round as the guard's view: the
// same answer, in the guard's words (the daemon stamps its time).
type guardView struct{ v guardbird.Viewer }

func (g guardView) View(ctx context.Context, vips []netip.Prefix) guard.View {
	r := g.v.View(ctx, vips)
	return guard.View{At: r.At, Err: r.Err, Serving: r.Serving, Unknown: r.Unknown}
}
