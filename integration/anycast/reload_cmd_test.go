//go:build integration

package anycast

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/site"
)

// TestReloadCommandTellsTheTruth: `rhi
// reload` (the unit's ExecReload) exits 1 with the reason when the daemon
// rejects the file (it changes interface:, a restart-only key), and 0 when
// the daemon applied it; /status's reload fields say the same.
func TestReloadCommandTellsTheTruth(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Rejected: the same VIPs on another interface.
	good, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(good), "interface: "+s.DC.Iface+"\n", "interface: rhi-elsewhere\n", 1)
	if moved == string(good) {
		t.Fatalf("no interface line in %s", s.Config)
	}
	if err := os.WriteFile(s.Config, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, err := s.RHICommand(ctx, "reload")
	if err != nil || code != 1 || !strings.Contains(out, "reload 1 rejected") || !strings.Contains(out, "only on restart: interface") {
		t.Fatalf("rhi reload of a changed interface: exit %d, %v, output:\n%s\nwant exit 1 naming interface", code, err, out)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Reload; r.Generation != 1 || r.AppliedGeneration != 0 || r.InProgress || !strings.Contains(r.LastError, "interface") {
		t.Errorf("/status reload after the rejection: %+v", r)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32") // untouched

	// Applied: drop 10.0.0.102.
	if err := s.WriteConfig(site.Config{VIPs: site.Seed[:2]}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, code, err = s.RHICommand(ctx, "reload", "--timeout", "30s")
	t.Logf("rhi reload (applied) took %s", time.Since(began).Round(time.Millisecond))
	if err != nil || code != 0 || out != "reload 2 applied\n" {
		t.Fatalf("rhi reload of a good file: exit %d, %v, output %q; want 0, \"reload 2 applied\"", code, err, out)
	}
	// Applied means the loop runs it: the dropped VIP goes without waiting
	// for another reload.
	w.peerSees(t, "no route", "10.0.0.102")
	s.holds(t, "10.0.0.100/32 10.0.0.101/32")
	if st, err = s.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if r := st.Reload; r.Generation != 2 || r.AppliedGeneration != 2 || r.InProgress || r.LastError != "" || r.LastAt.IsZero() {
		t.Errorf("/status reload after the applied one: %+v", r)
	}
	s.metricsHave(t, `rhi_config_reloads_total{result="failure"} 1`, `rhi_config_reloads_total{result="success"} 2`,
		`rhi_config_last_reload_successful 1`)
}
