package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Warnings lists what is valid in c but probably not meant, one sentence
// each: check-config prints them and `rhi run` logs them at start-up.
// They never stop rhi.
func Warnings(c *Config) []string {
	var out []string
	if w := listenWarning(c.StatusListen); w != "" {
		out = append(out, w)
	}
	if c.Interface == "lo" {
		w := "interface: lo carries the host's own addresses, and any global /32 or /128 put on it by anyone is announced by BIRD with no health check; prefer a dedicated interface (rhi0)"
		if c.Unmanaged == UnmanagedWithdraw {
			w += "; unmanaged_addresses: withdraw deletes every global host address on lo that the config does not list (loopback addresses are never touched)"
		}
		out = append(out, w)
	}
	out = append(out, probeWarnings(c)...)
	for _, w := range []string{restartWarning(c), budgetWarning(c)} {
		if w != "" {
			out = append(out, w)
		}
	}
	out = append(out, c.Deprecated...)
	out = append(out, unitWarnings(c)...)
	out = append(out, c.notes...)
	return out
}

// listenWarning warns of a status_listen that other hosts can reach: the
// status server has no authentication, and /status tells a visitor every
// VIP and upstream.
func listenWarning(addr string) string {
	if addr == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil { // the parser refused it already
		return ""
	}
	const why = "/metrics, /status and /healthz are served without authentication to whoever can reach it; prefer 127.0.0.1 or [::1] and a proxy"
	switch {
	case host == "":
		return fmt.Sprintf("status_listen: listens on every address (got %q): %s", addr, why)
	case strings.EqualFold(host, "localhost"):
		return ""
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return fmt.Sprintf("status_listen: %q is a name, not a loopback address (got %q): %s", host, addr, why)
	case ip.IsUnspecified():
		return fmt.Sprintf("status_listen: listens on every address (got %q): %s", addr, why)
	case !ip.Unmap().IsLoopback():
		return fmt.Sprintf("status_listen: not a loopback address (got %q): %s", addr, why)
	}
	return ""
}
