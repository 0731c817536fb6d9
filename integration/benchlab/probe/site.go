package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/rhi-daemon/rhi/integration/anycast"
	"github.com/rhi-daemon/rhi/internal/status"
)

// Status reads rhi's /status on the site directly from its status listener,
// cheaper than `rhi status --json`, which starts a process.
func Status(ctx context.Context, s *anycast.Site) (status.Status, error) {
	var st status.Status
	code, body, err := s.Get(ctx, "/status")
	if err != nil {
		return st, fmt.Errorf("%s: /status: %w", s.DC.Name, err)
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("%s: /status: HTTP %d", s.DC.Name, code)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return st, fmt.Errorf("%s: /status: %w", s.DC.Name, err)
	}
	return st, nil
}

// Metrics reads rhi's /metrics on the site.
func Metrics(ctx context.Context, s *anycast.Site) (string, error) {
	code, body, err := s.Get(ctx, "/metrics")
	if err != nil {
		return "", fmt.Errorf("%s: /metrics: %w", s.DC.Name, err)
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("%s: /metrics: HTTP %d", s.DC.Name, code)
	}
	return body, nil
}

// APISocket is the control socket of the site's fake API, where
// anycast.NewSite puts it.
func APISocket(s *anycast.Site) string { return filepath.Join(s.DC.Dir, "api.sock") }

// VIPAddr is the i-th benchmark VIP, 10.1.0.1 onwards (250 per /24, so up
// to 62,500 addresses), away from the lab's links and the seed's 10.0.0.x.
func VIPAddr(i int) string { return fmt.Sprintf("10.1.%d.%d", i/250, i%250+1) }
