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
	// ASPath holds the AS numbers of the AS path (BIRD 2's BGP.as_path,
	// BIRD 3's bgp_path) in order, the neighbour's first. The members of an
	// AS_SET ("{65002 65003}") or of a confederation segment ("(65010)")
	// are not in it; ASSet says whether there was any. HasASPath says the
	// reply had the attribute at all: every BGP route has one, if empty,
	// while a route of this host's own (a direct or static route) has none
	// until an export filter sets it.
	ASPath    []uint32
	ASSet     bool
	HasASPath bool
	// Communities and LargeCommunities are the communities (BGP.community,
	// bgp_community) and large communities (BGP.large_community,
	// bgp_large_community), in BIRD's order.
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

// ErrUnreadable is wrapped by the errors of a reply that is a well-formed
// listing but says something rhi cannot interpret where it needs it: an
// attribute line that is not "name: value", an attribute that looks like an
// AS path or a community under a name neither BIRD 2 nor BIRD 3 uses, a
// value of a needed attribute it cannot parse, or a guard-table route with
// no recognisable source or path. It concerns the one question asked: the
// connection stays usable. Callers must treat it as "unknown", never as an
// empty answer.
var ErrUnreadable = errors.New("BIRD's reply is not understood")

// ParsePaths parses a "show route … all" listing like ParseRoutes and adds
// the BGP attributes of each route. It reads BIRD 2's names (BGP.as_path,
// BGP.community, BGP.large_community) and BIRD 3's (bgp_path,
// bgp_community, bgp_large_community). An attribute it needs that it
// cannot read, or one that it does not know but that looks like one it
// needs, is an error wrapping ErrUnreadable that names the line; other
// attributes are skipped.
func ParsePaths(r Reply) ([]Path, error) {
	routes, err := ParseRoutes(r)
	if err != nil || len(routes) == 0 {
		return nil, err
	}
	paths := make([]Path, len(routes))
	for i, rt := range routes {
		paths[i].Route = rt
	}
	var (
		cur  = -1 // index of the route the attribute lines belong to
		attr string
	)
	// flush reads the attribute gathered so far into the current route.
	flush := func() error {
		if attr == "" {
			return nil
		}
		err := paths[cur].attribute(attr)
		attr = ""
		if err != nil {
			return fmt.Errorf("show route: route %d (%s): %w: %w", cur+1, paths[cur].Prefix, ErrUnreadable, err)
		}
		return nil
	}
	for _, l := range r.Lines {
		switch {
		case l.Code == codeRoute && isRouteLine(l.Text):
			if err := flush(); err != nil {
				return nil, err
			}
			cur++
		case l.Code == codeRouteAttr && cur >= 0 && cur < len(paths):
			// A set too long for one line (communities) goes on in
			// lines indented by two tabs, with no name.
			if strings.HasPrefix(l.Text, "\t\t") && attr != "" {
				attr += " " + strings.TrimSpace(l.Text)
				continue
			}
			if err := flush(); err != nil {
				return nil, err
			}
			attr = strings.TrimSpace(l.Text)
		}
	}
	if cur >= 0 && cur < len(paths) {
		if err := flush(); err != nil {
			return nil, err
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

// The attributes ParsePaths reads, under BIRD 2's and BIRD 3's names.
const (
	attrASPath = iota + 1
	attrCommunity
	attrLargeCommunity
)

var pathAttributes = map[string]int{
	"BGP.as_path":         attrASPath,
	"bgp_path":            attrASPath,
	"BGP.community":       attrCommunity,
	"bgp_community":       attrCommunity,
	"BGP.large_community": attrLargeCommunity,
	"bgp_large_community": attrLargeCommunity,
}

// otherPathLike are the attributes whose names look like a path or a
// community but are not the ones ParsePaths reads: the extended
// communities, and AS4_PATH, which BIRD merges into the AS path.
var otherPathLike = map[string]bool{
	"BGP.ext_community": true, "bgp_ext_community": true,
	"BGP.as4_path": true, "bgp_as4_path": true,
}

// looksLikePath reports whether an attribute name could be an AS path or a
// (large) community under a name ParsePaths does not know, e.g. a future
// BIRD's: reading past it would take a degraded route for a full one, or
// another site's path for none.
func looksLikePath(name string) bool {
	n := strings.ToLower(name)
	return !otherPathLike[name] && (strings.Contains(n, "path") || strings.Contains(n, "communit"))
}

// attribute reads one "name: value" line into p.
func (p *Path) attribute(line string) error {
	name, value, ok := strings.Cut(line, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("attribute line %q is not \"name: value\"", line)
	}
	value = strings.TrimSpace(value)
	kind, known := pathAttributes[name]
	if !known {
		if looksLikePath(name) {
			return fmt.Errorf("attribute %q in %q: not an AS path or community name BIRD 2 or BIRD 3 prints", name, line)
		}
		return nil // an attribute ParsePaths does not need
	}
	var err error
	switch kind {
	case attrASPath:
		if p.HasASPath {
			return fmt.Errorf("%q: a second AS path", line)
		}
		p.HasASPath = true
		p.ASPath, p.ASSet, err = parseASPath(value)
	case attrCommunity:
		var cs [][]uint32
		cs, err = parseTuples(value, 2)
		for _, c := range cs {
			p.Communities = append(p.Communities, Community{c[0], c[1]})
		}
	case attrLargeCommunity:
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
// table than table is an error. A route for prefix whose source the reply
// does not name, or a BGP route without an AS path, is an error wrapping
// ErrUnreadable: it may be another site's, so the answer is unknown, not
// "one fewer".
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
		if p.Prefix != prefix.Masked() {
			continue
		}
		switch {
		case p.Source == "":
			return a, fmt.Errorf("show route: route of %s by %q in table %q: %w: no source (neither BIRD 2's \"Type:\" nor BIRD 3's \"source:\")", p.Prefix, p.Proto, table, ErrUnreadable)
		case p.Source != "BGP":
			continue
		case !p.HasASPath:
			return a, fmt.Errorf("show route: BGP route of %s by %q in table %q: %w: no AS path (neither BIRD 2's BGP.as_path nor BIRD 3's bgp_path)", p.Prefix, p.Proto, table, ErrUnreadable)
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
