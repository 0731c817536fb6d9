//go:build integration

package anycast

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// metricsHave waits until /metrics on s holds every line.
func (s *Site) metricsHave(t *testing.T, lines ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var missing string
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		code, body, err := s.Get(ctx, "/metrics")
		if err != nil {
			return err
		}
		if code != 200 {
			return lab.Stop(errorf("/metrics: HTTP %d", code))
		}
		for _, l := range lines {
			if !strings.Contains(body, l+"\n") {
				missing = l
				return errorf("/metrics lacks %s", l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v (missing %q)", s.DC.Name, err, missing)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// logHas waits until the named log file of the site holds substr.
func (s *Site) logHas(t *testing.T, file, substr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(s.DC.Dir, file)
	if err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		b, err := os.ReadFile(path)
		if err == nil && !strings.Contains(string(b), substr) {
			err = errorf("%s lacks %q", file, substr)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestReloadGoodBadAndDroppedVIP(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.metricsHave(t, `rhi_config_reloads_total{result="success"} 1`, `rhi_vip_desired{vip="10.0.0.102/32"} 1`)

	// Good: drop 10.0.0.102, change 10.0.0.100's condition.
	next := site.Config{VIPs: []site.VIP{
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api", "/apisix/upstreams/auth"}, Condition: "any"},
		site.Seed[1],
	}}
	if err := s.WriteConfig(next); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "no route", "10.0.0.102")
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100", "10.0.0.101")
	s.holds(t, "10.0.0.100/32 10.0.0.101/32")
	s.metricsHave(t, `rhi_config_reloads_total{result="success"} 2`, `rhi_config_last_reload_successful 1`)
	if _, body, _ := s.Get(context.Background(), "/metrics"); strings.Contains(body, `vip="10.0.0.102/32"`) {
		t.Error("/metrics still has series for the dropped VIP")
	}

	// Bad: the old config keeps running.
	if err := os.WriteFile(s.Config, []byte("vips:\n  - address: 10.0.0.100\n    condition: most\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	s.metricsHave(t, `rhi_config_reloads_total{result="failure"} 1`, `rhi_config_last_reload_successful 0`)
	s.logHas(t, "rhi-error.log", "reload rejected")
	s.logHas(t, "rhi-error.log", `vips[0].condition: unknown value (got \"most\"`)
	// Still deciding with the good config: 10.0.0.101 follows its upstreams.
	if err := s.SetAll("unhealthy", "/apisix/upstreams/admin"); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "no route", "10.0.0.101")
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.100")
	if s.RHI() == nil {
		t.Fatal("rhi is gone")
	}
	select {
	case <-s.RHI().Done():
		t.Fatal("rhi exited after a bad reload")
	default:
	}
}

func TestDrainUndrainAndRestart(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed}, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", seedAddrs()...)

	out, code, err := s.RHICommand(ctx, "drain", "10.0.0.101")
	if err != nil || code != 0 {
		t.Fatalf("rhi drain: exit %d, %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "drained") || !strings.Contains(out, "BIRD agrees") {
		t.Errorf("rhi drain said:\n%s", out)
	}
	// Confirmed at the peer: dc1 no longer announces it, whatever its health.
	w.peerSees(t, "via dc2 (paths from dc2)", "10.0.0.101")
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", "10.0.0.100", "10.0.0.102")
	s.metricsHave(t, `rhi_vip_drained{vip="10.0.0.101/32"} 1`, `rhi_vip_on_interface{vip="10.0.0.101/32"} 0`)
	st, err := s.Status(ctx)
	if err != nil || !st.VIPs[1].Drained || st.VIPs[1].Desired {
		t.Fatalf("status: %+v, %v", st.VIPs[1], err)
	}

	// The drain survives a restart of rhi: the VIP never comes back.
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	s.metricsHave(t, `rhi_vip_drained{vip="10.0.0.101/32"} 1`)
	w.peerSees(t, "via dc2 (paths from dc2)", "10.0.0.101")
	s.holds(t, "10.0.0.100/32 10.0.0.102/32")

	out, code, err = s.RHICommand(ctx, "undrain", "10.0.0.101")
	if err != nil || code != 0 {
		t.Fatalf("rhi undrain: exit %d, %v\n%s", code, err, out)
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", seedAddrs()...)

	out, code, err = s.RHICommand(ctx, "drain", "--all")
	if err != nil || code != 0 {
		t.Fatalf("rhi drain --all: exit %d, %v\n%s", code, err, out)
	}
	w.peerSees(t, "via dc2 (paths from dc2)", seedAddrs()...)
	if out, code, _ := s.RHICommand(ctx, "undrain", "--all"); code != 0 {
		t.Fatalf("rhi undrain --all: exit %d\n%s", code, out)
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", seedAddrs()...)
}

func TestOnShutdown(t *testing.T) {
	for _, mode := range []string{"keep", "withdraw"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, site.Config{VIPs: site.Seed, OnShutdown: mode})
			s := w.sites[0]
			w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
			if err := s.StopRHI(); err != nil {
				t.Fatal(err)
			}
			if mode == "keep" {
				s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
				w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
				return
			}
			// rhi waited for BIRD to confirm before it exited.
			s.holds(t, "")
			s.logHas(t, "rhi-main.log", "BIRD confirms every VIP withdrawn")
			w.peerSees(t, "no route", seedAddrs()...)
		})
	}
}

func TestDryRunTouchesNothing(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	// By hand: one VIP gone, one foreign address.
	if _, err := s.DC.Run(ctx, "ip", "addr", "del", "10.0.0.100/32", "dev", s.DC.Iface); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAll("unhealthy", "/apisix/upstreams/auth"); err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(ctx, "--dry-run"); err != nil {
		t.Fatal(err)
	}
	s.logHas(t, "rhi-error.log", "dry run: not changing the interface")
	// Several polls later, nothing changed.
	if err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		st, err := s.Status(ctx)
		if err == nil && st.ControlAPI.Polls < 10 {
			err = errorf("%d polls", st.ControlAPI.Polls)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.101/32 10.0.0.102/32")
	s.metricsHave(t, `rhi_vip_desired{vip="10.0.0.100/32"} 1`, `rhi_vip_on_interface{vip="10.0.0.100/32"} 0`,
		`rhi_vip_desired{vip="10.0.0.101/32"} 0`, `rhi_vip_on_interface{vip="10.0.0.101/32"} 1`)
}

func TestLogReopenAfterRename(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	main := filepath.Join(s.DC.Dir, "rhi-main.log")
	s.logHas(t, "rhi-main.log", "rhi starting")
	if err := os.Rename(main, main+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RHI().Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	s.logHas(t, "rhi-main.log", "log files reopened")
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.logHas(t, "rhi-main.log", "vip unavailable: withdrawing")
	old, _ := os.ReadFile(main + ".1")
	if strings.Contains(string(old), "vip unavailable") || !strings.Contains(string(old), "rhi starting") {
		t.Errorf("the rotated file got lines after the reopen:\n%s", old)
	}
}
