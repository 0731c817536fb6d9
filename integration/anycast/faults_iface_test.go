//go:build integration

package anycast

import (
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// cannotSet is the line rhi logs when it cannot set the VIPs on the
// interface.
const cannotSet = "cannot set VIPs on the interface; retrying every tick"

// TestFaultIfaceDeletedAndRecreated deletes rhi0 under a running rhi and
// creates it again: rhi reports the missing interface, keeps deciding, and
// puts the VIPs back once the interface returns.
func TestFaultIfaceDeletedAndRecreated(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)

	s.ip(t, "link", "del", s.DC.Iface)
	st := s.statusWhen(t, "reported the interface missing", func(st status.Status) error {
		if st.Interface.Exists || !strings.Contains(st.Interface.Error, `no such interface "rhi0"`) {
			return errorf("interface %+v", st.Interface)
		}
		for _, v := range st.VIPs {
			if v.OnInterface || !v.Desired {
				return errorf("vip %s: on interface %v, desired %v", v.Address, v.OnInterface, v.Desired)
			}
		}
		return nil
	})
	s.metricsHave(t, `rhi_interface_up{iface="rhi0"} 0`)
	w.peerSees(t, "no route", seedAddrs()...)
	// Still deciding: health changes while the interface is gone.
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.statusWhen(t, "followed health", func(st status.Status) error {
		if st.VIPs[0].Desired {
			return errorf("%s still desired", st.VIPs[0].Address)
		}
		return nil
	})
	if err := s.SetAll("healthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.pollsAfter(t, st, 10)
	s.logOnce(t, "rhi-error.log", 1, cannotSet, "no such interface")
	s.alive(t)

	back := time.Now()
	s.ip(t, "link", "add", s.DC.Iface, "type", "ifb")
	s.ip(t, "link", "set", s.DC.Iface, "up")
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	s.statusWhen(t, "saw the interface again", func(st status.Status) error {
		if !st.Interface.Exists || !st.Interface.Up || st.Interface.Error != "" {
			return errorf("interface %+v", st.Interface)
		}
		return nil
	})
	s.metricsHave(t, `rhi_interface_up{iface="rhi0"} 1`)
	s.birdAgrees(t, len(site.Seed), back)
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.logOnce(t, "rhi-main.log", 1, "interface errors cleared")
	s.logOnce(t, "rhi-error.log", 1, cannotSet)
	s.alive(t)
}

// TestFaultIfaceDownAndUp sets rhi0 down, which makes the kernel drop its
// IPv6 addresses, and up again: rhi reports the link down, restores the
// IPv6 VIP, keeps following health, reports that BIRD announces nothing
// from the down link without trying to repair that, and BIRD announces the
// VIPs again once the link is up.
func TestFaultIfaceDownAndUp(t *testing.T) {
	vips := []site.VIP{
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}},
		{Address: "fd00:255::10", Upstreams: []string{"/apisix/upstreams/api"}},
		{Address: "10.0.0.101", Upstreams: []string{"/apisix/upstreams/auth"}},
	}
	addrs := []string{"10.0.0.100", "fd00:255::10", "10.0.0.101"}
	all := "10.0.0.100/32 10.0.0.101/32 fd00:255::10/128"
	w, s := newFaultSite(t, site.Config{VIPs: vips}, faultSite{})
	s.birdAgrees(t, len(vips), time.Time{})
	w.peerSees(t, "via dc1 (paths from dc1)", addrs...)

	s.ip(t, "link", "set", s.DC.Iface, "down")
	s.statusWhen(t, "reported the link down", func(st status.Status) error {
		if !st.Interface.Exists || st.Interface.Up {
			return errorf("interface %+v", st.Interface)
		}
		return nil
	})
	s.metricsHave(t, `rhi_interface_up{iface="rhi0"} 0`)
	s.logHas(t, "rhi-main.log", `msg="repaired address" action=add iface=rhi0 reason="changed by someone else" vip="fd00:255::10/128"`)
	s.holds(t, all)
	w.peerSees(t, "no route", addrs...)

	// A health change while the link is down is applied, and makes rhi
	// confirm: BIRD has nothing from the down link, which is the truth to
	// report, and no renewal of addresses can change it.
	flipped := time.Now()
	if err := s.SetAll("unhealthy", "/apisix/upstreams/auth"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 fd00:255::10/128")
	st := s.statusWhen(t, "reported BIRD without the VIPs of the down link", func(st status.Status) error {
		if !st.Bird.LastCheck.After(flipped) || st.Bird.Error != "" || st.Bird.Disagree != 2 || st.Bird.Agree != 1 {
			return errorf("bird %+v", st.Bird)
		}
		return nil
	})
	// Past renewAfter (2 s) of disagreement: retries at 0.2, 0.6, 1.4, 3 s.
	s.checksAfter(t, st, 4)
	if n := s.logCount(t, "rhi-main.log", "renewing those addresses"); n > 0 {
		t.Errorf("rhi renewed addresses %d times on a link that is down (BIRD ignores it; renewing cannot help)", n)
	}
	s.logOnce(t, "rhi-error.log", 1, "interface is down")
	s.alive(t)

	upAt := time.Now()
	s.ip(t, "link", "set", s.DC.Iface, "up")
	s.statusWhen(t, "reported the link up", func(st status.Status) error {
		if !st.Interface.Up || st.Interface.Error != "" {
			return errorf("interface %+v", st.Interface)
		}
		return nil
	})
	s.metricsHave(t, `rhi_interface_up{iface="rhi0"} 1`)
	if err := s.SetAll("healthy", "/apisix/upstreams/auth"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, all)
	s.birdAgrees(t, len(vips), upAt)
	w.peerSees(t, "via dc1 (paths from dc1)", addrs...)
	s.logOnce(t, "rhi-main.log", 1, "interface is up again")
	s.logOnce(t, "rhi-error.log", 1, "interface is down")
	s.alive(t)
}

// TestFaultIfaceHandEdits: an owned VIP changed by hand either way is put
// back as rhi wants it on the next tick, and the repair is logged.
func TestFaultIfaceHandEdits(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.101/32 10.0.0.102/32")
	s.birdAgrees(t, len(site.Seed), time.Time{})
	cases := []struct {
		name string
		edit []string // ip arguments
		log  string   // rhi's repair, in its main log
	}{
		{"announced VIP deleted", []string{"addr", "del", "10.0.0.101/32", "dev", "rhi0"},
			`msg="repaired address" action=add iface=rhi0 reason="changed by someone else" vip=10.0.0.101/32`},
		{"withdrawn VIP added", []string{"addr", "add", "10.0.0.100/32", "dev", "rhi0"},
			`msg="repaired address" action=delete iface=rhi0 reason="changed by someone else" vip=10.0.0.100/32`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.ip(t, c.edit...)
			s.logHas(t, "rhi-main.log", c.log)
			s.holds(t, "10.0.0.101/32 10.0.0.102/32")
			w.peerSees(t, "no route", "10.0.0.100")
			w.peerSees(t, "via dc1 (paths from dc1)", "10.0.0.101", "10.0.0.102")
			s.logOnce(t, "rhi-main.log", 1, c.log)
		})
	}
	s.alive(t)
}

// TestFaultIfaceAddressAlreadyThere starts rhi with its VIPs already on the
// interface and announced: rhi takes them as they are, with no error, no
// add and no moment in which the peer loses them.
func TestFaultIfaceAddressAlreadyThere(t *testing.T) {
	vips := []site.VIP{
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}},
		{Address: "fd00:255::10", Upstreams: []string{"/apisix/upstreams/api"}},
	}
	both := []string{"10.0.0.100", "fd00:255::10"}
	var lost func() []string
	_, s := newFaultSite(t, site.Config{VIPs: vips}, faultSite{
		before: func(t *testing.T, w *world, s *Site) {
			s.ip(t, "addr", "add", "10.0.0.100/32", "dev", "rhi0")
			s.ip(t, "addr", "add", "fd00:255::10/128", "dev", "rhi0", "nodad")
			w.peerSees(t, "via dc1 (paths from dc1)", both...)
			lost = watchPeer(t, w, both...)
		},
	})
	st := s.statusWhen(t, "polled", func(st status.Status) error { return nil })
	s.pollsAfter(t, st, 10)
	s.birdAgrees(t, len(vips), time.Time{})
	if l := lost(); len(l) > 0 {
		t.Errorf("the peer lost %v while rhi started", l)
	}
	s.statusWhen(t, "took the VIPs as they were", func(st status.Status) error {
		if st.Interface.Error != "" || len(st.Interface.Foreign) > 0 {
			return errorf("interface %+v", st.Interface)
		}
		for _, v := range st.VIPs {
			if !v.Desired || !v.OnInterface || v.Transitions != 0 {
				return errorf("vip %s: desired %v, on interface %v, %d transitions", v.Address, v.Desired, v.OnInterface, v.Transitions)
			}
		}
		return nil
	})
	s.logOnce(t, "rhi-main.log", 1, "initial VIP state taken from the interface", "present=2")
	for _, v := range []string{"vip=10.0.0.100/32", `vip="fd00:255::10/128"`} {
		s.logOnce(t, "rhi-main.log", 0, "address", v)
		s.logOnce(t, "rhi-error.log", 0, v)
	}
	s.logOnce(t, "rhi-error.log", 0, cannotSet)
	s.alive(t)
}

// TestFaultIfaceAddressTakenAsAnotherPrefix: an IPv6 VIP whose address is
// already on the interface with another prefix length cannot be added (the
// kernel holds an IPv6 address once); rhi says so, once, and manages the
// other VIPs.
func TestFaultIfaceAddressTakenAsAnotherPrefix(t *testing.T) {
	vips := []site.VIP{
		{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}},
		{Address: "fd00:255::11", Upstreams: []string{"/apisix/upstreams/api"}},
	}
	_, s := newFaultSite(t, site.Config{VIPs: vips}, faultSite{
		before: func(t *testing.T, _ *world, s *Site) {
			s.ip(t, "addr", "add", "fd00:255::11/64", "dev", "rhi0", "nodad")
		},
	})
	want := `vip "fd00:255::11/128": add on "rhi0": the address is already there as "fd00:255::11/64"`
	st := s.statusWhen(t, "reported the clash", func(st status.Status) error {
		if st.Interface.Error != want {
			return errorf("interface error %q", st.Interface.Error)
		}
		return nil
	})
	s.holds(t, "10.0.0.100/32 fd00:255::11/64")
	s.pollsAfter(t, st, 10)
	s.logOnce(t, "rhi-error.log", 1, cannotSet)
	s.logOnce(t, "rhi-error.log", 1, cannotSet, strings.ReplaceAll(want, `"`, `\"`))
	st = s.statusWhen(t, "kept the clash out", func(st status.Status) error {
		if !st.VIPs[0].OnInterface || st.VIPs[1].OnInterface || !st.VIPs[1].Desired {
			return errorf("vips %+v", st.VIPs)
		}
		return nil
	})
	if got := st.Interface.Foreign; len(got) != 1 || got[0] != "fd00:255::11/64" {
		t.Errorf("foreign %v", got)
	}
	s.alive(t)
}

// TestFaultIfaceNoNetAdmin runs rhi without CAP_NET_ADMIN: every add fails
// with EPERM, which rhi must report clearly (interface, operation,
// permission) and once, while it keeps running.
func TestFaultIfaceNoNetAdmin(t *testing.T) {
	_, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		wrap: []string{"setpriv", "--bounding-set", "-net_admin"},
	})
	want := `vip "10.0.0.100/32": add on "rhi0": operation not permitted`
	st := s.statusWhen(t, "reported the failed adds", func(st status.Status) error {
		if !strings.Contains(st.Interface.Error, want) {
			return errorf("interface error %q", st.Interface.Error)
		}
		for _, v := range st.VIPs {
			if !v.Desired || v.OnInterface {
				return errorf("vip %s: desired %v, on interface %v", v.Address, v.Desired, v.OnInterface)
			}
		}
		return nil
	})
	t.Logf("rhi without CAP_NET_ADMIN reports: %q", st.Interface.Error)
	if !st.Interface.Exists || !st.Interface.Up {
		t.Errorf("interface %+v: reading it needs no capability", st.Interface)
	}
	s.holds(t, "")
	s.pollsAfter(t, st, 10)
	s.logOnce(t, "rhi-error.log", 1, cannotSet)
	s.logOnce(t, "rhi-error.log", 1, cannotSet, strings.ReplaceAll(want, `"`, `\"`))
	s.alive(t)
}

// TestFaultIfaceChangesAreConfirmed: rhi confirms through BIRD
// after every change. Repairing a hand edit and a link coming back up both
// change what BIRD announces, so a confirmation must follow them rather than
// wait for the slow timer (30 s). The deadline is below that timer so that
// the timer cannot pass the test in the change's place; each case has its
// own lab so that no case starts near a slow tick.
func TestFaultIfaceChangesAreConfirmed(t *testing.T) {
	cases := []struct {
		name string
		edit [][]string // ip arguments, in order
	}{
		{"VIP deleted by hand", [][]string{{"addr", "del", "10.0.0.101/32", "dev", "rhi0"}}},
		{"link down and up", [][]string{{"link", "set", "rhi0", "down"}, {"link", "set", "rhi0", "up"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
			s.birdAgrees(t, len(site.Seed), time.Time{})
			edited := time.Now()
			for _, args := range c.edit {
				s.ip(t, args...)
			}
			s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
			w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
			s.statusWithin(t, 15*time.Second, "confirmed the change through BIRD", func(st status.Status) error {
				if !st.Bird.LastCheck.After(edited) {
					return errorf("no check since the change (last %s)", st.Bird.LastCheck.Format(time.RFC3339Nano))
				}
				if st.Bird.Error != "" || st.Bird.Agree != len(site.Seed) {
					return errorf("bird %+v", st.Bird)
				}
				return nil
			})
		})
	}
}
