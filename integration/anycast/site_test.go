//go:build integration

package anycast

import (
	"context"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// Site is a site of the tests: the harness, plus the checks the tests add
// to it as methods.
type Site struct{ *site.Site }

// NewSite starts a site on dc with cfg (see site.New).
func NewSite(ctx context.Context, dc *lab.DC, bins site.Binaries, cfg site.Config) (*Site, error) {
	s, err := site.New(ctx, dc, bins, cfg)
	if err != nil {
		return nil, err
	}
	return &Site{s}, nil
}
