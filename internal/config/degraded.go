package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Degraded is the degraded tier: while a VIP is available but
// the share of healthy nodes over its upstreams is below Below percent, the
// VIP lives on Interface instead of the main interface, and BIRD exports it
// from there with a longer AS path (deploy/bird/tiers.conf). The global
// section is every VIP's default; a VIP's own section overrides below.
type Degraded struct {
	// Below is the share, in percent (0 to 100), under which an available
	// VIP is degraded. 0 (the default) turns the tier off: no share is
	// below 0 %.
	Below Percent `yaml:"below"`
	// Interface is the degraded interface (default rhi1). There is one per
	// daemon: a VIP's degraded.interface, if written, must name it too. It
	// must differ from interface.
	Interface string `yaml:"interface,omitempty"`
}

// Percent is a share in percent, written "50%".
type Percent float64

// MarshalYAML prints a Percent as the file writes it.
func (p Percent) MarshalYAML() (any, error) {
	return strconv.FormatFloat(float64(p), 'f', -1, 64) + "%", nil
}

// On reports whether the tier can degrade a VIP.
func (d Degraded) On() bool { return d.Below > 0 }

// DefaultDegradedInterface is degraded.interface when the file sets none.
const DefaultDegradedInterface = "rhi1"

var degradedKeys = []string{"below", "interface"}

// parsePercent reads "P%" with 0 <= P <= 100 (decimals allowed).
func parsePercent(s string) (Percent, issue) {
	allowed := `a percentage from "0%" to "100%", e.g. "50%"`
	if s == "" {
		return 0, issue{msg: "empty value", allowed: allowed}
	}
	num, isPct := strings.CutSuffix(s, "%")
	if !isPct {
		return 0, issue{msg: "not a percentage (the % sign is required)", allowed: allowed}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || f != f {
		return 0, issue{msg: "not a number", allowed: allowed}
	}
	if f < 0 || f > 100 {
		return 0, issue{msg: "out of range", allowed: allowed}
	}
	return Percent(f), issue{}
}

// degradedGlobal reads the top-level degraded section into c.Degraded and
// checks its interface against interface (read before it).
func (p *parser) degradedGlobal(n *yaml.Node, c *Config) {
	const path = "degraded"
	m, _ := p.mapping(n, path, degradedKeys...)
	set(p, m["below"], path+".below", &c.Degraded.Below, parsePercent)
	set(p, m["interface"], path+".interface", &c.Degraded.Interface, checked(checkIfname))
}

// degradedClash reports, once the VIPs are read, a degraded interface that
// is the main one while some VIP can be degraded: the tier needs a second
// interface. top is the top-level mapping's value nodes.
func (p *parser) degradedClash(top map[string]*yaml.Node, c *Config) {
	if c.Degraded.Interface != c.Interface {
		return
	}
	on := c.Degraded.On()
	for i := range c.VIPs {
		on = on || c.VIPs[i].Degraded.On()
	}
	if !on {
		return
	}
	n, path := top["interface"], "interface"
	if dn := top["degraded"]; dn != nil {
		if m, _ := p.mapping(dn, "degraded", degradedKeys...); m["interface"] != nil {
			n, path = m["interface"], "degraded.interface"
		}
	}
	if n == nil {
		return // both defaults: cannot clash
	}
	p.report(n, path, c.Interface, issue{msg: "degraded.interface and interface are the same: the degraded tier needs a second interface"})
}

// degradedVIP reads a VIP's own degraded section over the global one in
// v.Degraded. Its interface may only repeat the global one.
func (p *parser) degradedVIP(n *yaml.Node, path string, c *Config, v *VIP) {
	path += ".degraded"
	m, _ := p.mapping(n, path, degradedKeys...)
	set(p, m["below"], path+".below", &v.Degraded.Below, parsePercent)
	var name string
	if set(p, m["interface"], path+".interface", &name, checked(checkIfname)) && name != c.Degraded.Interface {
		p.report(m["interface"], path+".interface", name, issue{msg: "one degraded interface per daemon: must be degraded.interface", allowed: c.Degraded.Interface})
	}
}
