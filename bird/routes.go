package bird

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Reply codes of "show route" (nest/rt-show.c and nest/rt-attr.c of BIRD 2
// and BIRD 3).
const (
	codeRoute     = 1007 // table headers, blank separators, routes, next hops
	codeRouteType = 1008 // BIRD 2: "\tType: device univ"; BIRD 3: "\tInternal route handling values: …" ("all" only)
	codeRouteAttr = 1012 // one attribute, e.g. BIRD 2's "\tBGP.origin: IGP", BIRD 3's "\tsource: BGP" ("all" only)
)

// Route is one route of a "show route" listing.
type Route struct {
	Table      string       // e.g. "master4"; "" if the reply named no table
	Prefix     netip.Prefix // the net
	Type       string       // destination type: "unicast", "blackhole", "unreachable", …
	Proto      string       // name of the protocol that made the route, e.g. "rhi_direct"
	Since      string       // time of the last change, as BIRD's timeformat prints it
	From       string       // the "from" address of a route learnt from a neighbour, or ""
	Primary    bool         // BIRD's best route for the net (marked '*' or '!')
	Preference int          // the route's preference
	// Source is the kind of protocol that made the route as
	// "show route … all" names it: "device" (a direct protocol), "static",
	// "BGP", "pipe", … It is the first word of BIRD 2's "Type:" line
	// ("Type: device univ") and the value of BIRD 3's "source:" attribute;
	// "" without "all", or when the reply had neither.
	Source string
}

// RouteCommand returns the command that lists every route BIRD holds for
// exactly prefix in the default tables (master4, master6), with the
// attributes that show where each came from. It asks for the prefix itself,
// never "show route for", which answers with the longest match, e.g. a
// covering /24 when the /32 is gone. A protocol whose channel imports into
// another table ("ipv4 { table vip4; }") is not seen by it: see
// TableRouteCommand.
func RouteCommand(prefix netip.Prefix) string {
	return "show route " + prefix.Masked().String() + " all"
}

// TableRouteCommand is RouteCommand for one named table, e.g. the Table of
// a Channel: "show route <prefix> table <table> all". Every BIRD 2 and
// BIRD 3 accepts it ("table all" is missing from older 2.0 releases). A table of another
// family is a 9001 error, not an empty listing. A name that is not a plain
// symbol (letters, digits, '_') is quoted, as BIRD's config must have
// quoted it.
func TableRouteCommand(prefix netip.Prefix, table string) string {
	return "show route " + prefix.Masked().String() + " table " + symbol(table) + " all"
}

// symbol writes a BIRD symbol name so that the command parser reads it
// back as one symbol.
func symbol(name string) string {
	plain := name != ""
	for i, c := range name {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return "'" + name + "'"
}

// ParseRoutes parses a "show route" listing. A reply that ends with
// 8001 "Network not found" is an empty listing; other error codes are
// returned as *Error. Lines that are not routes, table headers, next hops
// or attributes make it fail, so a reply to another command is not taken
// for a listing: a line of any code but 1007, 1008 and 1012 (the only ones
// BIRD 2 and BIRD 3 print in a listing, "all" included) before the end
// line, or a 1007 line that is none of the above.
func ParseRoutes(r Reply) ([]Route, error) {
	if r.Code == CodeNetworkNotFound {
		return nil, nil
	}
	if err := replyError(r); err != nil {
		return nil, err
	}
	if r.Code != CodeOK {
		return nil, fmt.Errorf("show route: unexpected end code %04d", r.Code)
	}
	var (
		out   []Route
		table string
		net   netip.Prefix // net of the last route line: later routes of the same net leave it blank
	)
	for i, l := range r.Lines {
		switch l.Code {
		case codeRoute:
			switch {
			case l.Text == "", l.Text[0] == '\t':
				// separator; next hop of the route above
			case strings.HasPrefix(l.Text, "Table ") && strings.HasSuffix(l.Text, ":"):
				table = strings.TrimSuffix(strings.TrimPrefix(l.Text, "Table "), ":")
				net = netip.Prefix{}
			default:
				rt, err := parseRouteLine(l.Text, net)
				if err != nil {
					return nil, err
				}
				rt.Table = table
				net = rt.Prefix
				out = append(out, rt)
			}
		case codeRouteType:
			// BIRD 2 names the source here; BIRD 3's line of internal
			// values is not needed.
			if v, ok := strings.CutPrefix(strings.TrimSpace(l.Text), "Type:"); ok && len(out) > 0 {
				if f := strings.Fields(v); len(f) > 0 {
					out[len(out)-1].Source = f[0]
				}
			}
		case codeRouteAttr:
			// An attribute of the route above. BIRD 3 names the source
			// among them; the others are ParsePaths' business.
			if v, ok := strings.CutPrefix(strings.TrimSpace(l.Text), "source:"); ok && len(out) > 0 {
				out[len(out)-1].Source = strings.TrimSpace(v)
			}
		default:
			if i == len(r.Lines)-1 && l.Code == r.Code {
				continue // the end line
			}
			return nil, fmt.Errorf("show route: line %04d %q is not part of a route listing", l.Code, l.Text)
		}
	}
	return out, nil
}

// parseRouteLine parses a line printed as "%-20s %s [%s %s%s]%s%s": net (blank
// for a further route of the same net), destination type, then in brackets
// the protocol, the time and an optional " from <address>", then " *" for the
// primary route, then " (preference[/metric])" and protocol-specific info.
// The time may hold spaces (timeformat "iso long"), so the brackets, not
// column offsets, delimit it.
func parseRouteLine(text string, prev netip.Prefix) (Route, error) {
	var rt Route
	rest := text
	if text[0] != ' ' {
		word, after, _ := strings.Cut(text, " ")
		p, err := netip.ParsePrefix(word)
		if err != nil {
			return rt, fmt.Errorf("show route: line %q: %w", text, err)
		}
		rt.Prefix, rest = p, after
	} else {
		if !prev.IsValid() {
			return rt, fmt.Errorf("show route: line %q: route with no net before it", text)
		}
		rt.Prefix = prev
	}
	rest = strings.TrimLeft(rest, " ")
	typ, rest, _ := strings.Cut(rest, "[")
	rt.Type = strings.TrimSpace(typ)
	inside, rest, ok := strings.Cut(rest, "]")
	if !ok {
		return rt, fmt.Errorf("show route: line %q: no [protocol time]", text)
	}
	proto, when, _ := strings.Cut(inside, " ")
	if proto == "" {
		return rt, fmt.Errorf("show route: line %q: no protocol name", text)
	}
	rt.Proto = proto
	rt.Since, rt.From, _ = strings.Cut(when, " from ")
	rest = strings.TrimLeft(rest, " ")
	if strings.HasPrefix(rest, "*") || strings.HasPrefix(rest, "!") {
		rt.Primary = true
		rest = strings.TrimLeft(rest[1:], " ")
	}
	if pref, ok := strings.CutPrefix(rest, "("); ok {
		pref, _, _ = strings.Cut(pref, ")")
		pref, _, _ = strings.Cut(pref, "/")
		n, err := strconv.Atoi(pref)
		if err != nil {
			return rt, fmt.Errorf("show route: line %q: preference: %w", text, err)
		}
		rt.Preference = n
	}
	return rt, nil
}

// ExportState is what "show route export <channel> <prefix>" says about one
// prefix.
type ExportState int

const (
	// ExportUnknown is the zero value: the reply could not be read.
	ExportUnknown ExportState = iota
	// NotInTable: BIRD's table has no route for the prefix (8001).
	NotInTable
	// NotExported: the prefix may be in the table, but the channel's export
	// filter rejects it, or the channel is down.
	NotExported
	// Exported: the channel exports a route for the prefix.
	Exported
)

func (s ExportState) String() string {
	switch s {
	case NotInTable:
		return "not in table"
	case NotExported:
		return "not exported"
	case Exported:
		return "exported"
	}
	return "unknown"
}

// ExportCommand returns the command that asks whether protocol exports
// prefix: "show route export <protocol>.<ipv4|ipv6> <prefix>".
//
// It names the channel because the plain form ("export peer_b") answers
// 9001 as soon as the session is down ("No valid tables" in BIRD 2,
// "Requested 'show route export' to protocols which aren't accepting
// exports at all." in BIRD 3), which cannot be told from a real error,
// while the channel form answers an empty 0000: not exported, which is the
// truth for a down session (captured with BIRD 2.0.12, 2.17.6 and 3.1.8,
// see testdata). The channel form also picks the right family on a
// multiprotocol session. BGP names its channels after the family, "ipv4" and
// "ipv6".
func ExportCommand(protocol string, prefix netip.Prefix) string {
	return "show route export " + protocol + "." + Family(prefix) + " " + prefix.Masked().String()
}

// Family returns the name BIRD gives prefix's address family and its
// unicast channels: "ipv4" or "ipv6".
func Family(prefix netip.Prefix) string {
	if prefix.Addr().Is4() {
		return "ipv4"
	}
	return "ipv6"
}

// ParseExport reads the result of Exec for an ExportCommand: 8001 is
// NotInTable, an empty 0000 is NotExported, a listed route is Exported. Any
// other error (9001 "No valid tables", a socket error, …) is returned as it
// is, never read as "not exported": a withdrawn route must be proven, not
// assumed.
//
// The command names one prefix exactly, so any route listed is a route for
// it; callers that want to guard against a reply to another command can
// compare ParseRoutes(r) with the prefix.
func ParseExport(r Reply, err error) (ExportState, error) {
	if err != nil {
		var be *Error
		if errors.As(err, &be) && be.Code == CodeNetworkNotFound {
			return NotInTable, nil
		}
		return ExportUnknown, err
	}
	if err := replyError(r); err != nil {
		if r.Code == CodeNetworkNotFound {
			return NotInTable, nil
		}
		return ExportUnknown, err
	}
	routes, err := ParseRoutes(r)
	if err != nil {
		return ExportUnknown, err
	}
	if len(routes) == 0 {
		return NotExported, nil
	}
	return Exported, nil
}
