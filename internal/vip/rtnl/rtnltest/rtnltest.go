// Package rtnltest is the lab of the root-only tests of vip and vip/rtnl:
// a network namespace holding an ifb link called rhi0 (the kernel here has
// no dummy link type), ip(8) with a deadline, and what ip(8) says the link
// holds, the oracle the netlink code is checked against. It imports neither
// package, so that both may use it from their own tests.
package rtnltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// Iface is the link NS creates.
const Iface = "rhi0"

// IP runs ip(8) with a deadline and returns its standard output.
func IP(t testing.TB, args ...string) []byte {
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

// NS creates a namespace named prefix-<pid>-<random> holding an ifb link
// called Iface, down, and returns its name; it goes away at cleanup. It
// skips the test without root or ip(8).
func NS(t testing.TB, prefix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	ns := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), rand.Uint32())
	IP(t, "netns", "add", ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	IP(t, "-n", ns, "link", "add", Iface, "type", "ifb")
	return ns
}

// Linker is the part of a netlink handle SetLink needs (rtnl.Handle has
// it).
type Linker interface {
	LinkByName(name string) (netlink.Link, error)
	LinkSetUp(link netlink.Link) error
	LinkSetDown(link netlink.Link) error
}

// SetLink sets Iface administratively up or down through h.
func SetLink(t testing.TB, h Linker, up bool) {
	t.Helper()
	link, err := h.LinkByName(Iface)
	if err != nil {
		t.Fatalf("find %s: %v", Iface, err)
	}
	if up {
		err = h.LinkSetUp(link)
	} else {
		err = h.LinkSetDown(link)
	}
	if err != nil {
		t.Fatalf("set %s up=%v: %v", Iface, up, err)
	}
}

// Addrs returns what `ip -j addr show` says Iface in ns holds, one sorted
// line per address: "10.0.0.1/32 global", "2001:db8::1/128 global nodad",
// "10.9.0.1 peer 10.9.0.2/32 global", plus whether the link is
// administratively up.
func Addrs(t testing.TB, ns string) ([]string, bool) {
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
	out := IP(t, "-n", ns, "-j", "addr", "show", "dev", Iface)
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

// WithoutLinkLocal drops the fe80:: address the kernel gives an up link:
// its value is random, and it is foreign to rhi like any other.
func WithoutLinkLocal(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "fe80:") })
}
