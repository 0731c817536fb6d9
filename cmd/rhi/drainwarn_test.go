package main

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
)

func birdFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bird", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDrainWarnsLastSite: draining a VIP that BIRD's guard table shows no
// other site announcing warns; one that other sites announce does not;
// the drain is recorded either way.
func TestDrainWarnsLastSite(t *testing.T) {
	alone, shared := netip.MustParsePrefix("10.255.0.11/32"), netip.MustParsePrefix("10.255.0.10/32")
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                    birdFixture(t, "bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
		bird.GuardCommand(shared, "rhi_guard4"): birdFixture(t, "tiers/bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.two-sites.txt"),
		bird.GuardCommand(alone, "rhi_guard4"):  "8001 Network not found\n",
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rhi.yaml")
	text := "drain_file: " + filepath.Join(dir, "drain") + "\nbird:\n  socket: " + srv.Path + "\n" + `fail_open: {min_other_sites: 1}
vips:
  - address: 10.255.0.10
    upstreams: ["/apisix/upstreams/api"]
  - address: 10.255.0.11
    upstreams: ["/apisix/upstreams/auth"]
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"drain", "--no-wait", "--config", cfg, "--all"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := errb.String()
	if !strings.Contains(got, "warning: no other site announces 10.255.0.11/32") || strings.Contains(got, "10.255.0.10/32") {
		t.Errorf("stderr %q: want a warning for 10.255.0.11 only", got)
	}

	// BIRD away: the drain says it could not ask, and goes ahead.
	srv.Close()
	errb.Reset()
	if code := run([]string{"undrain", "--no-wait", "--config", cfg, "--all"}, &out, &errb); code != exitOK {
		t.Fatal(errb.String())
	}
	if code := run([]string{"drain", "--no-wait", "--config", cfg, "10.255.0.10"}, &out, &errb); code != exitOK {
		t.Fatal(errb.String())
	}
	if !strings.Contains(errb.String(), "warning: cannot ask BIRD") {
		t.Errorf("stderr %q: want a warning that BIRD could not be asked", errb.String())
	}
}
