package bird

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Path is a route of a "show route … all" listing together with the BGP
// attributes BIRD prints for it (code 1012 lines). A route that is not from
// BGP and has no such attribute leaves them empty.
type Path struct {
	Route
	// ASPath holds the AS numbers of BGP.as_path in order, the neighbour's
	// first. The members of an AS_SET ("{65002 65003}") or of a
	// confederation segment ("(65010)") are not in it; ASSet says whether
	// there was any.
	ASPath []uint32
	ASSet  bool
	// Communities and LargeCommunities are BGP.community and
	// BGP.large_community, in BIRD's order.
	Communities      []Community
	LargeCommunities []LargeCommunity
}

// Community is an RFC 1997 community (AS, value).
type Community [2]uint32

// LargeCommunity is an RFC 8092 large community (global administrator,
// data 1, data 2).
type LargeCommunity [3]uint32

// Origin returns the AS that originated the path, the last of its AS_PATH,
// or false for an empty path (a route of this AS) or one that ends in a set.
func (p Path) Origin() (uint32, bool) {
	if len(p.ASPath) == 0 || p.ASSet {
		return 0, false
	}
	return p.ASPath[len(p.ASPath)-1], true
}

// LeadingCopies counts how many times as starts the AS path: 1 for a path a
// neighbour in AS as sent without prepending.
func (p Path) LeadingCopies(as uint32) int {
	n := 0
	for n < len(p.ASPath) && p.ASPath[n] == as {
		n++
	}
	return n
}

// ParsePaths parses a "show route … all" listing like ParseRoutes and adds
// the BGP attributes of each route. An attribute line it cannot read
// (as_path, community or large_community) is an error naming the line;
// attributes it does not need are skipped.
func ParsePaths(r Reply) ([]Path, error) {
	routes, err := ParseRoutes(r)
	if err != nil || len(routes) == 0 {
		return nil, err
	}
	paths := make([]Path, len(routes))
	for i, rt := range routes {
		paths[i].Route = rt
	}
	cur := -1 // index of the route the attribute lines belong to
	for _, l := range r.Lines {
		switch {
		case l.Code == codeRoute && isRouteLine(l.Text):
			cur++
		case l.Code == codeRouteAttr && cur >= 0 && cur < len(paths):
			if err := paths[cur].attribute(strings.TrimSpace(l.Text)); err != nil {
				return nil, fmt.Errorf("show route: route %d (%s): %w", cur+1, paths[cur].Prefix, err)
			}
		}
	}
	if cur != len(paths)-1 {
		return nil, fmt.Errorf("show route: %d route lines for %d routes", cur+1, len(paths))
	}
	return paths, nil
}

// isRouteLine tells a route line of a 1007 block from a table header, a
// separator or a next hop, as ParseRoutes does.
func isRouteLine(text string) bool {
	if text == "" || text[0] == '\t' {
		return false
	}
	return !(strings.HasPrefix(text, "Table ") && strings.HasSuffix(text, ":"))
}

// attribute reads one "BGP.name: value" line into p.
func (p *Path) attribute(line string) error {
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		return nil // not an attribute line BIRD 2 prints; nothing to take
	}
	value = strings.TrimSpace(value)
	var err error
	switch name {
	case "BGP.as_path":
		p.ASPath, p.ASSet, err = parseASPath(value)
	case "BGP.community":
		var cs [][]uint32
		cs, err = parseTuples(value, 2)
		for _, c := range cs {
			p.Communities = append(p.Communities, Community{c[0], c[1]})
		}
	case "BGP.large_community":
		var cs [][]uint32
		cs, err = parseTuples(value, 3)
		for _, c := range cs {
			p.LargeCommunities = append(p.LargeCommunities, LargeCommunity{c[0], c[1], c[2]})
		}
	}
	if err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	return nil
}

// parseASPath reads BIRD's AS path: AS numbers separated by spaces, with
// sets in braces and confederation segments in parentheses, which it skips.
func parseASPath(s string) ([]uint32, bool, error) {
	var (
		out   []uint32
		set   bool
		depth int // inside {} or ()
	)
	for _, tok := range strings.Fields(s) {
		for strings.HasPrefix(tok, "{") || strings.HasPrefix(tok, "(") || strings.HasPrefix(tok, "[") {
			depth, set, tok = depth+1, true, tok[1:]
		}
		closes := 0
		for strings.HasSuffix(tok, "}") || strings.HasSuffix(tok, ")") || strings.HasSuffix(tok, "]") {
			closes, tok = closes+1, tok[:len(tok)-1]
		}
		if tok != "" {
			n, err := strconv.ParseUint(tok, 10, 32)
			if err != nil {
				return nil, false, fmt.Errorf("as path: %q is not an AS number", tok)
			}
			if depth == 0 {
				out = append(out, uint32(n))
			}
		}
		if depth -= closes; depth < 0 {
			return nil, false, fmt.Errorf("as path: unbalanced %q", s)
		}
	}
	if depth != 0 {
		return nil, false, fmt.Errorf("as path: unbalanced %q", s)
	}
	return out, set, nil
}

// parseTuples reads "(a, b) (c, d)" or "(a, b, c)" groups of n numbers.
func parseTuples(s string, n int) ([][]uint32, error) {
	var out [][]uint32
	rest := strings.TrimSpace(s)
	for rest != "" {
		if rest[0] != '(' {
			return nil, fmt.Errorf("expected '(' at %q", rest)
		}
		inside, after, ok := strings.Cut(rest[1:], ")")
		if !ok {
			return nil, fmt.Errorf("no ')' in %q", rest)
		}
		parts := strings.Split(inside, ",")
		if len(parts) != n {
			return nil, fmt.Errorf("(%s) has %d parts, want %d", inside, len(parts), n)
		}
		t := make([]uint32, n)
		for i, part := range parts {
			v, err := strconv.ParseUint(strings.TrimSpace(part), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("(%s): %q is not a number", inside, strings.TrimSpace(part))
			}
			t[i] = uint32(v)
		}
		out = append(out, t)
		rest = strings.TrimSpace(after)
	}
	return out, nil
}

// Announcers is what a guard table says about one prefix: the BGP paths
// that other sites announce for it.
type Announcers struct {
	// Paths counts the BGP routes for exactly the prefix (with ADD-PATH, one
	// per site and neighbour).
	Paths int
	// Origins are the distinct origin ASes of those paths, ascending: one
	// per site when every site has an AS of its own.
	Origins []uint32
	// Unattributed counts the paths with no origin AS: an empty AS path (a
	// neighbour of this AS) or one that ends in an AS_SET.
	Unattributed int
}

// Sites returns the number of other sites that announce the prefix as far
// as the paths tell: the distinct origin ASes.
func (a Announcers) Sites() int { return len(a.Origins) }

// GuardCommand asks a guard table (tiers.conf's rhi_guard4 or rhi_guard6)
// for every path it holds for exactly prefix:
// "show route <prefix> table <table> all". Read the reply with
// ParseAnnouncers.
func GuardCommand(prefix netip.Prefix, table string) string {
	return TableRouteCommand(prefix, table)
}

// ParseAnnouncers reads the result of Exec for a GuardCommand. 8001
// "Network not found" is no announcer; any other error is returned, never
// read as "nobody announces it". Routes that are not from BGP (the host's
// own VIP routes, which the pipe copies into the guard table for export)
// and routes for another prefix do not count. A reply listing another
// table than table is an error.
func ParseAnnouncers(r Reply, err error, prefix netip.Prefix, table string) (Announcers, error) {
	var a Announcers
	if err != nil {
		var be *Error
		if errors.As(err, &be) && be.Code == CodeNetworkNotFound {
			return a, nil
		}
		return a, err
	}
	paths, err := ParsePaths(r)
	if err != nil {
		return a, err
	}
	for _, p := range paths {
		if p.Table != "" && p.Table != table {
			return a, fmt.Errorf("show route: reply lists table %q, asked for %q", p.Table, table)
		}
		if p.Prefix != prefix.Masked() || !strings.HasPrefix(p.Source, "BGP") {
			continue
		}
		a.Paths++
		if as, ok := p.Origin(); ok {
			if !slices.Contains(a.Origins, as) {
				a.Origins = append(a.Origins, as)
			}
		} else {
			a.Unattributed++
		}
	}
	slices.Sort(a.Origins)
	return a, nil
}

// ExportAllCommand is ExportCommand with "all": the route as the channel's
// export filter leaves it, with its BGP attributes, for ParsePaths.
func ExportAllCommand(protocol string, prefix netip.Prefix) string {
	return ExportCommand(protocol, prefix) + " all"
}
