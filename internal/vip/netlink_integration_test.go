//go:build integration

package vip

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/vip/rtnl"
	"github.com/rhi-daemon/rhi/internal/vip/rtnl/rtnltest"
)

// labNS creates a namespace holding an up ifb link called rhi0 and returns
// its name and a netlink handle inside it. Both go away at cleanup.
func labNS(t testing.TB) (string, *rtnl.Handle) {
	t.Helper()
	ns := rtnltest.NS(t, "rhi-vip")
	nsh, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatalf("open namespace %q: %v", ns, err)
	}
	defer nsh.Close() // the handle keeps its own sockets in the namespace
	h, err := rtnl.NewHandleAt(nsh, 2*time.Second)
	if err != nil {
		t.Fatalf("netlink handle in %q: %v", ns, err)
	}
	t.Cleanup(h.Close)
	rtnltest.SetLink(t, h, true)
	return ns, h
}

// observed joins an Observe result into the form of ipAddrs (without scope).
func observed(t *testing.T, a *Announcer) []string {
	t.Helper()
	st, err := a.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	var out []string
	for _, p := range slices.Concat(st.Present, st.Foreign) {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

// addrsOnly strips everything after the prefix from ipAddrs lines.
func addrsOnly(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i], _, _ = strings.Cut(l, " ")
	}
	slices.Sort(out)
	return out
}

func TestNetlinkIntegration(t *testing.T) {
	ns, h := labNS(t)
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a := New(h, iface, log)
	ctx := context.Background()

	// Foreign addresses, put there by hand: one contains a VIP.
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.0.0.100/24", "dev", iface)
	rtnltest.IP(t, "-n", ns, "addr", "add", "192.0.2.1/32", "dev", iface)

	desired := owned("10.0.0.100/32", "10.0.0.1/32", "-10.0.0.2/32", "2001:db8::1/128", "-2001:db8::2/128")
	st, err := a.Set(ctx, DesiredOf(desired))
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	if diff := cmpDiff(prefixes("10.0.0.1/32", "10.0.0.100/32", "2001:db8::1/128"), st.Present); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}
	if !st.Exists || !st.Up {
		t.Errorf("state %+v: want an existing, up link", st)
	}
	if !slices.Contains(st.Foreign, netip.MustParsePrefix("10.0.0.100/24")) || !slices.Contains(st.Foreign, netip.MustParsePrefix("192.0.2.1/32")) {
		t.Errorf("Foreign = %v, want the hand-made addresses in it", st.Foreign)
	}
	wantIP := []string{"10.0.0.1/32 global", "10.0.0.100/24 global", "10.0.0.100/32 global", "192.0.2.1/32 global", "2001:db8::1/128 global nodad"}
	got, up := rtnltest.Addrs(t, ns)
	if diff := cmpDiff(wantIP, rtnltest.WithoutLinkLocal(got)); diff != "" || !up {
		t.Errorf("ip addr show, up=%v (-want +got):\n%s", up, diff)
	}
	if diff := cmpDiff(addrsOnly(rtnltest.WithoutLinkLocal(got)), observed(t, a)); diff != "" {
		t.Errorf("Observe disagrees with ip (-ip +Observe):\n%s", diff)
	}

	// The same input again reaches the same state (and, per the unit tests,
	// writes nothing: here the log shows it).
	hook.Reset()
	again, err := a.Set(ctx, DesiredOf(desired))
	if err != nil {
		t.Fatalf("second Set: %v", err)
	}
	if again.Changed != 0 {
		t.Errorf("second Set changed %d addresses, want 0", again.Changed)
	}
	st.Changed = 0
	if diff := cmpDiff(st, again); diff != "" {
		t.Errorf("second Set state (-first +second):\n%s", diff)
	}
	if l := logged(hook); len(l) != 0 {
		t.Errorf("second Set logged %v, want nothing at info or above", l)
	}

	// Someone deletes a VIP by hand and adds a withdrawn one: both put right.
	rtnltest.IP(t, "-n", ns, "addr", "del", "10.0.0.1/32", "dev", iface)
	rtnltest.IP(t, "-n", ns, "addr", "add", "2001:db8::2/128", "dev", iface, "nodad")
	hook.Reset()
	if _, err := a.Set(ctx, DesiredOf(desired)); err != nil {
		t.Fatalf("Set after hand changes: %v", err)
	}
	wantLog := []string{
		"warning repaired address vip=10.0.0.1/32 action=add reason=changed by someone else",
		"warning repaired address vip=2001:db8::2/128 action=delete reason=changed by someone else",
		"info interface updated added=1 deleted=1",
	}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff(wantIP, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after repair (-want +got):\n%s", diff)
	}

	// Flip: withdraw one of each family, announce the others.
	desired = owned("10.0.0.100/32", "-10.0.0.1/32", "10.0.0.2/32", "-2001:db8::1/128", "2001:db8::2/128")
	if _, err := a.Set(ctx, DesiredOf(desired)); err != nil {
		t.Fatalf("Set flip: %v", err)
	}
	wantIP = []string{"10.0.0.100/24 global", "10.0.0.100/32 global", "10.0.0.2/32 global", "192.0.2.1/32 global", "2001:db8::2/128 global nodad"}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff(wantIP, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after flip (-want +got):\n%s", diff)
	}

	// Link down: reported, and the VIPs are still set. The kernel flushes
	// IPv6 addresses from a link taken down (unless keep_addr_on_down), so
	// the IPv6 VIP comes back by repair.
	rtnltest.SetLink(t, h, false)
	hook.Reset()
	st, err = a.Set(ctx, DesiredOf(desired))
	if err != nil {
		t.Fatalf("Set on a down link: %v", err)
	}
	if st.Up || !st.Exists {
		t.Errorf("state %+v, want an existing link that is down", st)
	}
	if diff := cmpDiff(prefixes("10.0.0.2/32", "10.0.0.100/32", "2001:db8::2/128"), st.Present); diff != "" {
		t.Errorf("Present on a down link (-want +got):\n%s", diff)
	}
	got, up = rtnltest.Addrs(t, ns)
	if diff := cmpDiff(wantIP, rtnltest.WithoutLinkLocal(got)); diff != "" || up {
		t.Errorf("ip addr show on a down link, up=%v (-want +got):\n%s", up, diff)
	}
	wantLog = []string{
		"warning interface is down: addresses are kept, but BIRD announces nothing from it",
		"warning repaired address vip=2001:db8::2/128 action=add reason=changed by someone else",
		"info interface updated added=1 deleted=0",
		// The link-local address went with the link, but it was never
		// reported, so the foreign set did not change.
	}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log on a down link (-want +got):\n%s", diff)
	}

	rtnltest.SetLink(t, h, true)
	st, err = a.Set(ctx, DesiredOf(desired))
	if err != nil {
		t.Fatalf("Set after link up: %v", err)
	}
	if !st.Up || len(st.Present) != 3 {
		t.Errorf("state %+v after link up, want up with three VIPs", st)
	}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff(wantIP, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after link up (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(addrsOnly(rtnltest.WithoutLinkLocal(got)), observed(t, a)); diff != "" {
		t.Errorf("Observe disagrees with ip (-ip +Observe):\n%s", diff)
	}

	// Withdraw everything: only the foreign addresses stay.
	desired = owned("-10.0.0.100/32", "-10.0.0.1/32", "-10.0.0.2/32", "-2001:db8::1/128", "-2001:db8::2/128")
	st, err = a.Set(ctx, DesiredOf(desired))
	if err != nil || len(st.Present) != 0 {
		t.Fatalf("Set withdraw all: state %+v, error %v", st, err)
	}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff([]string{"10.0.0.100/24 global", "192.0.2.1/32 global"}, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after withdrawing all (-want +got):\n%s", diff)
	}
}

func TestNetlinkIntegrationMissingInterface(t *testing.T) {
	_, h := labNS(t)
	log, _ := logtest.NewNullLogger()
	a := New(h, "rhi-missing", log)
	st, err := a.Set(context.Background(), DesiredOf(owned("10.0.0.1/32")))
	if !errors.Is(err, ErrNoInterface) || st.Exists {
		t.Errorf("Set on a missing link: state %+v, error %v; want ErrNoInterface", st, err)
	}
	if _, err := a.Observe(context.Background()); !errors.Is(err, ErrNoInterface) {
		t.Errorf("Observe on a missing link: error %v, want ErrNoInterface", err)
	}
}

// BenchmarkSetNetlink is BenchmarkSet against the real kernel: 10,000 owned
// /32s on an ifb link, "noop" re-applying the same set (one dump of 10,000
// addresses, no write) and "flip1000" alternating two sets that differ in
// 1,000 VIPs (1,000 netlink writes per call).
func BenchmarkSetNetlink(b *testing.B) {
	const n = 10000
	_, h := labNS(b)
	log, _ := logtest.NewNullLogger()
	a := New(h, iface, log)
	even := benchOwned(n)
	evenD := DesiredOf(even)
	if _, err := a.Set(context.Background(), evenD); err != nil {
		b.Fatal(err)
	}
	b.Run("noop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Set(context.Background(), evenD); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flip1000", func(b *testing.B) {
		odd := benchOwned(n)
		i := 0
		for p := range odd {
			if i == 1000 {
				break
			}
			odd[p] = false
			i++
		}
		sets := []Desired{DesiredOf(odd), evenD}
		calls := 0
		b.ReportAllocs()
		for b.Loop() {
			st, err := a.Set(context.Background(), sets[calls%2])
			if err != nil {
				b.Fatal(err)
			}
			if want := n - 1000*(1-calls%2); len(st.Present) != want {
				b.Fatalf("%d VIPs present, want %d", len(st.Present), want)
			}
			calls++
		}
		if _, err := a.Set(context.Background(), evenD); err != nil {
			b.Fatal(err)
		}
	})
}

// TestNetlinkIntegrationPointToPoint: with the kernel's own point-to-point
// entries on the link, rhi never takes one for its VIP, never deletes one,
// and reports them as foreign in ip(8)'s form.
func TestNetlinkIntegrationPointToPoint(t *testing.T) {
	ns, h := labNS(t)
	rtnltest.IP(t, "-n", ns, "addr", "add", "10.9.0.1", "peer", "10.9.0.2/32", "dev", iface)
	rtnltest.IP(t, "-n", ns, "addr", "add", "2001:db8::1", "peer", "2001:db8::2/128", "dev", iface, "nodad")
	ptp := []string{"10.9.0.1 peer 10.9.0.2/32 global", "2001:db8::1 peer 2001:db8::2/128 global nodad"}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a := New(h, iface, log)
	ctx := context.Background()

	none := owned("-10.9.0.1/32", "-10.9.0.2/32", "-2001:db8::1/128", "-2001:db8::2/128")
	for range 2 {
		st, err := a.Set(ctx, DesiredOf(none))
		if err != nil {
			t.Fatalf("Set, all withdrawn: %v", err)
		}
		if st.Changed != 0 || len(st.Present) != 0 {
			t.Errorf("Set, all withdrawn: state %+v, want no change and nothing present", st)
		}
		if diff := cmpDiff(peers("10.9.0.1 peer 10.9.0.2/32", "2001:db8::1 peer 2001:db8::2/128"), st.ForeignPeers); diff != "" {
			t.Errorf("ForeignPeers (-want +got):\n%s", diff)
		}
	}
	got, _ := rtnltest.Addrs(t, ns)
	if diff := cmpDiff(ptp, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show (-want +got):\n%s", diff)
	}
	wantLog := []string{"info foreign addresses on interface, left alone: [10.9.0.1 peer 10.9.0.2/32 2001:db8::1 peer 2001:db8::2/128]"}
	if diff := cmpDiff(wantLog, logged(hook)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}

	// Wanted: Linux takes 10.9.0.1/32 as another entry, but holds an IPv6
	// address once.
	both := owned("10.9.0.1/32", "2001:db8::1/128")
	for i := range 2 {
		st, err := a.Set(ctx, DesiredOf(both))
		wantErr := `vip "2001:db8::1/128": add on "rhi0": the address is already there as "2001:db8::1 peer 2001:db8::2/128"`
		if err == nil || err.Error() != wantErr {
			t.Errorf("Set error = %v, want %s", err, wantErr)
		}
		if diff := cmpDiff(prefixes("10.9.0.1/32"), st.Present); diff != "" || st.Changed != 1-i {
			t.Errorf("Set %d: %d changed, Present (-want +got):\n%s", i, st.Changed, diff)
		}
	}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff([]string{"10.9.0.1 peer 10.9.0.2/32 global", "10.9.0.1/32 global", "2001:db8::1 peer 2001:db8::2/128 global nodad"}, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show (-want +got):\n%s", diff)
	}

	// Withdrawn: rhi's own entry goes, the peer entry stays.
	st, err := a.Set(ctx, DesiredOf(none))
	if err != nil || st.Changed != 1 {
		t.Fatalf("Set, withdrawn again: %d changed, %v", st.Changed, err)
	}
	got, _ = rtnltest.Addrs(t, ns)
	if diff := cmpDiff(ptp, rtnltest.WithoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show (-want +got):\n%s", diff)
	}
}

// oneByOne is a Handle that writes one address after the other with the
// netlink library, as Set did before its writes were batched (for
// BenchmarkSetNetlink1000).
type oneByOne struct{ *rtnl.Handle }

func (o oneByOne) WriteAddrs(ctx context.Context, index int, changes []rtnl.AddrChange) ([]error, error) {
	answers := make([]error, len(changes))
	link := &netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Index: index}}
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			for j := i; j < len(changes); j++ {
				answers[j] = rtnl.ErrNotWritten
			}
			return answers, err
		}
		ip := c.Prefix.Addr()
		n := ip.BitLen()
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(n, n)}, Scope: unix.RT_SCOPE_UNIVERSE}
		if ip.Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if c.Add {
			answers[i] = o.AddrAdd(link, addr)
		} else {
			answers[i] = o.AddrDel(link, addr)
		}
	}
	return answers, nil
}

// BenchmarkSetNetlink1000 flips 1,000 VIPs, all there are on the link, on
// the real kernel: the lab's "1,000 VIPs at once" (< 200 ms), in
// batches (the Handle) and one write after the other.
func BenchmarkSetNetlink1000(b *testing.B) {
	const n = 1000
	for _, mode := range []string{"batch", "one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			_, h := labNS(b)
			log, _ := logtest.NewNullLogger()
			var nl Netlink = h
			if mode == "one-by-one" {
				nl = oneByOne{h}
			}
			a := New(nl, iface, log)
			on, off := benchOwned(n), benchOwned(n)
			for p := range off {
				off[p] = false
			}
			sets := []Desired{DesiredOf(on), DesiredOf(off)}
			calls := 0
			for b.Loop() {
				st, err := a.Set(context.Background(), sets[calls%2])
				if err != nil {
					b.Fatal(err)
				}
				if want := n * (1 - calls%2); len(st.Present) != want {
					b.Fatalf("%d VIPs present, want %d", len(st.Present), want)
				}
				calls++
			}
		})
	}
}
