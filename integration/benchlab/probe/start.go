package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rhi-daemon/rhi/integration/anycast"
	"github.com/rhi-daemon/rhi/integration/lab"
)

// StartRHI runs `rhi run` on the site under the name proc and waits, up to
// limit, until /status says it has ticked. anycast.Site.StartRHI waits
// through `rhi status --json`, whose output the lab cuts at 1 MiB: too
// little for /status at a few thousand VIPs. The process stops when ctx
// ends, when Stop is called, or with the lab.
func StartRHI(ctx context.Context, s *anycast.Site, rhi, proc string, limit time.Duration) (*lab.Proc, error) {
	p, err := s.DC.Start(ctx, proc, rhi, "run", "--config", s.Config)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := Status(wctx, s)
		if err == nil && st.Ready {
			return p, nil
		}
		if err == nil {
			err = errors.New("not ready")
		}
		select {
		case <-p.Done():
			return nil, fmt.Errorf("%s: rhi exited: %v (see %s)", s.DC.Name, p.Wait(ctx), p.Stderr)
		case <-wctx.Done():
			p.Stop()
			return nil, fmt.Errorf("%s: rhi not ready after %s: %w", s.DC.Name, limit, err)
		case <-tick.C:
		}
	}
}
