//go:build integration

package vip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rhi-daemon/rhi/internal/inns"
)

// ipCmd runs ip(8) with a deadline and returns its standard output.
func ipCmd(t testing.TB, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// labNS creates a namespace holding an up ifb link called rhi0 and returns
// its name and a netlink handle inside it. Both go away at cleanup.
func labNS(t testing.TB) (string, *Handle) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	ns := fmt.Sprintf("rhi-vip-%d-%d", os.Getpid(), rand.Uint32())
	ipCmd(t, "netns", "add", ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	ipCmd(t, "-n", ns, "link", "add", iface, "type", "ifb")

	nsh, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatalf("open namespace %q: %v", ns, err)
	}
	defer nsh.Close() // the handle keeps its own sockets in the namespace
	h, err := NewHandleAt(nsh, 2*time.Second)
	if err != nil {
		t.Fatalf("netlink handle in %q: %v", ns, err)
	}
	t.Cleanup(h.Close)
	setLink(t, h, true)
	return ns, h
}

func setLink(t testing.TB, h *Handle, up bool) {
	t.Helper()
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatalf("find %s: %v", iface, err)
	}
	if up {
		err = h.LinkSetUp(link)
	} else {
		err = h.LinkSetDown(link)
	}
	if err != nil {
		t.Fatalf("set %s up=%v: %v", iface, up, err)
	}
}

// ipAddrs returns what `ip -j addr show` says rhi0 holds, one sorted line
// per address: "10.0.0.1/32 global", "2001:db8::1/128 global nodad",
// "10.9.0.1 peer 10.9.0.2/32 global", plus whether the link is
// administratively up.
func ipAddrs(t *testing.T, ns string) ([]string, bool) {
	t.Helper()
	var links []struct {
		Flags    []string `json:"flags"`
		AddrInfo []struct {
			Local     string `json:"local"`
			Address   string `json:"address"` // the peer, when there is one
			PrefixLen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
			NoDAD     bool   `json:"nodad"`
			Tentative bool   `json:"tentative"`
		} `json:"addr_info"`
	}
	out := ipCmd(t, "-n", ns, "-j", "addr", "show", "dev", iface)
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j addr show: %v in %s", err, out)
	}
	var lines []string
	for _, a := range links[0].AddrInfo {
		line := fmt.Sprintf("%s/%d %s", a.Local, a.PrefixLen, a.Scope)
		if a.Address != "" && a.Address != a.Local {
			line = fmt.Sprintf("%s peer %s/%d %s", a.Local, a.Address, a.PrefixLen, a.Scope)
		}
		if a.NoDAD {
			line += " nodad"
		}
		if a.Tentative {
			line += " tentative"
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return lines, slices.Contains(links[0].Flags, "UP")
}

// withoutLinkLocal drops the fe80:: address the kernel gives an up link:
// its value is random, and it is foreign to rhi like any other.
func withoutLinkLocal(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "fe80:") })
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
	ipCmd(t, "-n", ns, "addr", "add", "10.0.0.100/24", "dev", iface)
	ipCmd(t, "-n", ns, "addr", "add", "192.0.2.1/32", "dev", iface)

	desired := owned("10.0.0.100/32", "10.0.0.1/32", "-10.0.0.2/32", "2001:db8::1/128", "-2001:db8::2/128")
	st, err := a.Set(ctx, desired)
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
	got, up := ipAddrs(t, ns)
	if diff := cmpDiff(wantIP, withoutLinkLocal(got)); diff != "" || !up {
		t.Errorf("ip addr show, up=%v (-want +got):\n%s", up, diff)
	}
	if diff := cmpDiff(addrsOnly(withoutLinkLocal(got)), observed(t, a)); diff != "" {
		t.Errorf("Observe disagrees with ip (-ip +Observe):\n%s", diff)
	}

	// The same input again reaches the same state (and, per the unit tests,
	// writes nothing: here the log shows it).
	hook.Reset()
	again, err := a.Set(ctx, desired)
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
	ipCmd(t, "-n", ns, "addr", "del", "10.0.0.1/32", "dev", iface)
	ipCmd(t, "-n", ns, "addr", "add", "2001:db8::2/128", "dev", iface, "nodad")
	hook.Reset()
	if _, err := a.Set(ctx, desired); err != nil {
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
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff(wantIP, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after repair (-want +got):\n%s", diff)
	}

	// Flip: withdraw one of each family, announce the others.
	desired = owned("10.0.0.100/32", "-10.0.0.1/32", "10.0.0.2/32", "-2001:db8::1/128", "2001:db8::2/128")
	if _, err := a.Set(ctx, desired); err != nil {
		t.Fatalf("Set flip: %v", err)
	}
	wantIP = []string{"10.0.0.100/24 global", "10.0.0.100/32 global", "10.0.0.2/32 global", "192.0.2.1/32 global", "2001:db8::2/128 global nodad"}
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff(wantIP, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after flip (-want +got):\n%s", diff)
	}

	// Link down: reported, and the VIPs are still set. The kernel flushes
	// IPv6 addresses from a link taken down (unless keep_addr_on_down), so
	// the IPv6 VIP comes back by repair.
	setLink(t, h, false)
	hook.Reset()
	st, err = a.Set(ctx, desired)
	if err != nil {
		t.Fatalf("Set on a down link: %v", err)
	}
	if st.Up || !st.Exists {
		t.Errorf("state %+v, want an existing link that is down", st)
	}
	if diff := cmpDiff(prefixes("10.0.0.2/32", "10.0.0.100/32", "2001:db8::2/128"), st.Present); diff != "" {
		t.Errorf("Present on a down link (-want +got):\n%s", diff)
	}
	got, up = ipAddrs(t, ns)
	if diff := cmpDiff(wantIP, withoutLinkLocal(got)); diff != "" || up {
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

	setLink(t, h, true)
	st, err = a.Set(ctx, desired)
	if err != nil {
		t.Fatalf("Set after link up: %v", err)
	}
	if !st.Up || len(st.Present) != 3 {
		t.Errorf("state %+v after link up, want up with three VIPs", st)
	}
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff(wantIP, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after link up (-want +got):\n%s", diff)
	}
	if diff := cmpDiff(addrsOnly(withoutLinkLocal(got)), observed(t, a)); diff != "" {
		t.Errorf("Observe disagrees with ip (-ip +Observe):\n%s", diff)
	}

	// Withdraw everything: only the foreign addresses stay.
	desired = owned("-10.0.0.100/32", "-10.0.0.1/32", "-10.0.0.2/32", "-2001:db8::1/128", "-2001:db8::2/128")
	st, err = a.Set(ctx, desired)
	if err != nil || len(st.Present) != 0 {
		t.Fatalf("Set withdraw all: state %+v, error %v", st, err)
	}
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff([]string{"10.0.0.100/24 global", "192.0.2.1/32 global"}, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show after withdrawing all (-want +got):\n%s", diff)
	}
}

func TestNetlinkIntegrationMissingInterface(t *testing.T) {
	_, h := labNS(t)
	log, _ := logtest.NewNullLogger()
	a := New(h, "rhi-missing", log)
	st, err := a.Set(context.Background(), owned("10.0.0.1/32"))
	if !errors.Is(err, ErrNoInterface) || st.Exists {
		t.Errorf("Set on a missing link: state %+v, error %v; want ErrNoInterface", st, err)
	}
	if _, err := a.Observe(context.Background()); !errors.Is(err, ErrNoInterface) {
		t.Errorf("Observe on a missing link: error %v, want ErrNoInterface", err)
	}
}

func TestNewHandle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs with the integration tests, as root")
	}
	h, err := NewHandle(time.Second)
	if err != nil {
		t.Fatalf("NewHandle: %v", err)
	}
	defer h.Close()
	if _, err := h.LinkByName("lo"); err != nil {
		t.Errorf("LinkByName lo through the new handle: %v", err)
	}
	if _, err := NewHandle(0); err == nil {
		t.Error("NewHandle(0): no error, want one: a zero timeout would mean none")
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
	if _, err := a.Set(context.Background(), even); err != nil {
		b.Fatal(err)
	}
	b.Run("noop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Set(context.Background(), even); err != nil {
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
		sets := []map[netip.Prefix]bool{odd, even}
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
		if _, err := a.Set(context.Background(), even); err != nil {
			b.Fatal(err)
		}
	})
}

// TestLeanDumpAgreesWithTheLibrary compares the lean address dump with the
// netlink library's AddrList on one link holding every kind of address,
// while another link holds addresses that must not show up.
func TestLeanDumpAgreesWithTheLibrary(t *testing.T) {
	ns, h := labNS(t)
	ipCmd(t, "-n", ns, "link", "add", "other0", "type", "ifb")
	ipCmd(t, "-n", ns, "link", "set", "other0", "up")
	for _, a := range []string{"10.0.0.1/32", "10.0.0.100/24", "192.0.2.1/32", "10.9.0.1 peer 10.9.0.2/32", "10.9.1.1 peer 10.9.1.0/24"} {
		ipCmd(t, append([]string{"-n", ns, "addr", "add"}, append(strings.Fields(a), "dev", iface)...)...)
	}
	// The kernel sends IFA_LOCAL for IPv6 only with a peer, then with
	// IFA_ADDRESS the peer; a peer equal to the address is no peer at all.
	for _, a := range []string{"2001:db8::1/128", "2001:db8:1::1/64", "2001:db8:2::1 peer 2001:db8:2::2/128", "2001:db8:3::1 peer 2001:db8:3::1/128"} {
		ipCmd(t, append([]string{"-n", ns, "addr", "add"}, append(strings.Fields(a), "dev", iface, "nodad")...)...)
	}
	for i := 0; i < 300; i++ { // more than one datagram's worth
		ipCmd(t, "-n", ns, "addr", "add", fmt.Sprintf("10.1.%d.%d/32", i/250, i%250+1), "dev", iface)
	}
	ipCmd(t, "-n", ns, "addr", "add", "198.51.100.1/32", "dev", "other0")
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	fast := map[netip.Prefix]struct{}{}
	fastPeers, err := h.ListPrefixes(link.Attrs().Index, fast, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	slow := map[netip.Prefix]struct{}{}
	var slowPeers []Peer
	for _, ad := range list {
		p, peer, ok := fromLibrary(ad)
		switch {
		case !ok:
			t.Errorf("library address %+v not understood", ad)
		case peer.Local.IsValid():
			slowPeers = append(slowPeers, peer)
		case !p.Addr().IsLinkLocalUnicast():
			slow[p] = struct{}{}
		}
	}
	if len(fast) != 306 {
		t.Errorf("lean dump found %d addresses, want 306", len(fast))
	}
	if diff := cmpDiff(slow, fast); diff != "" {
		t.Errorf("lean dump differs from AddrList (-library +lean):\n%s", diff)
	}
	slices.SortFunc(fastPeers, comparePeers)
	slices.SortFunc(slowPeers, comparePeers)
	if diff := cmpDiff(slowPeers, fastPeers); diff != "" {
		t.Errorf("lean dump's peers differ from AddrList's (-library +lean):\n%s", diff)
	}
	wantPeers := peers("10.9.0.1 peer 10.9.0.2/32", "10.9.1.1 peer 10.9.1.0/24", "2001:db8:2::1 peer 2001:db8:2::2/128")
	if diff := cmpDiff(wantPeers, fastPeers); diff != "" {
		t.Errorf("point-to-point entries (-want +got):\n%s", diff)
	}
	for _, p := range prefixes("10.9.0.1/32", "2001:db8:2::1/128", "2001:db8:2::2/128") {
		if _, ok := fast[p]; ok {
			t.Errorf("the point-to-point entry was read as the address %s", p)
		}
	}
	if _, ok := fast[netip.MustParsePrefix("2001:db8:3::1/128")]; !ok {
		t.Error("an IPv6 entry whose peer is its own address: not read as that address")
	}
	// Again, on the same socket: sequence numbers keep answers apart.
	again := map[netip.Prefix]struct{}{}
	againPeers, err := h.ListPrefixes(link.Attrs().Index, again, nil)
	if err != nil || len(again) != len(fast) || len(againPeers) != len(fastPeers) {
		t.Errorf("second dump: %d addresses, %d peers, %v", len(again), len(againPeers), err)
	}
}

// TestNetlinkIntegrationPointToPoint: with the kernel's own point-to-point
// entries on the link, rhi never takes one for its VIP, never deletes one,
// and reports them as foreign in ip(8)'s form.
func TestNetlinkIntegrationPointToPoint(t *testing.T) {
	ns, h := labNS(t)
	ipCmd(t, "-n", ns, "addr", "add", "10.9.0.1", "peer", "10.9.0.2/32", "dev", iface)
	ipCmd(t, "-n", ns, "addr", "add", "2001:db8::1", "peer", "2001:db8::2/128", "dev", iface, "nodad")
	ptp := []string{"10.9.0.1 peer 10.9.0.2/32 global", "2001:db8::1 peer 2001:db8::2/128 global nodad"}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a := New(h, iface, log)
	ctx := context.Background()

	none := owned("-10.9.0.1/32", "-10.9.0.2/32", "-2001:db8::1/128", "-2001:db8::2/128")
	for range 2 {
		st, err := a.Set(ctx, none)
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
	got, _ := ipAddrs(t, ns)
	if diff := cmpDiff(ptp, withoutLinkLocal(got)); diff != "" {
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
		st, err := a.Set(ctx, both)
		wantErr := `vip "2001:db8::1/128": add on "rhi0": the address is already there as "2001:db8::1 peer 2001:db8::2/128"`
		if err == nil || err.Error() != wantErr {
			t.Errorf("Set error = %v, want %s", err, wantErr)
		}
		if diff := cmpDiff(prefixes("10.9.0.1/32"), st.Present); diff != "" || st.Changed != 1-i {
			t.Errorf("Set %d: %d changed, Present (-want +got):\n%s", i, st.Changed, diff)
		}
	}
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff([]string{"10.9.0.1 peer 10.9.0.2/32 global", "10.9.0.1/32 global", "2001:db8::1 peer 2001:db8::2/128 global nodad"}, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show (-want +got):\n%s", diff)
	}

	// Withdrawn: rhi's own entry goes, the peer entry stays.
	st, err := a.Set(ctx, none)
	if err != nil || st.Changed != 1 {
		t.Fatalf("Set, withdrawn again: %d changed, %v", st.Changed, err)
	}
	got, _ = ipAddrs(t, ns)
	if diff := cmpDiff(ptp, withoutLinkLocal(got)); diff != "" {
		t.Errorf("ip addr show (-want +got):\n%s", diff)
	}
}

// TestLeanDumpReopensInItsNamespace: after a dump that failed midway (a
// receive timeout, EAGAIN) the dumper drops its socket and opens a new one
// on the next call. That socket must be in the handle's namespace, not in
// that of the calling thread: else a handle of NewHandleAt reads the
// host's link that happens to have the same index.
func TestLeanDumpReopensInItsNamespace(t *testing.T) {
	ns, h := labNS(t)
	ipCmd(t, "-n", ns, "addr", "add", "10.0.0.1/32", "dev", iface)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	index := link.Attrs().Index
	list := func() map[netip.Prefix]struct{} {
		t.Helper()
		got := map[netip.Prefix]struct{}{}
		if _, err := h.ListPrefixes(index, got, nil); err != nil {
			t.Fatalf("ListPrefixes: %v", err)
		}
		return got
	}
	want := list()
	if _, ok := want[netip.MustParsePrefix("10.0.0.1/32")]; !ok || len(want) != 1 {
		t.Fatalf("first dump: %v, want 10.0.0.1/32", want)
	}
	timedOut := func() {
		h.dump.mu.Lock()
		h.dump.drop() // what list does after EAGAIN
		h.dump.mu.Unlock()
	}

	// From a thread in this process's own namespace, as in the daemon.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lab, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	here, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	if here.Equal(lab) {
		t.Fatal("the test runs inside the lab namespace")
	}
	timedOut()
	if diff := cmpDiff(want, list()); diff != "" {
		t.Errorf("after a reopen from another namespace (-want +got):\n%s", diff)
	}

	// From a thread inside the handle's namespace.
	timedOut()
	var inside map[netip.Prefix]struct{}
	if err := inns.Do(lab, func() error { inside = list(); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(want, inside); diff != "" {
		t.Errorf("after a reopen from inside the namespace (-want +got):\n%s", diff)
	}
}

// TestWriteAddrsOnTheKernel sends changes in batches of batchSize to the
// real kernel: more than two sends, both families, an add of an address
// that is there and a delete of one that is not, each answered on its own,
// and the addresses made as AddrAdd of hostAddr makes them (scope global,
// IPv6 nodad and not tentative).
func TestWriteAddrsOnTheKernel(t *testing.T) {
	ns, h := labNS(t)
	ipCmd(t, "-n", ns, "addr", "add", "10.7.0.2/32", "dev", iface)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	var adds []AddrChange
	var want []string
	for i := range 2*batchSize + 40 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 7, byte(i / 250), byte(i%250 + 1)}), 32)
		if i%5 == 0 {
			p = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}), 128)
			want = append(want, p.String()+" global nodad")
		} else {
			want = append(want, p.String()+" global")
		}
		adds = append(adds, AddrChange{Prefix: p, Add: true})
	}
	answers, err := h.WriteAddrs(context.Background(), link.Attrs().Index, adds)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		wantErr := error(nil)
		if adds[i].Prefix.String() == "10.7.0.2/32" {
			wantErr = unix.EEXIST // added by ip(8) before
		}
		if !errors.Is(a, wantErr) && a != wantErr {
			t.Errorf("add %s: answer %v, want %v", adds[i].Prefix, a, wantErr)
		}
	}
	got, _ := ipAddrs(t, ns)
	slices.Sort(want)
	if diff := cmp.Diff(want, withoutLinkLocal(got)); diff != "" {
		t.Errorf("after the adds (-want +got):\n%s", diff)
	}

	dels := []AddrChange{{Prefix: netip.MustParsePrefix("10.7.9.9/32")}} // not there
	for _, c := range adds {
		dels = append(dels, AddrChange{Prefix: c.Prefix})
	}
	answers, err = h.WriteAddrs(context.Background(), link.Attrs().Index, dels)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(answers[0], unix.EADDRNOTAVAIL) {
		t.Errorf("delete of an absent address: answer %v, want EADDRNOTAVAIL", answers[0])
	}
	for i, a := range answers[1:] {
		if a != nil {
			t.Errorf("delete %s: answer %v", dels[i+1].Prefix, a)
		}
	}
	if got, _ := ipAddrs(t, ns); len(withoutLinkLocal(got)) != 0 {
		t.Errorf("after the deletes: %v", got)
	}
}

// oneByOne is a Handle without its batch path: Set writes one address
// after the other, with the netlink library (for BenchmarkSetNetlink1000).
type oneByOne struct{ h *Handle }

func (o oneByOne) LinkByName(name string) (netlink.Link, error) { return o.h.LinkByName(name) }
func (o oneByOne) AddrList(l netlink.Link, family int) ([]netlink.Addr, error) {
	return o.h.AddrList(l, family)
}
func (o oneByOne) AddrAdd(l netlink.Link, a *netlink.Addr) error { return o.h.AddrAdd(l, a) }
func (o oneByOne) AddrDel(l netlink.Link, a *netlink.Addr) error { return o.h.AddrDel(l, a) }
func (o oneByOne) ListPrefixes(index int, into map[netip.Prefix]struct{}, peers []Peer) ([]Peer, error) {
	return o.h.ListPrefixes(index, into, peers)
}

// BenchmarkSetNetlink1000 flips 1,000 VIPs, all there are on the link, on
// the real kernel: the lab's "1,000 VIPs at once" (SPEC §8: < 200 ms), in
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
			sets := []map[netip.Prefix]bool{on, off}
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
