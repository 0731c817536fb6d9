package guardbird

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// Execer runs one command on BIRD's control socket (*bird.Conn).
type Execer interface {
	Exec(ctx context.Context, cmd string) (bird.Reply, error)
}

// Table is the guard table that holds p's family.
func Table(p netip.Prefix) string {
	if p.Addr().Is6() {
		return birdconf.GuardTable6
	}
	return birdconf.GuardTable4
}

// timed bounds each exchange.
type timed struct {
	c Execer
	d time.Duration
}

func (t timed) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	if t.d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.d)
		defer cancel()
	}
	return t.c.Exec(ctx, cmd)
}

// isBirdError reports whether err is BIRD's own error reply, after which
// the connection stays usable.
func isBirdError(err error) bool {
	var be *bird.Error
	return errors.As(err, &be)
}
