package verify

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/internal/router"
)

// Bird runs BIRD commands. *bird.Conn satisfies it.
type Bird interface {
	// Exec sends one command and returns its whole reply. A reply that
	// ends with an error code returns a *bird.Error. Check calls it
	// sequentially, never concurrently.
	Exec(ctx context.Context, cmd string) (bird.Reply, error)
}

// Check asks BIRD about every VIP of in, over b, one command at a time:
// "show protocols all" once, then per VIP "show route <vip> table <t> all"
// for each table t that a Direct protocol's channel of the VIP's family
// imports into (stopping at the first that holds it from a direct protocol)
// and, per Established selected protocol with a channel of the VIP's family,
// "show route export <protocol>.<family> <vip>". That is 1 + V×(T+P)
// exchanges for V VIPs, T direct tables and P protocols per family (T is 1
// unless direct protocols import into several tables), each a few hundred
// bytes.
// Sequential exchanges on one connection are cheap enough that pipelining
// is not worth its risk (BIRD does not document it): 1,000 announced VIPs
// with one session took 61 ms against a real BIRD 2.0.12 (24 ms withdrawn),
// and BenchmarkCheck measures rhi's own share against a fake socket.
//
// The first error stops the check and is returned in Report.Err; ctx bounds
// the whole check and in.ExchangeTimeout each exchange.
func Check(ctx context.Context, b Bird, in router.Input) router.Report {
	for _, v := range in.VIPs {
		if !v.Prefix.IsValid() {
			return router.Report{Err: fmt.Errorf("invalid vip prefix %q", v.Prefix)}
		}
		if v.Expected != router.Present && v.Expected != router.Absent && v.Expected != router.Unmanaged {
			return router.Report{Err: fmt.Errorf("vip %q: unknown expectation %q", v.Prefix, v.Expected)}
		}
	}
	b = timed{b, in.ExchangeTimeout}
	const showProtocols = "show protocols all"
	reply, err := b.Exec(ctx, showProtocols)
	if err != nil {
		return router.Report{Err: fmt.Errorf("%q: %w", showProtocols, err)}
	}
	all, err := bird.ParseProtocolsAll(reply)
	if err != nil {
		return router.Report{Err: fmt.Errorf("%q: %w", showProtocols, err)}
	}

	var rep router.Report
	var selected []bird.Protocol // the BGP ones; the Established among them are asked about exports
	rep.Protocols, selected = selectProtocols(all, in.Protocols)
	if len(rep.Protocols) == 0 {
		rep.Problems = append(rep.Problems, "no BGP protocol in BIRD: nothing can announce the VIPs")
	}
	direct := directOf(all)
	for _, family := range familiesOf(in.VIPs) {
		if !direct.up[family] {
			// "IPv4 VIPs", for people, from BIRD's "ipv4".
			rep.Problems = append(rep.Problems, fmt.Sprintf("no direct protocol in BIRD imports %s routes: IP%s VIPs cannot be announced",
				family, strings.TrimPrefix(family, "ip")))
		}
	}

	if in.SiteID == 0 && in.SiteFromRouter && tiersChecked(in.VIPs) {
		id, err := RouterSiteID(ctx, b)
		if err != nil {
			return router.Report{Protocols: rep.Protocols, Err: fmt.Errorf("site identity: %w", err)}
		}
		in.SiteID = id
	}
	for _, v := range in.VIPs {
		vr, err := checkVIP(ctx, b, v, direct, selected, len(in.Protocols) > 0, in.SiteID)
		if err != nil {
			return router.Report{Protocols: rep.Protocols, Err: fmt.Errorf("vip %q: %w", v.Prefix, err)}
		}
		rep.VIPs = append(rep.VIPs, vr)
	}
	return rep
}

// timed bounds each exchange with its own deadline.
type timed struct {
	Bird
	timeout time.Duration
}

func (t timed) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	if t.timeout <= 0 {
		return t.Bird.Exec(ctx, cmd)
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.Bird.Exec(ctx, cmd)
}

// selectProtocols picks the protocols to check: the named ones in the
// given order, or every BGP protocol in BIRD's order. It returns their
// states and the BGP ones among them.
func selectProtocols(all []bird.Protocol, names []string) (states []router.ProtocolState, bgp []bird.Protocol) {
	add := func(p bird.Protocol) {
		ps := router.ProtocolState{Name: p.Name, State: p.State, BGPState: p.BGPState, Info: bgpInfo(p), Established: p.Established()}
		if !ps.Established {
			ps.Problem = "not Established"
		}
		bgp = append(bgp, p)
		states = append(states, ps)
	}
	if len(names) == 0 {
		for _, p := range all {
			if p.Proto == "BGP" {
				add(p)
			}
		}
		return states, bgp
	}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		i := slices.IndexFunc(all, func(p bird.Protocol) bool { return p.Name == name })
		switch {
		case i < 0:
			states = append(states, router.ProtocolState{Name: name, Problem: "no such protocol in BIRD"})
		case all[i].Proto != "BGP":
			states = append(states, router.ProtocolState{Name: name, State: all[i].State, Info: all[i].Info,
				Problem: fmt.Sprintf("not a BGP protocol (%s)", all[i].Proto)})
		default:
			add(all[i])
		}
	}
	return states, bgp
}

// bgpInfo drops the session state from the Info column, which BGP prints
// there first: what remains is the reason, e.g. "Socket: Connection refused".
func bgpInfo(p bird.Protocol) string {
	state, rest, _ := strings.Cut(p.Info, " ")
	if state == p.BGPState {
		return strings.TrimSpace(rest)
	}
	return p.Info
}

// directs is what BIRD's Direct protocols make of the VIPs.
type directs struct {
	// names of the Direct protocols: a route they made is the VIP seen
	// on the interface.
	names map[string]bool
	// tables holds per family ("ipv4", "ipv6") the tables that their
	// channels of that family import into, without repeats, in BIRD's
	// order. "" stands for the default tables, for a channel whose table
	// the reply did not name.
	tables map[string][]string
	// up holds the families for which a Direct protocol is up with an UP
	// channel.
	up map[string]bool
}

// directOf collects the Direct protocols of all and their tables.
func directOf(all []bird.Protocol) directs {
	d := directs{names: map[string]bool{}, tables: map[string][]string{}, up: map[string]bool{}}
	add := func(family, table string) {
		if !slices.Contains(d.tables[family], table) {
			d.tables[family] = append(d.tables[family], table)
		}
	}
	for _, p := range all {
		if p.Proto != "Direct" {
			continue
		}
		d.names[p.Name] = true
		if len(p.Channels) == 0 {
			// No channel listed: look where a channel with no table
			// option imports, the default tables, and take the
			// protocol's state for its channels'.
			for _, family := range []string{"ipv4", "ipv6"} {
				add(family, "")
				d.up[family] = d.up[family] || p.State == "up"
			}
		}
		for _, c := range p.Channels {
			add(c.Name, c.Table)
			d.up[c.Name] = d.up[c.Name] || p.State == "up" && c.State == "UP"
		}
	}
	return d
}

// familiesOf returns the families of vips, IPv4 first. Unmanaged
// addresses do not count: rhi need not announce them.
func familiesOf(vips []router.VIP) []string {
	var has4, has6 bool
	for _, v := range vips {
		switch {
		case v.Expected == router.Unmanaged:
		case v.Prefix.Addr().Is4():
			has4 = true
		default:
			has6 = true
		}
	}
	var out []string
	if has4 {
		out = append(out, "ipv4")
	}
	if has6 {
		out = append(out, "ipv6")
	}
	return out
}

// checkVIP asks BIRD about one VIP and judges it. protocols are the
// selected BGP protocols; named says they were named by the config rather
// than taken all from BIRD.
func checkVIP(ctx context.Context, b Bird, v router.VIP, direct directs, protocols []bird.Protocol, named bool, site uint32) (router.VIPReport, error) {
	family := bird.Family(v.Prefix)
	vr := router.VIPReport{Prefix: v.Prefix, Expected: v.Expected, OnInterface: v.OnInterface, DirectUp: direct.up[family], Exported: map[string]bool{}}
	if v.Expected == router.Present && v.Tier != "" {
		vr.Tier, vr.ExportedTier = v.Tier, map[string]string{}
	}

	for _, table := range direct.tables[family] {
		cmd := bird.TableRouteCommand(v.Prefix, table)
		if table == "" {
			cmd = bird.RouteCommand(v.Prefix)
		}
		reply, err := b.Exec(ctx, cmd)
		var be *bird.Error
		if err != nil && !(errors.As(err, &be) && be.Code == bird.CodeNetworkNotFound) {
			return vr, fmt.Errorf("%q: %w", cmd, err)
		}
		routes, err := routesOf(cmd, reply, v.Prefix)
		if err != nil {
			return vr, err
		}
		for _, rt := range routes {
			if table != "" && rt.Table != table {
				return vr, fmt.Errorf("%q: reply lists a route of table %q", cmd, rt.Table)
			}
			if direct.names[rt.Proto] {
				vr.InTable = true
			}
		}
		if vr.InTable {
			break // found: the other tables cannot change the verdict
		}
	}

	carried := false // a selected protocol has a channel of the family
	for _, p := range protocols {
		if _, ok := p.Channel(family); !ok && len(p.Channels) > 0 {
			continue // this session does not carry the VIP's family
		}
		carried = true
		if !p.Established() {
			continue // it exports nothing; reported with the protocols
		}
		cmd := exportCommand(p.Name, v)
		reply, err := b.Exec(ctx, cmd)
		state, err := bird.ParseExport(reply, err)
		if err != nil {
			return vr, fmt.Errorf("%q: %w", cmd, err)
		}
		if state == bird.Exported {
			// Guard against a reply meant for another question.
			if _, err := routesOf(cmd, reply, v.Prefix); err != nil {
				return vr, err
			}
			if vr.Tier != "" {
				t, err := exportedTier(reply, v.Prefix, site)
				if err != nil {
					return vr, fmt.Errorf("%q: %w", cmd, err)
				}
				vr.ExportedTier[p.Name] = t
			}
		}
		vr.Exported[p.Name] = state == bird.Exported
	}
	// "Exported to every session asked" is vacuous when none was asked.
	var noCarrier string
	switch {
	case !carried && named:
		noCarrier = "none of bird.protocols has an " + family + " channel"
	case !carried:
		noCarrier = "no BGP protocol in BIRD has an " + family + " channel"
	case len(vr.Exported) == 0:
		noCarrier = "no Established BGP session carries it"
	}
	vr.Agrees, vr.Problem = judge(vr, noCarrier)
	return vr, nil
}

// routesOf parses the routes of cmd's reply and checks that every one is
// for prefix: a route for anything else means the reply answers another
// question, and the stream cannot be trusted.
func routesOf(cmd string, reply bird.Reply, prefix netip.Prefix) ([]bird.Route, error) {
	routes, err := bird.ParseRoutes(reply)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", cmd, err)
	}
	for _, rt := range routes {
		if rt.Prefix != prefix.Masked() {
			return nil, fmt.Errorf("%q: reply lists %q", cmd, rt.Prefix)
		}
	}
	return routes, nil
}

// judge applies the agreement rule. Present: on the interface, in BIRD's
// table from a direct protocol, exported to every protocol asked, and at
// least one was asked: noCarrier, when set, says why none was. Absent:
// off the interface, exported to none, and not in BIRD's table either: a
// direct route for an address that left the interface means BIRD missed the
// change (netlink overflow) and will announce it as soon as a session comes
// up, so it is caught even while no session is Established. Unmanaged:
// exported to none (on the interface and in the table it may be, when
// BIRD's export filter keeps it in).
func judge(vr router.VIPReport, noCarrier string) (bool, string) {
	var problems, names []string
	switch vr.Expected {
	case router.Unmanaged:
		for name, exported := range vr.Exported {
			if exported {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			problems = append(problems, "announced without a health check: neither configured nor put there by rhi, exported to "+strings.Join(names, ", "))
		}
	case router.Present:
		if !vr.OnInterface {
			problems = append(problems, "not on the interface")
		}
		switch {
		case !vr.InTable && !vr.DirectUp:
			problems = append(problems, "not in BIRD's table: no direct protocol imports "+bird.Family(vr.Prefix)+" routes")
		case !vr.InTable:
			problems = append(problems, "not in BIRD's table from a direct protocol")
		}
		for name, exported := range vr.Exported {
			if !exported {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			problems = append(problems, "not exported to "+strings.Join(names, ", "))
		}
		problems = append(problems, tierProblems(vr)...)
		if noCarrier != "" {
			problems = append(problems, noCarrier)
		}
	case router.Absent:
		if vr.OnInterface {
			problems = append(problems, "still on the interface")
		}
		if vr.InTable {
			problems = append(problems, "still in BIRD's table")
		}
		for name, exported := range vr.Exported {
			if exported {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			problems = append(problems, "still exported to "+strings.Join(names, ", "))
		}
	}
	return len(problems) == 0, strings.Join(problems, "; ")
}

// tiersChecked reports whether some VIP's export tier is checked, and so
// its site identity too.
func tiersChecked(vips []router.VIP) bool {
	for _, v := range vips {
		if v.Expected == router.Present && v.Tier != "" {
			return true
		}
	}
	return false
}
