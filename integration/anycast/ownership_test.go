//go:build integration

package anycast

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/owned"
	"github.com/rhi-daemon/rhi/internal/status"
)

// recorded reads the site's ownership record (state_file).
func (s *Site) recorded(t *testing.T) string {
	t.Helper()
	r, err := owned.File(filepath.Join(s.DC.Dir, "owned")).Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range r.VIPs {
		out = append(out, p.String())
	}
	return strings.Join(out, " ")
}

// TestOwnershipRestartWithdrawsDroppedVIP: rhi announces the three seed
// VIPs; 10.0.0.102 is dropped from the config and rhi is restarted (not
// reloaded). The record says rhi put it there, so the first tick withdraws
// it, the peer loses it, and `rhi verify` is consistent again.
func TestOwnershipRestartWithdrawsDroppedVIP(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	if got := s.recorded(t); got != "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32" {
		t.Fatalf("record holds %q", got)
	}
	kept := watchPeer(t, w, "10.0.0.100", "10.0.0.101")

	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteConfig(site.Config{VIPs: site.Seed[:2]}); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32") // on_shutdown: keep
	ctx := context.Background()
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// StartRHI returns once the first tick is published: that tick is the
	// one that withdrew it.
	addrs, err := s.Addrs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(addrs, prefix("10.0.0.102")) {
		t.Errorf("after the first tick the interface still holds 10.0.0.102: %v", addrs)
	}
	w.peerSees(t, "no route", "10.0.0.102")
	t.Logf("peer lost 10.0.0.102 %v after rhi's first tick", time.Since(start).Round(time.Millisecond))
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100", "10.0.0.101")
	if l := kept(); len(l) > 0 {
		t.Errorf("the peer lost %v, which the config kept", l)
	}
	s.logHas(t, "rhi-main.log", "vip that rhi put on the interface is no longer in the config; withdrawing")
	s.logOnce(t, "rhi-main.log", 1, "level=warning", "vip=10.0.0.102/32", "no longer in the config")
	r := w.verifyExits(t, s, 0)
	wantVIPs(t, r, "daemon", "present", 2)
	s.statusWhen(t, "record shrunk", func(status.Status) error {
		if got := s.recorded(t); got != "10.0.0.100/32 10.0.0.101/32" {
			return errorf("record holds %q", got)
		}
		return nil
	})
}

// TestOwnershipNoRecordKeepsConfiguredAddress: with no record and a VIP of
// the config already on rhi0 (announced by BIRD), rhi starts without ever
// deleting it, and writes the record.
func TestOwnershipNoRecordKeepsConfiguredAddress(t *testing.T) {
	var lost func() []string
	var monitor string
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		before: func(t *testing.T, w *world, s *Site) {
			if _, err := os.Stat(filepath.Join(s.DC.Dir, "owned")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a record before the first start: %v", err)
			}
			p, err := s.DC.Start(context.Background(), "ip-monitor", "ip", "-o", "monitor", "address", "dev", s.DC.Iface)
			if err != nil {
				t.Fatal(err)
			}
			monitor = p.Stdout
			s.ip(t, "addr", "add", "10.0.0.100/32", "dev", s.DC.Iface)
			w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100")
			lost = watchPeer(t, w, "10.0.0.100")
		},
	})
	st := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	s.pollsAfter(t, st, 10)
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	if l := lost(); len(l) > 0 {
		t.Errorf("the peer lost %v while rhi started", l)
	}
	out, err := os.ReadFile(monitor)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "10.0.0.101/32") {
		t.Fatalf("ip monitor saw nothing, not even the adds:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Deleted") && strings.Contains(line, "10.0.0.100/32") {
			t.Errorf("10.0.0.100 was deleted at start-up: %s", line)
		}
	}
	s.logOnce(t, "rhi-main.log", 1, "no ownership record yet")
	if got := s.recorded(t); got != "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32" {
		t.Errorf("record holds %q", got)
	}
	if fi, err := os.Stat(filepath.Join(s.DC.Dir, "owned")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("record: %v, %v", fi, err)
	}
	s.alive(t)
}

// TestUnmanagedAddressReportedThenWithdrawn: a hand-added 10.0.0.77/32 is
// announced by BIRD with nothing checking it: `rhi verify` exits 1 naming
// it, metrics and /status show it. With unmanaged_addresses: withdraw it
// leaves the interface on the next tick, and so does one added later.
func TestUnmanagedAddressReportedThenWithdrawn(t *testing.T) {
	// A poll every second: the last step counts the polls an address takes
	// to leave, across an ip(8) run and the reads of the interface that see
	// it gone, which a loaded machine can stretch past a 200 ms poll.
	w := newWorld(t, site.Config{VIPs: site.Seed, PollInterval: time.Second})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.ip(t, "addr", "add", "10.0.0.77/32", "dev", s.DC.Iface)
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.77")

	r := w.verifyExits(t, s, 1)
	named := false
	for _, v := range r.doc.Check.VIPs {
		switch {
		case v.VIP == "10.0.0.77/32":
			named = v.Expected == "unmanaged" && !v.Agrees
		case !v.Agrees:
			t.Errorf("%s disagrees too\n%s", v.VIP, r)
		}
	}
	if !named {
		t.Errorf("rhi verify does not name 10.0.0.77/32 as unmanaged and exported\n%s", r)
	}
	s.metricsHave(t, `rhi_unmanaged_addresses{iface="rhi0"} 1`, `rhi_unmanaged_address{address="10.0.0.77/32",iface="rhi0"} 1`)
	st := s.statusWhen(t, "unmanaged listed", func(st status.Status) error {
		if !slices.Equal(st.Interface.Unmanaged, []string{"10.0.0.77/32"}) {
			return errorf("unmanaged %v", st.Interface.Unmanaged)
		}
		return nil
	})
	out, code, err := s.RHICommand(context.Background(), "status")
	if err != nil || code != 0 || !strings.Contains(out, "UNMANAGED  10.0.0.77/32") {
		t.Errorf("rhi status (exit %d, %v):\n%s", code, err, out)
	}
	s.logOnce(t, "rhi-main.log", 1, "level=warning", "announced without a health check", "10.0.0.77/32")
	s.holds(t, "10.0.0.77/32 10.0.0.100/32 10.0.0.101/32 10.0.0.102/32") // report: left alone

	if err := s.WriteConfig(site.Config{VIPs: site.Seed, Unmanaged: "withdraw", PollInterval: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	w.peerSees(t, "no route", "10.0.0.77")
	w.verifyExits(t, s, 0)
	s.metricsHave(t, `rhi_unmanaged_addresses{iface="rhi0"} 0`)

	// Added while withdraw is in force: gone within one poll of being seen.
	st = s.statusWhen(t, "polled", func(status.Status) error { return nil })
	s.ip(t, "addr", "add", "10.0.0.78/32", "dev", s.DC.Iface)
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	after := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	if n := after.ControlAPI.Polls - st.ControlAPI.Polls; n > 3 {
		t.Errorf("10.0.0.78 took %d polls to leave, want at most 2 (seen, withdrawn) and the one in flight", n)
	}
	s.logOnce(t, "rhi-main.log", 1, "withdrawing them", "10.0.0.78/32")
	s.alive(t)
}
