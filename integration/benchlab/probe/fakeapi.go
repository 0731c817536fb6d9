package probe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Requests asks the fake control API steered through the unix socket at
// path (integration/fakeapi's GET /requests) how many health requests it
// has served. fakeapi.Client has no such method; this is the protocol's
// own endpoint.
func Requests(ctx context.Context, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://fake/requests", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("fake api requests: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, fmt.Errorf("fake api requests: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("fake api requests: HTTP %d: %q", resp.StatusCode, body)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(body)))
	if err != nil {
		return 0, fmt.Errorf("fake api requests: %w", err)
	}
	return n, nil
}
