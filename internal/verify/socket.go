package verify

import (
	"context"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/internal/router"
)

// Socket checks against the BIRD listening on a control socket: each Check
// dials, runs Check and closes, so a restarted BIRD is simply found again.
type Socket struct {
	Path string
}

// Check dials BIRD at s.Path (under ctx and in.ExchangeTimeout) and runs
// Check. A BIRD that cannot be reached is a Report with Err set.
func (s Socket) Check(ctx context.Context, in router.Input) router.Report {
	dctx := ctx
	if in.ExchangeTimeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, in.ExchangeTimeout)
		defer cancel()
	}
	conn, err := bird.Dial(dctx, s.Path)
	if err != nil {
		return router.Report{Err: err} // it names the socket
	}
	defer conn.Close()
	return Check(ctx, conn, in)
}
