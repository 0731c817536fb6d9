package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/bird/birdtest"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/internal/guardbird"
)

// guardFixture is a transcript of BIRD's answers kept by package guardbird.
func guardFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "guardbird", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDrainWarnsLastSite: draining a VIP that BIRD's guard tables show no
// other site serving warns; one that another site serves does not; the
// drain is recorded either way. The answers are the lab's, where another
// site (dc2) serves 10.255.0.10 and nobody serves 10.255.0.11.
func TestDrainWarnsLastSite(t *testing.T) {
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all": guardFixture(t, "bird2.0.12-ebgp-protocols-all.txt"),
		"show status":        guardFixture(t, "bird2.0.12-ebgp-status.txt"),
		guardbird.DumpCommand(birdconf.GuardTable4): guardFixture(t, "bird2.0.12-ebgp-guard4.txt"),
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
	if !strings.Contains(got, "warning: no other site serves 10.255.0.11/32") || strings.Contains(got, "10.255.0.10/32") {
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
