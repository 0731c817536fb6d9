package lab

import (
	"fmt"
	"net/netip"
	"strings"
)

// Route is one path for a prefix in a BIRD routing table, as the lab's own
// parser reads it.
//
// This parser is the tests' oracle, and deliberately not package bird's:
// the lab judges rhi by what the peer router holds, while rhi itself (its
// confirmation and `rhi verify`) reads BIRD through package bird. Were the
// judge to read with the same parser, one bug in it (a route misread as
// absent, say) would blind rhi and its tests alike, and a withdrawal test
// would pass on a route that is still there. So the lab reads a different
// form of the listing (`show route` without "all", next hops included) with
// this small parser, tested on its own transcripts in testdata. Everything
// else the lab asks BIRD (protocols, counts) goes through package bird.
type Route struct {
	Prefix   netip.Prefix
	Protocol string     // the BIRD protocol the path came from, e.g. "dc1_4" or "rhi_direct"
	From     string     // the lab host at the other end of that protocol ("dc1"), "" if none
	NextHop  netip.Addr // zero for a route through an interface only
	Iface    string
	Best     bool // BIRD's preferred path for the prefix (marked "*")
}

// parseRoutes reads the reply of `show route [<prefix>]` without "all" (codes
// already removed):
//
//	Table master4:
//	10.255.0.10/32       unicast [dc1_4 14:07:47.016] * (100) [AS65001i]
//		via 10.99.1.2 on dc1
//	                     unicast [dc2_4 14:07:48.120] (100) [AS65002i]
//		via 10.99.2.2 on dc2
func parseRoutes(lines []string) ([]Route, error) {
	var (
		out    []Route
		prefix netip.Prefix
	)
	for _, line := range lines {
		switch {
		case line == "", strings.HasPrefix(line, "Table "):
			prefix = netip.Prefix{}
		case strings.HasPrefix(line, "\t"):
			if len(out) == 0 {
				return nil, fmt.Errorf("show route: next hop %q before any route", line)
			}
			r := &out[len(out)-1]
			f := strings.Fields(line)
			switch {
			case len(f) >= 4 && f[0] == "via" && f[2] == "on":
				hop, err := netip.ParseAddr(f[1])
				if err != nil {
					return nil, fmt.Errorf("show route: next hop in %q: %w", line, err)
				}
				r.NextHop, r.Iface = hop, f[3]
			case len(f) >= 2 && f[0] == "dev":
				r.Iface = f[1]
			}
			// Other attribute lines (blackhole, multipath weights) are not
			// used by the lab.
		default:
			if !strings.HasPrefix(line, " ") {
				f := strings.Fields(line)
				p, err := netip.ParsePrefix(f[0])
				if err != nil {
					return nil, fmt.Errorf("show route: prefix in %q: %w", line, err)
				}
				prefix = p
			}
			if !prefix.IsValid() {
				return nil, fmt.Errorf("show route: path %q without a prefix", line)
			}
			open, closing := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
			if open < 0 || closing < open {
				return nil, fmt.Errorf("show route: no [protocol time] in %q", line)
			}
			proto, _, _ := strings.Cut(line[open+1:closing], " ")
			after := strings.Fields(line[closing+1:])
			out = append(out, Route{
				Prefix:   prefix,
				Protocol: proto,
				Best:     len(after) > 0 && after[0] == "*",
			})
		}
	}
	return out, nil
}
