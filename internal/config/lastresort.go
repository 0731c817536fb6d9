package config

import (
	"math"
	"net/netip"
	"strconv"

	"gopkg.in/yaml.v3"
)

// LastResort is the last-resort tier: a VIP there lives on Interface, and
// BIRD exports it marked so that routers use it only where they have no
// other path (deploy/bird/tiers.conf). The fail-open guard puts a VIP
// there when its health fails and too few other sites serve it.
type LastResort struct {
	// Interface is the last-resort interface (default rhi2). It must
	// differ from interface and degraded.interface. Whether it exists is
	// seen at run time: while it is missing, the tier is unavailable.
	Interface string `yaml:"interface,omitempty"`
}

// DefaultLastResortInterface is last_resort.interface when the file sets
// none.
const DefaultLastResortInterface = "rhi2"

var lastResortKeys = []string{"interface"}

func (p *parser) lastResort(n *yaml.Node, c *Config) {
	const path = "last_resort"
	m, _ := p.mapping(n, path, lastResortKeys...)
	set(p, m["interface"], path+".interface", &c.LastResort.Interface, checked(checkIfname))
}

// lastResortClash reports a last-resort interface that is the main or the
// degraded one while the guard is on or last_resort.interface is written:
// each tier needs its own interface, since the interface is what tells
// BIRD the tier. (A file that names rhi2 as its main interface and has no
// guard stays valid; the daemon then manages no last-resort interface.)
// top is the top-level mapping's value nodes.
func (p *parser) lastResortClash(top map[string]*yaml.Node, c *Config) {
	lr := c.LastResort.Interface
	if lr != c.Interface && lr != c.Degraded.Interface {
		return
	}
	if !c.FailOpen.Enabled() && top["last_resort"] == nil {
		return
	}
	other := "interface"
	if lr != c.Interface {
		other = "degraded.interface"
	}
	n, path := top["interface"], "interface"
	if other == "degraded.interface" {
		n, path = nil, "degraded.interface"
		if dn := top["degraded"]; dn != nil {
			if m, _ := p.mapping(dn, "degraded", degradedKeys...); m["interface"] != nil {
				n = m["interface"]
			}
		}
	}
	if ln := top["last_resort"]; ln != nil {
		if m, _ := p.mapping(ln, "last_resort", lastResortKeys...); m["interface"] != nil {
			n, path = m["interface"], "last_resort.interface"
		}
	}
	if n == nil {
		return // defaults only: they cannot clash
	}
	p.report(n, path, lr, issue{msg: "last_resort.interface and " + other + " are the same: each tier needs its own interface"})
}

// SiteID is a site's identity in the guard's view: a 32-bit number, written
// as a whole number or a dotted quad (as a BIRD router id is). 0 is
// "not set".
type SiteID uint32

// String is the dotted quad.
func (s SiteID) String() string {
	return netip.AddrFrom4([4]byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}).String()
}

// MarshalYAML prints a SiteID as a dotted quad.
func (s SiteID) MarshalYAML() (any, error) { return s.String(), nil }

// parseSiteID reads a site id: a whole number from 1 to 4294967295 or a
// dotted quad other than 0.0.0.0.
func parseSiteID(s string) (SiteID, issue) {
	const allowed = "a whole number from 1 to 4294967295, or a dotted quad such as 192.0.2.1 (BIRD's router id when unset)"
	if s == "" {
		return 0, issue{msg: "empty value", allowed: allowed}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if !a.Is4() || a.IsUnspecified() {
			return 0, issue{msg: "not a non-zero IPv4 dotted quad", allowed: allowed}
		}
		b := a.As4()
		return SiteID(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])), issue{}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	switch {
	case err != nil:
		return 0, issue{msg: "not a whole number or a dotted quad", allowed: allowed}
	case n == 0 || n > math.MaxUint32:
		return 0, issue{msg: "out of range", allowed: allowed}
	}
	return SiteID(n), issue{}
}
