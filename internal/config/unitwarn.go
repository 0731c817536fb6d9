package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// The shipped systemd unit lets rhi speak IP only to localhost
// (IPAddressDeny=any, IPAddressAllow=localhost): a control API or a probe
// target elsewhere is refused by the kernel, and rhi sees only "operation
// not permitted" on connect. Nothing in the file is wrong, so these are
// warnings, saying what the unit needs.

// unitWarnings lists the URLs of c that leave the host.
func unitWarnings(c *Config) []string {
	var out []string
	if w := offHost("apisix_control_url", c.ControlURL); w != "" {
		out = append(out, w)
	}
	for i := range c.VIPs {
		if p := c.VIPs[i].Probe; p != nil {
			if w := offHost(fmt.Sprintf("vips[%d].probe.url", i), p.URL); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// offHost warns of a URL whose host is not a loopback address or
// "localhost".
func offHost(path, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" { // the parser refused it already
		return ""
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return ""
	}
	return fmt.Sprintf("%s: %q is not on loopback: the shipped systemd unit lets rhi reach localhost only (IPAddressDeny=any), so add its address in a drop-in (systemctl edit rhi: [Service] IPAddressAllow=ADDRESS)", path, host)
}
