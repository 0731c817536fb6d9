//go:build integration

package anycast

// A host that works against rhi: a second rhi on the same interface,
// addresses rhi does not manage next to its VIPs, a bad drain file, the
// ownership record, the control socket and the status listener.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// TestSecondRunOnSameInterfaceRefused: a second `rhi run` on the
// interface a running rhi manages (an operator trying a new config by hand,
// a stray instance) must refuse to start. It once died on
// "address in use" of status_listen, by accident; now a listener that
// cannot be bound is retried, so both loops run on rhi0: with another VIP
// list and unmanaged_addresses: withdraw, each deletes the other's VIPs
// every tick, and each rewrites the shared ownership record with its own.
func TestSecondRunOnSameInterfaceRefused(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	text, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	second := string(text)
	second = replaceOnce(t, second, "rhi.sock", "rhi2.sock")
	second = replaceOnce(t, second, "rhi-main.log", "rhi2-main.log")
	second = replaceOnce(t, second, "rhi-error.log", "rhi2-error.log")
	second = replaceOnce(t, second, "unmanaged_addresses: report", "unmanaged_addresses: withdraw")
	second = second[:strings.Index(second, "vips:")] + "vips:\n  - address: 10.0.0.100\n    upstreams: [\"/apisix/upstreams/api\"]\n"
	path := filepath.Join(s.DC.Dir, "rhi2.yaml")
	if err := os.WriteFile(path, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	mon, err := s.DC.Start(context.Background(), "ip-monitor-second", "ip", "-o", "monitor", "address", "dev", s.DC.Iface)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.DC.Start(context.Background(), "rhi-second", bins.RHI, "run", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	// Bounded: 40 looks at the interface, 100 ms apart.
	var lost []string
	exited := false
	for range 40 {
		select {
		case <-p.Done():
			exited = true
		default:
		}
		addrs, err := s.Addrs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"10.0.0.101/32", "10.0.0.102/32"} {
			if !slices.Contains(addrs, prefix(a)) && !slices.Contains(lost, a) {
				lost = append(lost, a)
			}
		}
		if exited {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Refusing to start, or waiting for the first to stop, will do; running
	// its loop on the interface will not.
	if log, _ := os.ReadFile(filepath.Join(s.DC.Dir, "rhi2-main.log")); strings.Contains(string(log), "started; initial VIP state taken from the interface") {
		t.Errorf("a second rhi run on %s (exited: %v) started its loop: two loops manage one interface", s.DC.Iface, exited)
	}
	mon.Stop()
	events, err := os.ReadFile(mon.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(events), "\n") {
		for _, a := range []string{"10.0.0.101/32", "10.0.0.102/32"} {
			if strings.HasPrefix(line, "Deleted") && strings.Contains(line, " "+a+" ") && !slices.Contains(lost, a) {
				lost = append(lost, a)
			}
		}
	}
	if len(lost) > 0 {
		t.Errorf("the second rhi deleted the first one's VIPs %v (healthy, configured, announced)", lost)
	}
	if got := s.recorded(t); got != "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32" {
		t.Errorf("the first rhi's ownership record was overwritten: holds %q", got)
	}
	s.alive(t)
}

// TestUnmanagedSparesLinkLocal: unmanaged_addresses is about global
// host addresses, which BIRD announces with no health check. A link-local
// /128 or /32 on the interface is not announced (BIRD's direct protocol
// skips link scope); it must be neither reported as "announced without a
// health check" nor deleted under unmanaged_addresses: withdraw.
func TestUnmanagedSparesLinkLocal(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed, Unmanaged: "withdraw"}, faultSite{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	st := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	s.ip(t, "addr", "add", "fe80::77/128", "dev", s.DC.Iface)
	s.ip(t, "addr", "add", "169.254.7.7/32", "dev", s.DC.Iface)
	s.pollsAfter(t, st, 5)
	out, err := s.DC.Run(context.Background(), "ip", "-o", "addr", "show", "dev", s.DC.Iface)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"fe80::77/128", "169.254.7.7/32"} {
		if !strings.Contains(out, " "+a+" ") {
			t.Errorf("%s (link-local, never announced) was deleted under unmanaged_addresses: withdraw", a)
		}
	}
	now, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Interface.Unmanaged) > 0 {
		t.Errorf("listed as announced without a health check: %v", now.Interface.Unmanaged)
	}
	s.alive(t)
}

// TestPointToPointPeerNamed: rhi0 carries health-checked VIPs only.
// A point-to-point entry "10.9.0.1 peer 10.0.0.99/32" added by hand makes
// BIRD's direct protocol originate 10.0.0.99/32, which the shipped filter
// (host routes from rhi0) exports: a /32 attracted with no health check
// behind it, the worst failure of an RHI daemon. `rhi verify`
// must exit 1 naming it, as it does for a hand-added 10.0.0.77/32, and
// /status must list it as unmanaged. (A hand-added /24 is not exported by
// the shipped filter: that held.)
func TestPointToPointPeerNamed(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.ip(t, "addr", "add", "10.9.0.1", "peer", "10.0.0.99/32", "dev", s.DC.Iface)
	w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.99")
	r, err := runVerify(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rhi verify exit %d:\n%s", r.code, r.stdout)
	if r.code != 1 {
		t.Errorf("rhi verify exits %d with 10.0.0.99/32 exported from %s and no health check behind it, want 1", r.code, s.DC.Iface)
	}
	if !strings.Contains(r.stdout, "10.0.0.99") {
		t.Errorf("rhi verify does not name 10.0.0.99/32")
	}
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Interface.Unmanaged, func(a string) bool { return strings.Contains(a, "10.0.0.99") }) {
		t.Errorf("/status unmanaged %v does not list 10.0.0.99/32 (foreign: %v)", st.Interface.Unmanaged, st.Interface.Foreign)
	}
	s.alive(t)
}

// TestBadDrainFileAtStartKeepsDrains: an operator drains 10.0.0.100
// (maintenance: its backends pass health checks but must get no traffic),
// then the drain file becomes unreadable while rhi is down (a hand edit
// with a typo; a package upgrade restarts rhi). While running, rhi keeps
// "the drains already in force" for an unreadable file; at start there are
// none in force, so every drain is forgotten and the VIP under maintenance
// is put back into service. It must stay withdrawn (or rhi refuse to start,
// leaving the interface as it is).
func TestBadDrainFileAtStartKeepsDrains(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	if out, code, err := s.RHICommand(context.Background(), "drain", "10.0.0.100"); err != nil || code != 0 {
		t.Fatalf("rhi drain: exit %d, %v\n%s", code, err, out)
	}
	s.holds(t, "10.0.0.101/32 10.0.0.102/32")
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.DC.Dir, "drain")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(text, "10.0.0.1O1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	mon, err := s.DC.Start(context.Background(), "ip-monitor-drain", "ip", "-o", "monitor", "address", "dev", s.DC.Iface)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(context.Background()); err != nil {
		t.Logf("rhi refused to start: %v", err) // acceptable: nothing changed
	}
	st := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	s.pollsAfter(t, st, 5)
	mon.Stop()
	events, err := os.ReadFile(mon.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(events), "\n") {
		if !strings.HasPrefix(line, "Deleted") && strings.Contains(line, " 10.0.0.100/32 ") {
			t.Errorf("the drained 10.0.0.100 was put back on %s at start: %s", s.DC.Iface, line)
		}
	}
}

// TestUnmanagedSparesLoopback: unmanaged addresses are the *global*
// host addresses. On an interface that also carries ::1/128
// (interface: lo, a common place for anycast VIPs), unmanaged_addresses:
// withdraw deletes the host's IPv6 loopback, and report mode raises the
// "announced without a health check" alarm for it, though BIRD never
// exports a host-scope address. check-config accepts the combination.
func TestUnmanagedSparesLoopback(t *testing.T) {
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed, Unmanaged: "withdraw"}, faultSite{
		edit: func(t *testing.T, s *Site, text string) string {
			return replaceOnce(t, text, "interface: "+s.DC.Iface+"\n", "interface: lo\n")
		},
	})
	st := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	st = s.pollsAfter(t, st, 5)
	out, err := s.DC.Run(context.Background(), "ip", "-o", "addr", "show", "dev", "lo")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{" ::1/128 ", " 127.0.0.1/8 "} {
		if !strings.Contains(out, a) {
			t.Errorf("%s was deleted from lo under unmanaged_addresses: withdraw:\n%s", strings.TrimSpace(a), out)
		}
	}
	if slices.Contains(st.Interface.Unmanaged, "::1/128") {
		t.Errorf("::1/128 listed as unmanaged (announced without a health check): %v", st.Interface.Unmanaged)
	}
	s.logOnce(t, "rhi-main.log", 0, "::1/128")
}

// TestDryRunSaysWould: a dry run must be quiet about
// itself, or to say "would". Under unmanaged_addresses: withdraw, a dry
// run logs "…; withdrawing them" at warning level for a hand-added
// address it leaves in place (and, for a VIP its ownership record names,
// "no longer in the config; withdrawing"): an operator trying a config
// with --dry-run reads that rhi deleted addresses it did not touch.
func TestDryRunSaysWould(t *testing.T) {
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed, Unmanaged: "withdraw"}, faultSite{})
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	s.ip(t, "addr", "add", "10.0.0.77/32", "dev", s.DC.Iface)
	if err := s.StartRHI(context.Background(), "--dry-run"); err != nil {
		t.Fatal(err)
	}
	st := s.statusWhen(t, "polled", func(status.Status) error { return nil })
	s.pollsAfter(t, st, 3)
	s.holds(t, "10.0.0.77/32 10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	if n := s.logCount(t, "rhi-main.log", "10.0.0.77/32", "withdrawing them"); n > 0 {
		t.Errorf("the dry run logged %d line(s) saying it is withdrawing 10.0.0.77/32, which it leaves in place", n)
	}
}

// TestPointToPointWithdrawn: under unmanaged_addresses: withdraw, a
// point-to-point entry whose peer prefix BIRD would announce with no
// health check is deleted (by its local address and peer), and the peer
// loses the route; a host address with the same local address stays.
func TestPointToPointWithdrawn(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed, Unmanaged: "withdraw"}, faultSite{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.ip(t, "addr", "add", "10.9.0.1", "peer", "10.0.0.99/32", "dev", s.DC.Iface)
	// The peer's "no route" proves nothing before rhi has deleted the
	// entry: BIRD may not have exported it yet (BIRD 3 often has not). So
	// wait for the deletion, at rhi's next poll, then look at the peer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out string
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		var err error
		if out, err = s.DC.Run(ctx, "ip", "-o", "addr", "show", "dev", s.DC.Iface); err != nil {
			return err
		}
		if strings.Contains(out, "peer 10.0.0.99/32") {
			return errors.New("the point-to-point entry is still there")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the point-to-point entry stays on %s: %v\n%s", s.DC.Iface, err, out)
	}
	w.peerSees(t, "no route", "10.0.0.99")
	s.logOnce(t, "rhi-main.log", 1, "deleted point-to-point entry", "10.9.0.1 peer 10.0.0.99/32")
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.alive(t)
}
